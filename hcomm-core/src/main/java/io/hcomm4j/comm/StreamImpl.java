package io.hcomm4j.comm;

import io.hcomm4j.CommAbortedException;
import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.HcommException;
import io.hcomm4j.Status;
import io.hcomm4j.Stream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A stream: a FIFO of ops run by one worker thread, each started when the previous one completed. The
 * worker waits like any blocking caller (it drives progress while it waits), so streams overlap each
 * other and the caller's own ops.
 */
final class StreamImpl implements Stream {
    private static final AtomicInteger IDS = new AtomicInteger();

    private final CommunicatorImpl comm;
    private final Session session;
    private final Priority priority;
    private final Thread worker;
    /** Its number in this JVM (1, 2 …): the flight record's stream column. */
    final int id;
    private final ArrayDeque<Task<?>> queue = new ArrayDeque<>();
    private long enqueued;
    private long completed;
    private Throwable firstFailure;
    private boolean closed;
    /** Ops up to this number (in enqueue order) had their failure reported by a synchronize that timed out (guarded by this). */
    private long reportedThrough;
    /** The op the worker runs now, or null (guarded by this). */
    private Task<?> running;

    /**
     * One op of the stream, run on the worker thread: {@code work} yields a point-to-point op's result, or
     * {@code collective} (then {@code work} is null) runs a collective, which gives up its turn when it is not run
     * because an earlier op failed.
     */
    private record Task<T>(Supplier<T> work, WorkerFuture<T> result, CollectiveCall collective, String op, int peer, int tag,
                           long bytes) {
        /** "send to rank 1 (tag 0, 64.0 MiB)", "allReduce #7 (4.0 KiB)": for a timeout message. */
        String text() {
            if (collective != null) return op + " #" + collective.seq + " (" + io.hcomm4j.Units.bytes(Math.max(0, bytes)) + ")";
            return op + (op.equals("send") ? " to rank " : " from ") + (peer == io.hcomm4j.Communicator.ANY_SOURCE ? "any rank" : peer)
                    + " (tag " + (tag == io.hcomm4j.Communicator.ANY_TAG ? "any" : String.valueOf(tag)) + ", "
                    + io.hcomm4j.Units.bytes(bytes) + ")";
        }
    }

    StreamImpl(CommunicatorImpl comm, Session session, Priority priority) {
        this.comm = comm;
        this.priority = priority;
        this.session = session;
        this.id = IDS.incrementAndGet();
        this.worker = Thread.ofPlatform().daemon().name("hcomm-stream-" + comm.rank() + "-" + id)
                .start(this::run);
    }

    @Override
    public CommFuture<Void> send(MemorySegment buf, int peer, int tag) {
        return enqueue("send", () -> comm.sendAsync(buf, peer, tag, priority).await(), null, peer, tag, buf.byteSize());
    }

    @Override
    public Priority priority() {
        return priority;
    }

    @Override
    public CommFuture<Status> recv(MemorySegment buf, int peer, int tag) {
        return enqueue("recv", () -> comm.recvAsync(buf, peer, tag).await(), null, peer, tag, buf.byteSize());
    }

    /**
     * Queues a collective whose arguments the communicator checked and whose sequence number it took; if the stream
     * does not run it (an earlier op failed) it gives up its turn.
     */
    CommFuture<Void> enqueueCollective(CollectiveCall call) {
        return enqueue(call.op.label(), null, call, -1, -1, call.bytes);
    }

