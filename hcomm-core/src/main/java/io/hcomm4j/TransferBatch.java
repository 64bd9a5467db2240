package io.hcomm4j;

import java.util.Optional;

/**
 * One batch of transfer ops to one remote engine ({@link TransferEngine#transfer}, {@link TransferEngine#transferAsync}):
 * its {@link #status()} goes from {@link TransferStatus#WAITING} to COMPLETED, TIMEOUT or FAILED, once. The ops of a
 * batch run concurrently, in no given order; batches do not wait for each other.
 *
 * <p>Thread-safe. Waiting ({@link #await()}, the {@link #future()}'s {@code await}) drives the engine's progress.
 */
public interface TransferBatch {
    /** The engine the batch goes to. */
    RemoteEngine remote();

    /** Number of ops in the batch. */
    int size();

    /** Bytes of all its ops together. */
    long bytesRequested();

    /**
     * Bytes moved so far: READs' bytes once they are in local memory, WRITEs' once they were handed to the remote (in its
     * segment on one host; over a connection, written out, and in the remote's segment by the time the batch is
     * COMPLETED). Equals {@link #bytesRequested()} when COMPLETED.
     */
    long bytesTransferred();

    /** Where the batch stands now. */
    TransferStatus status();

    /** Why the batch ended TIMEOUT or FAILED (naming the remote and the cause); empty while WAITING and when COMPLETED. */
    Optional<HcommException> error();

    /**
     * Waits until the batch is over (never past its deadline: then it is TIMEOUT) and returns its final status; never
     * throws for a failed batch.
     */
    TransferStatus await();

    /**
     * Completes (normally, whatever the status) with this batch once it is over. Its {@code await()} drives progress
     * like {@link #await()}; its callbacks run on the thread that ended the batch and must not block.
     */
    CommFuture<TransferBatch> future();
}
