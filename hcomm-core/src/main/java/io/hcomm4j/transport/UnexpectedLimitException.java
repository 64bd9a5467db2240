package io.hcomm4j.transport;

/**
 * A peer's message would take what this rank holds of messages nobody has received yet, from all peers together,
 * beyond {@code HCOMM_UNEXPECTED_TOTAL} (bytes) or {@code HCOMM_UNEXPECTED_COUNT} (messages and rendezvous requests):
 * the link to that peer fails (a protocol error: the peer is declared failed), the rest of the job goes on. Names the
 * peer, the communicator, what is held and the settings.
 */
final class UnexpectedLimitException extends PeerLink.ProtocolException {
    private static final long serialVersionUID = 1L;
    private final int peer;

    UnexpectedLimitException(int rank, int peer, long commId, long length, long bytes, int count, long maxBytes, int maxCount) {
        super("rank " + peer + " sent an unexpected message of " + length + " bytes (communicator 0x" + Long.toHexString(commId)
                + ") while rank " + rank + " holds " + count + " unexpected messages and rendezvous requests of " + bytes
                + " bytes from all peers: beyond " + (count + 1L > maxCount ? "HCOMM_UNEXPECTED_COUNT (" + maxCount + ")"
                : "HCOMM_UNEXPECTED_TOTAL (" + maxBytes + " bytes)") + "; are receives posted for what is sent?");
        this.peer = peer;
    }

    /** The rank whose message went beyond the bound. */
    int peer() {
        return peer;
    }
}
