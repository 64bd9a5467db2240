package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import java.util.concurrent.TimeUnit;

/** The future of an op that a worker thread (a stream's, or the collective thread) runs and completes. */
final class WorkerFuture<T> extends CommFuture<T> {
    private final long timeoutNanos;
    private final int rank;
    private final String op;

    WorkerFuture(long timeoutNanos, int rank, String op) {
        this.timeoutNanos = timeoutNanos;
        this.rank = rank;
        this.op = op;
    }

    @Override
    protected boolean awaitUntil(long deadlineNanos) {
        return parkUntilDone(deadlineNanos);
    }

    @Override
    protected long defaultDeadline() {
        return System.nanoTime() + timeoutNanos;
    }

    @Override
    protected CommTimeoutException timeoutException(long waitedNanos) {
        return new CommTimeoutException("rank " + rank + ": " + op + " did not complete within "
                + TimeUnit.NANOSECONDS.toMillis(waitedNanos) + " ms (HCOMM_TIMEOUT)");
    }
}
