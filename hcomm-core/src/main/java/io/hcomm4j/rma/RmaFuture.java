package io.hcomm4j.rma;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.SharedWait;

/**
 * The future of a one-sided op that waits for the target (a reply, a grant): completed by the progress engine that
 * reads the reply; a thread that awaits it drives that engine meanwhile.
 */
class RmaFuture<T> extends CommFuture<T> implements SharedWait {
    private final PeerTransport transport;
    private final long timeoutNanos;
    private final String what;
    /** World rank of the target whose answer completes this future, or -1. */
    private final int target;

    RmaFuture(PeerTransport transport, long timeoutNanos, String what, int target) {
        this.transport = transport;
        this.timeoutNanos = timeoutNanos;
        this.what = what;
        this.target = target;
    }

    @Override
    protected boolean awaitUntil(long deadlineNanos) {
        return isDone() || transport.awaitPolling(this, deadlineNanos);
    }

    @Override
    protected long defaultDeadline() {
        return System.nanoTime() + timeoutNanos;
    }

    @Override
    protected CommTimeoutException timeoutException(long waitedNanos, String limit) {
        return new CommTimeoutException(what + " did not complete within " + io.hcomm4j.Units.duration(waitedNanos) + " (" + limit + ")");
    }

    /** Done, or failed because the target did: a waiter never outlives its target, whatever path told of the failure. */
    @Override
    public boolean done() {
        if (isDone()) return true;
        if (target >= 0 && transport.failed(target)) {
            completeExceptionally(transport.failure(target, what));
            return true;
        }
        return false;
    }

    @Override
    public boolean arm() {
        return done();
    }

    @Override
    public void disarm() {
    }

    private static final RmaFuture<Void> DONE = new RmaFuture<>(null, 0, null, -1) {
        @Override
        public void obtrudeValue(Void value) {
            throw new UnsupportedOperationException("a shared completed future");
        }

        @Override
        public void obtrudeException(Throwable ex) {
            throw new UnsupportedOperationException("a shared completed future");
        }
    };

    static {
        DONE.complete(null);
    }

    /** The future of every direct op without a result: complete, shared (no allocation per op), not obtrudable. */
    static <T> RmaFuture<T> completedVoid() {
        @SuppressWarnings("unchecked")
        RmaFuture<T> d = (RmaFuture<T>) (RmaFuture<?>) DONE;
        return d;
    }

    /** A future that is already complete with {@code value} (a direct op). */
    static <T> RmaFuture<T> completed(T value) {
        RmaFuture<T> f = new RmaFuture<>(null, 0, null, -1);
        f.complete(value);
        return f;
    }
}
