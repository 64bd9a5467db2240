package io.hcomm4j;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The pending result of a communication op: a {@link CompletableFuture} that also drives the op's
 * progress while a thread waits on it (a bounded spin, then blocking), and whose {@link #await()}
 * throws the {@link HcommException} itself instead of a wrapper.
 *
 * <p>{@link #join()} and {@link #get()} wait up to the communicator's {@code HCOMM_TIMEOUT}, then fail
 * with {@link CommTimeoutException}.
 *
 * @param <T> result type ({@link Status} for receives, {@code Void} for sends)
 */
public abstract class CommFuture<T> extends CompletableFuture<T> {

    /** Only the library creates these. */
    protected CommFuture() {
    }

    /**
     * Waits until the op is complete or {@code deadlineNanos} (a {@link System#nanoTime()} value) passes,
     * helping its progress meanwhile.
     *
     * @return true if the op completed
     */
    protected abstract boolean awaitUntil(long deadlineNanos);

    /**
     * Parks until another thread completes this future or the deadline passes, without driving progress:
     * for futures completed by a worker (stream ops).
     *
     * @return true if the future is complete
     */
    protected final boolean parkUntilDone(long deadlineNanos) {
        try {
            long left = deadlineNanos - System.nanoTime();
            if (left > 0) super.get(left, TimeUnit.NANOSECONDS);
        } catch (TimeoutException | ExecutionException | CancellationException e) {
            // isDone() tells
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return isDone();
    }

    /** Deadline of a wait that names none: now plus the communicator's timeout. */
    protected abstract long defaultDeadline();

    /**
     * The exception for a wait that passed its deadline, naming the op and the peer; {@code limit} names the deadline:
     * {@link #DEFAULT_LIMIT} or {@link #CALLERS_LIMIT}.
     */
    protected abstract CommTimeoutException timeoutException(long waitedNanos, String limit);

    /** The deadline of a wait that names none. */
    protected static final String DEFAULT_LIMIT = "HCOMM_TIMEOUT";
    /** The deadline of {@link #await(java.time.Duration)}. */
    protected static final String CALLERS_LIMIT = "the timeout given to await";

    /**
     * Waits (up to {@code HCOMM_TIMEOUT}) and returns the result.
     *
     * @throws HcommException the op's own failure, unwrapped, or {@link CommTimeoutException}
     */
    public T await() {
        if (isDone()) return unwrapped(); // no clock reads for an op that is already complete (an eager send)
        long start = System.nanoTime();
        if (!awaitUntil(defaultDeadline())) throw timeoutException(System.nanoTime() - start, DEFAULT_LIMIT);
        return unwrapped();
    }

    /**
     * Waits up to {@code timeout} and returns the result.
     *
     * @throws HcommException the op's own failure, unwrapped, or {@link CommTimeoutException}
     */
    public T await(java.time.Duration timeout) {
        long start = System.nanoTime();
        if (!awaitUntil(start + timeout.toNanos())) throw timeoutException(System.nanoTime() - start, CALLERS_LIMIT);
        return unwrapped();
    }

    private T unwrapped() {
        try {
            return super.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof HcommException h) throw h;
            if (e.getCause() instanceof RuntimeException r) throw r;
            if (e.getCause() instanceof Error err) throw err;
            throw e;
        } catch (CancellationException e) {
            throw new CommAbortedException("op was cancelled");
        }
    }

    @Override
    public T join() {
        long start = System.nanoTime();
        if (!awaitUntil(defaultDeadline())) throw new CompletionException(timeoutException(System.nanoTime() - start, DEFAULT_LIMIT));
        return super.join();
    }

    @Override
    public T get() throws InterruptedException, ExecutionException {
        long start = System.nanoTime();
        if (!awaitUntil(defaultDeadline())) throw new ExecutionException(timeoutException(System.nanoTime() - start, DEFAULT_LIMIT));
        return super.get();
    }

    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        if (!awaitUntil(System.nanoTime() + unit.toNanos(timeout))) throw new TimeoutException();
        return super.get();
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
        return new CompletableFuture<>();
    }
}
