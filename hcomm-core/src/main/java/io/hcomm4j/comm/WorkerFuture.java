package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;

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

    /** What the op waits for now ("still waits for rank 2"), for a timeout message; null: nothing to add. */
    private volatile java.util.function.Supplier<String> waitingFor;

    /** Gives timeout messages what the op waits for at that moment. */
    void explainWith(java.util.function.Supplier<String> waitingFor) {
        this.waitingFor = waitingFor;
    }

    @Override
    protected CommTimeoutException timeoutException(long waitedNanos, String limit) {
        java.util.function.Supplier<String> w = waitingFor;
        String why = w == null ? null : w.get();
        return new CommTimeoutException("rank " + rank + ": " + op + " did not complete within "
                + io.hcomm4j.Units.duration(waitedNanos) + " (" + limit + ")" + (why == null ? "" : ": " + why));
    }
}
