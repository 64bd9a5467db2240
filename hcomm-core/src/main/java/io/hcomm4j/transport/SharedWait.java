package io.hcomm4j.transport;

/**
 * A condition in shared memory that a thread waits for through the transport's progress engine
 * ({@link PeerTransport#await(SharedWait, long)}): flags that same-host peers set with plain stores, for instance the
 * control words of a zero-copy collective. The engine spins on {@link #done()} for a while; before it blocks it calls
 * {@link #arm()}, which must announce the sleep where the peers look (a sleeping flag) and then check again, so that
 * a peer that changes the condition afterwards sees the flag and wakes this process with
 * {@link PeerTransport#wake(int)} (a doorbell byte on the pair's socket, which wakes the blocked selector).
 *
 * <p><b>Internal:</b> the contract between same-host collectives and the transport. Implementations must not
 * allocate in {@link #done()}: it runs in the spin loop.
 */
public interface SharedWait {
    /** True when the wait is over: the condition holds, or something (a failed peer, an abort) ends it otherwise. */
    boolean done();

    /**
     * The engine is about to block: set the sleeping flag the peers look at, fence, and return {@link #done()}
     * (true: do not block after all).
     */
    boolean arm();

    /** The engine woke up (or did not block): clear the sleeping flag. */
    void disarm();
}
