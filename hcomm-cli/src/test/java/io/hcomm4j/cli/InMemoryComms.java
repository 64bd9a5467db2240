package io.hcomm4j.cli;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.Communicator;
import io.hcomm4j.Status;
import io.hcomm4j.Stream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Communicators of {@code n} ranks inside one JVM (one thread per rank), to test measurement code
 * without the core's transport. Sends copy eagerly and complete at once; receives match by source and tag
 * in send order. {@link #bytesSent()} counts the payload moved.
 */
final class InMemoryComms {
    private final Object lock = new Object();
    private final List<Deque<Message>> unexpected = new ArrayList<>();
    private final List<Deque<PostedRecv>> posted = new ArrayList<>();
    private final AtomicLong bytesSent = new AtomicLong();
    private final List<Communicator> comms = new ArrayList<>();

    private record Message(int source, int tag, byte[] data) {
    }

    private record PostedRecv(int source, int tag, MemorySegment buf, Future<Status> future) {
        boolean matches(Message m) {
            return (source == Communicator.ANY_SOURCE || source == m.source()) && (tag == Communicator.ANY_TAG || tag == m.tag());
        }
    }

    InMemoryComms(int n) {
        for (int r = 0; r < n; r++) {
            unexpected.add(new ArrayDeque<>());
            posted.add(new ArrayDeque<>());
            comms.add(new Comm(r, n));
        }
    }

    Communicator rank(int r) {
        return comms.get(r);
    }

    long bytesSent() {
        return bytesSent.get();
    }

    private void deliver(int dest, Message m) {
        PostedRecv match = null;
        synchronized (lock) {
            for (Iterator<PostedRecv> it = posted.get(dest).iterator(); it.hasNext(); ) {
                PostedRecv p = it.next();
                if (p.matches(m)) {
                    it.remove();
                    match = p;
                    break;
                }
            }
            if (match == null) unexpected.get(dest).add(m);
        }
        if (match != null) complete(match, m);
    }

    private Future<Status> post(int me, PostedRecv recv) {
        Message match = null;
        synchronized (lock) {
            for (Iterator<Message> it = unexpected.get(me).iterator(); it.hasNext(); ) {
                Message m = it.next();
                if (recv.matches(m)) {
                    it.remove();
                    match = m;
                    break;
                }
            }
            if (match == null) posted.get(me).add(recv);
        }
        if (match != null) complete(recv, match);
        return recv.future();
    }

    private static void complete(PostedRecv recv, Message m) {
        if (m.data().length > recv.buf().byteSize()) {
            recv.future().completeExceptionally(new IllegalStateException("message of " + m.data().length
                    + " bytes does not fit a buffer of " + recv.buf().byteSize()));
            return;
        }
        MemorySegment.copy(MemorySegment.ofArray(m.data()), 0, recv.buf(), 0, m.data().length);
        recv.future().complete(new Status(m.source(), m.tag(), m.data().length));
    }

    /** A future that waits on itself. */
    static final class Future<T> extends CommFuture<T> {
        @Override
        protected boolean awaitUntil(long deadlineNanos) {
            while (!isDone()) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) return false;
                LockSupport.parkNanos(Math.min(left, 20_000));
            }
            return true;
        }

        @Override
        protected long defaultDeadline() {
            return System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        }

        @Override
        protected CommTimeoutException timeoutException(long waitedNanos) {
            return new CommTimeoutException("in-memory op waited " + waitedNanos / 1_000_000 + " ms");
        }
    }

    private final class Comm implements Communicator {
        private final int rank;
        private final int size;

        Comm(int rank, int size) {
            this.rank = rank;
            this.size = size;
        }

        @Override
        public int rank() {
            return rank;
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public CommFuture<Void> sendAsync(MemorySegment buf, int peer, int tag) {
            byte[] copy = buf.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            bytesSent.addAndGet(copy.length);
            deliver(peer, new Message(rank, tag, copy));
            Future<Void> done = new Future<>();
            done.complete(null);
            return done;
        }

        @Override
        public CommFuture<Status> recvAsync(MemorySegment buf, int peer, int tag) {
            return post(rank, new PostedRecv(peer, tag, buf, new Future<>()));
        }

        @Override
        public Stream newStream() {
            throw new UnsupportedOperationException("no streams in memory");
        }

        @Override
        public boolean isClosed() {
            return false;
        }

        @Override
        public void close() {
        }
    }
}
