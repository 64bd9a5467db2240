package io.hcomm4j.comm;

import io.hcomm4j.Batch;
import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** A batch: receives posted first, then sends; one future over all of them. */
final class BatchImpl implements Batch {
    private record Op(boolean send, MemorySegment buf, int peer, int tag) {
    }

    private final CommunicatorImpl comm;
    /** See {@link Session#explainWait}. */
    private final java.util.function.LongFunction<String> explainWait;
    private final List<Op> ops = new ArrayList<>();
    private boolean started;

    BatchImpl(CommunicatorImpl comm, java.util.function.LongFunction<String> explainWait) {
        this.comm = comm;
        this.explainWait = explainWait;
    }

    @Override
    public Batch send(MemorySegment buf, int peer, int tag) {
        add(new Op(true, buf, peer, tag));
        return this;
    }

    @Override
    public Batch recv(MemorySegment buf, int peer, int tag) {
        if (peer == io.hcomm4j.Communicator.ANY_SOURCE) {
            throw new IllegalArgumentException("rank " + comm.rank() + ": batch recv: peer must be a rank, not ANY_SOURCE");
        }
        add(new Op(false, buf, peer, tag));
        return this;
    }

    private synchronized void add(Op op) {
        if (started) throw new IllegalStateException("rank " + comm.rank() + ": the batch was already started");
        ops.add(op);
    }

    @Override
    public synchronized CommFuture<Void> start() {
        if (started) throw new IllegalStateException("rank " + comm.rank() + ": the batch was already started");
        started = true;
        List<CommFuture<?>> parts = new ArrayList<>(ops.size());
        for (Op op : ops) if (!op.send()) parts.add(comm.recvAsync(op.buf(), op.peer(), op.tag()));
        for (Op op : ops) if (op.send()) parts.add(comm.sendAsync(op.buf(), op.peer(), op.tag()));
        return new BatchFuture(parts, comm.timeoutNanos(), comm.rank(), explainWait);
    }

    /** Completes when every part has; a waiter drives the parts' progress one after the other. */
    static final class BatchFuture extends CommFuture<Void> {
        private final List<CommFuture<?>> parts;
        private final long timeoutNanos;
        private final int rank;
        private final java.util.function.LongFunction<String> explainWait;

        BatchFuture(List<CommFuture<?>> parts, long timeoutNanos, int rank, java.util.function.LongFunction<String> explainWait) {
            this.parts = parts;
            this.timeoutNanos = timeoutNanos;
            this.rank = rank;
            this.explainWait = explainWait;
            CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> settle());
        }

        private void settle() {
            for (CommFuture<?> p : parts) {
                if (p.isCompletedExceptionally()) {
                    try {
                        p.join();
                    } catch (RuntimeException e) {
                        completeExceptionally(e.getCause() != null ? e.getCause() : e);
                        return;
                    }
                }
            }
            complete(null);
        }

        @Override
        protected boolean awaitUntil(long deadlineNanos) {
            for (CommFuture<?> p : parts) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) break;
                try {
                    p.get(left, TimeUnit.NANOSECONDS);
                } catch (ExecutionException | TimeoutException e) {
                    // settled below (a failure completes the batch; a timeout leaves it pending)
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            if (!isDone() && parts.stream().allMatch(CompletableFuture::isDone)) settle();
            return isDone();
        }

        @Override
        protected long defaultDeadline() {
            return System.nanoTime() + timeoutNanos;
        }

        @Override
        protected CommTimeoutException timeoutException(long waitedNanos, String limit) {
            long pending = parts.stream().filter(p -> !p.isDone()).count();
            return new CommTimeoutException("rank " + rank + ": batch of " + parts.size() + " ops: " + pending
                    + " still pending after " + io.hcomm4j.Units.duration(waitedNanos) + " (" + limit + ")"
                    + explainWait.apply(waitedNanos));
        }
    }
}
