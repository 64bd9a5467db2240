package io.hcomm4j.rma;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import io.hcomm4j.RemoteEngine;
import io.hcomm4j.TransferBatch;
import io.hcomm4j.TransferStatus;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.SharedWait;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One batch of a transfer engine: the parts still due (each frame sent, each reply awaited, the direct copies, and one
 * for the issuing itself, released when every part was issued), the bytes moved, and the one change of status from
 * WAITING to COMPLETED (the last part done), FAILED or TIMEOUT (whichever comes first). Parts are done on any thread:
 * the caller's, the progress engine's (replies, sends written out), a copying thread; the watchdog's tick times out
 * the batches nobody waits for.
 */
final class EngineBatch implements TransferBatch {
    private final EngineImpl engine;
    private final PeerTransport transport;
    private final RemoteEngine remote;
    private final int size;
    private final long requested;
    /** {@link System#nanoTime()} by which the batch is over; and the timeout it came from (for the message). */
    final long deadline;
    private final long timeoutNanos;
    private final AtomicInteger parts = new AtomicInteger(1);
    private final AtomicLong moved = new AtomicLong();
    private final AtomicReference<TransferStatus> status = new AtomicReference<>(TransferStatus.WAITING);
    private volatile HcommException error;
    /** Op ids of the replies this batch awaits (removed from the engine when the batch ends early). */
    private final List<Integer> awaited = new ArrayList<>();
    private final Future future;

    EngineBatch(EngineImpl engine, PeerTransport transport, RemoteEngine remote, int size, long requested, long timeoutNanos) {
        this.engine = engine;
        this.transport = transport;
        this.remote = remote;
        this.size = size;
        this.requested = requested;
        this.timeoutNanos = timeoutNanos;
        this.deadline = System.nanoTime() + timeoutNanos;
        this.future = new Future();
    }

    int slot() {
        return remote.id();
    }

    /** {@code n} more parts are due. */
    void add(int n) {
        parts.addAndGet(n);
    }

    /** A part is done; the last one completes the batch. */
    void partDone() {
        if (parts.decrementAndGet() == 0) finish(TransferStatus.COMPLETED, null);
    }

    void moved(long bytes) {
        moved.addAndGet(bytes);
    }

    /** The batch awaits the reply of op {@code opId}. */
    void awaits(int opId) {
        synchronized (awaited) {
            awaited.add(opId);
        }
        if (status.get() != TransferStatus.WAITING) engine.ended(this, List.of(opId)); // it ended meanwhile
    }

    /** Ends the batch FAILED with {@code e}, unless it is over already. */
    void fail(HcommException e) {
        finish(TransferStatus.FAILED, e);
    }

    /** Ends the batch TIMEOUT, unless it is over already. */
    void timeOut() {
        finish(TransferStatus.TIMEOUT, new CommTimeoutException("engine '" + engine.name() + "': a batch of " + size + " ops ("
                + requested + " bytes) to engine '" + remote.name() + "' did not finish within " + timeoutNanos / 1_000_000
                + " ms; " + moved.get() + " bytes moved"));
    }

    private void finish(TransferStatus end, HcommException why) {
        if (status.get() != TransferStatus.WAITING) return;
        synchronized (this) {
            if (status.get() != TransferStatus.WAITING) return;
            error = why; // written before the status: a reader that sees the status sees the error
            status.set(end);
        }
        List<Integer> ids;
        synchronized (awaited) {
            ids = List.copyOf(awaited);
        }
        engine.ended(this, ids);
        future.complete(this);
        // a waiter blocked in the progress engine looks again (the end may come from another thread); nobody waits for a
        // blocking transfer whose copies ended it on the caller's own thread, and a wakeup costs the poller a round
        if (future.awaited) transport.wakeLocal();
    }

    @Override
    public RemoteEngine remote() {
        return remote;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public long bytesRequested() {
        return requested;
    }

    @Override
    public long bytesTransferred() {
        return moved.get();
    }

    @Override
    public TransferStatus status() {
        return status.get();
    }

    @Override
    public Optional<HcommException> error() {
        return status.get() == TransferStatus.WAITING ? Optional.empty() : Optional.ofNullable(error);
    }

    @Override
    public TransferStatus await() {
        future.awaitUntil(deadline);
        return status.get();
    }

    @Override
    public CommFuture<TransferBatch> future() {
        return future;
    }

    @Override
    public String toString() {
        return "TransferBatch[" + size + " ops to " + remote.name() + ", " + moved.get() + "/" + requested + " bytes, " + status.get() + "]";
    }

    /** Completes with the batch when it is over; waiting drives the engine's progress, and ends the batch at its deadline. */
    private final class Future extends CommFuture<TransferBatch> implements SharedWait {
        /** A thread waits (or waited) in the progress engine for this batch: its end must wake it. */
        volatile boolean awaited;

        @Override
        protected boolean awaitUntil(long deadlineNanos) {
            if (isDone()) return true;
            awaited = true; // before the engine looks at done(): an end after that look sees it, and wakes the engine
            if (isDone()) return true;
            long until = deadlineNanos - deadline < 0 ? deadlineNanos : deadline;
            if (!transport.await(this, until) && System.nanoTime() - deadline >= 0) timeOut();
            return isDone();
        }

        @Override
        protected long defaultDeadline() {
            return deadline;
        }

        @Override
        protected CommTimeoutException timeoutException(long waitedNanos, String limit) {
            return new CommTimeoutException("engine '" + engine.name() + "': waited " + io.hcomm4j.Units.duration(waitedNanos)
                    + " (" + limit + ") for " + EngineBatch.this);
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
    }
}