    // the stream's collectives mirror the Stream API one for one (same shape on purpose), each through the communicator
    @Override
    public CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return comm.allReduce(send, recv, count, type, op, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> broadcast(MemorySegment buf, long count, DataType type, int root) {
        return comm.broadcast(buf, count, type, root, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        return comm.reduce(send, recv, count, type, op, root, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> allGather(MemorySegment send, MemorySegment recv, long count, DataType type) {
        return comm.allGather(send, recv, count, type, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        return comm.reduceScatter(send, recv, recvCount, type, op, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, io.hcomm4j.ReduceFunction f) {
        return comm.reductions().allReduce(send, recv, count, type, f, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, io.hcomm4j.ReduceFunction f, int root) {
        return comm.reductions().reduce(send, recv, count, type, f, root, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, io.hcomm4j.ReduceFunction f) {
        return comm.reductions().reduceScatter(send, recv, recvCount, type, f, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        return comm.allToAll(send, recv, count, type, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> barrier() {
        return comm.barrier(CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type) {
        return comm.blocks().allGatherV(send, recv, recvCounts, displs, type, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> reduceScatterV(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op) {
        return comm.reductions().reduceScatterV(send, recv, recvCounts, type, op, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        return comm.blocks().gather(send, recv, count, type, root, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type, int root) {
        return comm.blocks().gatherV(send, recv, recvCounts, displs, type, root, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        return comm.blocks().scatter(send, recv, count, type, root, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv, DataType type, int root) {
        return comm.blocks().scatterV(send, sendCounts, displs, recv, type, root, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv, long[] recvCounts,
                                      long[] recvDispls, DataType type) {
        return comm.blocks().allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> scan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return comm.scans().scan(send, recv, count, type, op, false, CollectiveFrame.Mode.on(this));
    }

    @Override
    public CommFuture<Void> exscan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return comm.scans().scan(send, recv, count, type, op, true, CollectiveFrame.Mode.on(this));
    }

    private <T> CommFuture<T> enqueue(String op, Supplier<T> work, CollectiveCall collective, int peer, int tag, long bytes) {
        WorkerFuture<T> f = new WorkerFuture<>(comm.timeoutNanos(), comm.rank(), "stream " + op);
        synchronized (this) {
            if (closed) throw new IllegalStateException("rank " + comm.rank() + ": the stream is closed");
            if (comm.isClosed()) throw new IllegalStateException("rank " + comm.rank() + ": the communicator is closed");
            queue.add(new Task<>(work, f, collective, op, peer, tag, bytes));
            enqueued++;
            notifyAll();
        }
        return f;
    }

    private void run() {
        while (true) {
            Task<?> task;
            Throwable earlier;
            synchronized (this) {
                while (queue.isEmpty() && !closed) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        // closing
                    }
                }
                if (queue.isEmpty()) return;
                task = queue.poll();
                running = task;
                earlier = firstFailure;
            }
            Throwable failure = earlier != null
                    ? new CommAbortedException("rank " + comm.rank() + ": not run: an earlier op on this stream failed: " + earlier.getMessage())
                    : runTask(task);
            if (earlier != null && task.collective() != null) {
                try {
                    task.collective().giveUpTurn();
                } catch (RuntimeException e) {
                    // nothing more to undo
                }
            }
            synchronized (this) {
                if (failure != null && firstFailure == null && completed + 1 > reportedThrough) firstFailure = failure;
                completed++;
                running = null;
                notifyAll();
            }
            if (failure != null) task.result().completeExceptionally(failure);
        }
    }

    private static <T> Throwable runTask(Task<T> task) {
        try {
            T value = null;
            if (task.collective() != null) task.collective().execute();
            else value = task.work().get();
            task.result().complete(value);
            return null;
        } catch (Throwable e) {
            return e;
        }
    }

    @Override
    public void synchronize() {
        long deadline = System.nanoTime() + comm.timeoutNanos();
        synchronized (this) {
            drain(deadline);
            Throwable f = firstFailure;
            firstFailure = null;
            if (f instanceof RuntimeException r) throw r;
            if (f instanceof Error e) throw e;
            if (f != null) throw new HcommException("stream op failed", f);
        }
    }

    /**
     * "rank 0: stream.synchronize: 1 op still pending after 5 min (HCOMM_TIMEOUT): send to rank 1 (tag 0, 64.0 MiB): rank
     * 0 waits in ...: a likely deadlock: ...": the op the stream runs, then what it waits for (lock held: the worker
     * cannot finish meanwhile, which keeps the list true).
     */
    private CommTimeoutException timedOut() {
        reportedThrough = enqueued; // this timeout reports them: their own failures, when they come, are not news
        long pending = enqueued - completed;
        StringBuilder sb = new StringBuilder("rank ").append(comm.rank()).append(": stream.synchronize: ").append(pending)
                .append(pending == 1 ? " op" : " ops").append(" still pending after ")
                .append(io.hcomm4j.Units.duration(comm.timeoutNanos())).append(" (HCOMM_TIMEOUT): ");
        Task<?> now = running;
        sb.append(now == null ? "none started yet" : now.text() + (pending > 1 ? " runs" : ""));
        if (pending > 1) sb.append(", then ").append(queue.size()).append(" queued");
        String why = session.explainWait(comm.timeoutNanos());
        if (why.isEmpty() && now != null && now.collective() == null) {
            // the worker's own wait for the op ended first: it explains, then withdraws the op (so it was not found
            // pending here); its explanation is the one to give
            long end = System.nanoTime() + BORROW_WAIT_NANOS;
            long done = completed;
            while (completed == done && System.nanoTime() - end < 0) {
                try {
                    wait(Math.max(1, (end - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            why = session.recentExplanation(BORROW_WAIT_NANOS);
        }
        return new CommTimeoutException(sb.append(why).toString());
    }

    /** How long a synchronize that timed out waits for the worker's explanation of the same wait. */
    private static final long BORROW_WAIT_NANOS = 10_000_000_000L;

    private void drain(long deadline) {
        while (completed < enqueued) {
            long left = deadline - System.nanoTime();
            if (left <= 0) throw timedOut();
            try {
                wait(Math.max(1, left / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new HcommException("rank " + comm.rank() + ": interrupted in stream.synchronize", e);
            }
        }
    }

    @Override
    public void close() {
        RuntimeException unreported = null;
        synchronized (this) {
            if (closed) return;
            try {
                if (!session.isClosed()) drain(System.nanoTime() + comm.timeoutNanos());
            } catch (RuntimeException e) {
                unreported = e;
            }
            Throwable f = firstFailure;
            firstFailure = null;
            if (unreported == null && f != null) {
                unreported = f instanceof RuntimeException r ? r
                        : new HcommException("rank " + comm.rank() + ": an op of the stream failed: " + f, f);
            }
            closed = true;
            notifyAll();
        }
        try {
            worker.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        session.unregister(this);
        // released first; then the failure no synchronize() reported, so that try-with-resources does not lose it
        if (unreported != null) throw unreported;
    }
}
