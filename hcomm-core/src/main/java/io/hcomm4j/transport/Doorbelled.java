package io.hcomm4j.transport;

/**
 * A conduit whose bytes do not travel through its socket ({@link ShmConduit}, {@link UcxConduit}): the socket, registered
 * with the progress engine's selector, carries at most doorbell bytes and, by its end of stream, the peer's death.
 */
interface Doorbelled {
    /** The socket is readable: doorbell bytes to drain, or the end of the peer's stream. */
    void onDoorbell();
}
