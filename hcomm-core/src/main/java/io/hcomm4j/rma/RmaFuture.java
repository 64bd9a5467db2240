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

    /** The flight record this op ends in (null: none, or ended there already) and its ticket. */
    private volatile io.hcomm4j.monitor.OpTrace trace;
    private long ticket;

    /** Ends the op's flight record when the future completes, or now if it has (once, whichever comes second). */
    void recordIn(io.hcomm4j.monitor.OpTrace t, long ticket) {
        if (ticket < 0) return;
        this.ticket = ticket;
        trace = t;
        if (isDone()) traceEnded();
    }

    private void traceEnded() {
        io.hcomm4j.monitor.OpTrace t;
        synchronized (this) {
            t = trace;
            trace = null;
        }
        if (t == null) return;
        Throwable failure = null;
        if (isCompletedExceptionally()) {
            try {
                join();
            } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException e) {
                failure = e.getCause() != null ? e.getCause() : e;
            }
        }
        t.ended(ticket, null, target < 0 ? null : transport.transportTo(target), target < 0 ? 0 : 1, failure);
    }

    @Override
    public boolean complete(T value) {
        boolean done = super.complete(value);
        if (trace != null) traceEnded();
        return done;
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        boolean done = super.completeExceptionally(ex);
        if (trace != null) traceEnded();
        return done;
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
