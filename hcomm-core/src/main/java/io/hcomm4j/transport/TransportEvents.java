package io.hcomm4j.transport;

/**
 * What the transport tells the layer above. Every method is called without any transport lock held, on a transport
 * thread (the poller, the watchdog, or a connecting thread): it must not block for long.
 */
public interface TransportEvents {
    /** Nothing to tell anybody. */
    TransportEvents NONE = new TransportEvents() { };

    /** World rank {@code rank} failed (once per rank); {@code why} says how this rank learned it. */
    default void peerFailed(int rank, String why) { }

    /**
     * World rank {@code rank} closed its session in order (it said BYE, then its connection ended) while this rank's
     * session was open; once per rank. Not a failure: nobody else is told, and the ops already running are left to end
     * by themselves (what the peer sent before its BYE is delivered), but the peer is gone.
     */
    default void peerLeft(int rank) { }

    /** World rank {@code by} declared this rank failed (this rank was silent longer than its heartbeat timeout). */
    default void declaredFailed(int by, String why) { }

    /** World rank {@code from} aborted communicator {@code commId}. */
    default void abortNotice(long commId, int from) { }

    /** World rank {@code from} has an op stuck waiting for this rank and asks for this rank's state. */
    default void statusRequested(int from) { }

    /**
     * Words for a timeout message: why this rank's point-to-point waits do not progress (what the ranks they wait for
     * are doing, a likely deadlock); "" if nothing is known. Called on the thread whose wait ended; it may take seconds.
     */
    default String explainWait() {
        return "";
    }

    /** A point-to-point op of this rank timed out ({@code timeout}: the exception its caller gets). */
    default void timedOut(Throwable timeout) { }

    /** The watchdog's period (every few hundred ms at most), on the watchdog thread. */
    default void tick(long nowNanos) { }
}
