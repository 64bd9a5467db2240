package io.hcomm4j.rma;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.SharedWait;

/**
 * The future of a one-sided op that waits for the target (a reply, a grant): completed by the progress engine that
 * reads the reply; a thread that awaits it drives that engine meanwhile.
 */
final class RmaFuture<T> extends CommFuture<T> implements SharedWait {
    private final PeerTransport transport;
    private final long timeoutNanos;
    private final String what;

    RmaFuture(PeerTransport transport, long timeoutNanos, String what) {
        this.transport = transport;
        this.timeoutNanos = timeoutNanos;
        this.what = what;
    }

    @Override
    protected boolean awaitUntil(long deadlineNanos) {
        return isDone() || transport.await(this, deadlineNanos);
    }

    @Override
    protected long defaultDeadline() {
        return System.nanoTime() + timeoutNanos;
    }

    @Override
    protected CommTimeoutException timeoutException(long waitedNanos) {
        return new CommTimeoutException(what + " did not complete within " + waitedNanos / 1_000_000 + " ms (HCOMM_TIMEOUT)");
    }

    @Override
    public boolean done() {
        return isDone();
    }

    @Override
    public boolean arm() {
        return isDone();
    }

    @Override
    public void disarm() {
    }

    /** A future that is already complete with {@code value} (a direct op). */
    static <T> RmaFuture<T> completed(T value) {
        RmaFuture<T> f = new RmaFuture<>(null, 0, null);
        f.complete(value);
        return f;
    }
}
