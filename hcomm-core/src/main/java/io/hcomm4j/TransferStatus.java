package io.hcomm4j;

/**
 * Where a {@link TransferBatch} stands. A batch starts {@link #WAITING} and ends in exactly one of the other three;
 * the end state never changes.
 */
public enum TransferStatus {
    /** Issued, not finished: some of its bytes are still on their way. */
    WAITING,
    /** Every op of the batch is done: each WRITE's bytes are in the remote segment, each READ's in the local one. */
    COMPLETED,
    /**
     * The batch did not finish by its deadline (the timeout given to the transfer, else {@code HCOMM_TIMEOUT}); the
     * remote may still be alive, and some of its ops may have landed, in part or whole. What was under way goes on
     * landing: a WRITE's bytes may still reach the remote segment, and a READ's reply that was arriving may still fill
     * its local memory; replies that come later are dropped.
     */
    TIMEOUT,
    /**
     * The batch cannot finish: the remote engine failed (killed, unreachable) or left, this engine closed, or the remote
     * refused an op (its segment was unregistered meanwhile); {@link TransferBatch#error()} says which. Some of its ops
     * may have landed.
     */
    FAILED;

    /** True for COMPLETED, TIMEOUT and FAILED: the batch is over. */
    public boolean isFinal() {
        return this != WAITING;
    }
}
