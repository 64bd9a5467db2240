package io.hcomm4j.transport;

/**
 * A conduit whose bytes do not travel through its socket ({@link ShmConduit}, {@link UcxConduit}): the socket, registered
 * with the progress engine's selector, carries at most doorbell bytes and, by its end of stream, the peer's death.
 */
interface Doorbelled {
    /** The socket is readable: doorbell bytes to drain, or the end of the peer's stream. */
    void onDoorbell();

    /** Reads what {@code socket} holds into {@code drain} (dropped); true if its stream ended or it was reset. */
    static boolean drainedToEnd(java.nio.channels.SocketChannel socket, java.nio.ByteBuffer drain) {
        try {
            int n;
            do {
                drain.clear();
                n = socket.read(drain);
            } while (n > 0);
            return n < 0;
        } catch (java.io.IOException e) {
            return true; // reset: the peer died with bytes unread
        }
    }
}
