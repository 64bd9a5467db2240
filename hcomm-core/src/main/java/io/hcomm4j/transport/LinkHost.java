package io.hcomm4j.transport;

import java.lang.foreign.MemorySegment;

/**
 * Everything a {@link PeerLink} asks of the transport it belongs to: what to do with the frames it reads, and what to
 * do when its connection goes. The link owns its byte stream; the transport owns matching, the protocol above the
 * frames, failures and reconnects. {@link TransportLinkHost} is the only implementation, so these calls stay monomorphic
 * on the per-message path.
 */
interface LinkHost {
    int rank();

    int worldSize();

    /** Eager bytes (with {@link Frame#EAGER_OVERHEAD} each) this rank buffers per peer before it gives credit back. */
    long unexpectedLimit();

    Progress progress();

    /** The session closes: new connections say BYE at once, failures are not evidence. */
    boolean closing();

    /** Links are no longer kept alive: nothing is re-established. */
    boolean linksClosing();

    /** Reconnect attempts for a lost connection (for the log). */
    int retryMax();

    /** A resend log of this transport's bounds ({@code HCOMM_RESEND_LOG_FRAMES}, {@code HCOMM_RESEND_LOG_BYTES}). */
    ResendLog newResendLog();

    /** Another rank declared this one failed. */
    boolean isDeclaredFailed();

    /** World rank {@code p} is known to have failed. */
    boolean isDead(int p);

    // ---------------------------------------------------------------------------------- frames arriving

    /** An EAGER header arrived: the link must be told where its payload goes ({@link PeerLink#expectPayload}). */
    void onEager(PeerLink l, long commId, int tag, long length, int flags) throws PeerLink.ProtocolException;

    /** An unexpected eager payload is complete in {@code data}. */
    void onUnexpectedComplete(PeerLink l, long commId, int tag, byte[] data, int flags);

    void onRts(PeerLink l, long commId, int tag, long length, long msgId, int flags) throws PeerLink.ProtocolException;

    /** The CTS for {@code s} came: its data goes now. */
    void sendData(PeerLink l, SendRequest s, long msgId);

    void onDataRef(PeerLink l, long msgId, long fileSeq, long offset, long length) throws PeerLink.ProtocolException;

    void onDataDone(PeerLink l, long msgId, int flags) throws PeerLink.ProtocolException;

    /** A FAILED notice: rank {@code p} failed, or (p == this rank) this rank was declared failed. */
    void onFailedNotice(PeerLink from, int p, int flags);

    void onAbortNotice(PeerLink from, long commId);

    void onStatusRequest(PeerLink from);

    /**
     * An RMA header with {@code length > 0} payload bytes arrived: the segment of exactly {@code length} bytes they go
     * to, or null to read and drop them (no handler, or the handler failed: the host logged it).
     */
    MemorySegment rmaTarget(PeerLink l, int flags, long windowId, int opId, long offset, long length);

    /** An RMA frame is complete: its payload is in the segment {@link #rmaTarget} gave (null: the frame had none). */
    void onRma(PeerLink l, int flags, long windowId, int opId, long offset, MemorySegment payload);

    // ---------------------------------------------------------------------------------- connection life

    /** The link failed for good ({@code wasConnected}: it had a connection, so this is evidence against the peer). */
    void linkFailed(PeerLink l, Exception cause);

    /** A rail ({@link Rails}) failed: its chunks go over the peer's other links; the peer itself is fine. */
    void railLost(PeerLink rail, Exception cause);

    /** The link lost its connection and is RECONNECTING: re-establish it. */
    void reconnect(PeerLink l);

    /** Closes a conduit that is no longer the link's; its rings are unmapped once nobody can touch them. */
    void retire(Conduit old);

    /** Unmaps the link's retired rings (progress token and the link's tx lock held). */
    void releaseRetired(PeerLink l);

    /** A frame received before came again and was dropped. */
    void countDuplicate();

    /** A connection was re-established and {@code frames} frames ({@code bytes} bytes) were sent again on it. */
    void countResumed(long frames, long bytes);
}
