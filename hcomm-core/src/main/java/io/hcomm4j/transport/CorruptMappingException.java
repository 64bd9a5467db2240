package io.hcomm4j.transport;

/**
 * A peer of this host wrote what no correct peer writes into the pair's shared mapping: a ring index that goes
 * backwards or beyond the ring, a slot count beyond what was written. Only the link to that peer fails (as for any
 * protocol error: the peer is declared failed, the other links and communicators go on); the copies never see the bad
 * value. Names the peer, the ring and the value.
 */
final class CorruptMappingException extends PeerLink.ProtocolException {
    private static final long serialVersionUID = 1L;
    private final int peer;

    CorruptMappingException(int rank, int peer, String what) {
        super("rank " + peer + " corrupted the shared-memory mapping it shares with rank " + rank + ": " + what);
        this.peer = peer;
    }

    /** The rank whose mapping it is. */
    int peer() {
        return peer;
    }
}
