package io.hcomm4j;

/**
 * A message arrived that is larger than the buffer its receive gave (MPI's {@code MPI_ERR_TRUNCATE}): the receive fails
 * and nothing of the message is written; the sender's send completes. Fix it on the receiving side with a buffer as large
 * as the largest message (or {@link Communicator#probe} first to learn the size), or send less.
 */
public class MessageTruncatedException extends HcommException {
    private static final long serialVersionUID = 1L;

    private final long messageBytes;
    private final long bufferBytes;

    /**
     * @param message      what failed: the receive, the sizes, the peer and the tag
     * @param messageBytes the size of the message that arrived
     * @param bufferBytes  the size of the receive's buffer
     */
    public MessageTruncatedException(String message, long messageBytes, long bufferBytes) {
        super(message);
        this.messageBytes = messageBytes;
        this.bufferBytes = bufferBytes;
    }

    /** The size of the message that arrived, in bytes. */
    public long messageBytes() {
        return messageBytes;
    }

    /** The size of the receive's buffer, in bytes. */
    public long bufferBytes() {
        return bufferBytes;
    }
}
