package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.PeerFailedException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * RMA frames between two transports of this JVM (rank 0 the target, rank 1 the origin), over TCP, over shared memory,
 * and over a reliable TCP link whose connection a thread breaks every few milliseconds. Rank 0's {@link RmaHandler}
 * serves a byte "window": a PUT's payload lands in it at its offset, a GET is answered from inside {@code onRma} with a
 * reply frame carrying the window's bytes. Rank 1 sends a seeded random sequence of puts (0 bytes to 1 MiB, once
 * 5 MiB; from heap and off-heap memory, each buffer scribbled over once its send completed) and gets, keeps a shadow
 * of the window, and checks every reply byte, the window byte for byte, and that the target applied every frame once,
 * in the order sent. Frames whose handler throws (or gives a bad segment) cost only themselves: the link lives on.
 */
class RmaFrameTest {
    private static final long WINDOW_ID = 77;
    private static final int WINDOW_BYTES = 8 << 20;
    // kinds in flags bits 0-7, as the RMA layer will put them (the transport does not look at them)
    private static final int PUT = 1, GET = 2, REPLY = 3, THROW_TARGET = 4, BAD_TARGET = 5, THROW_ON_RMA = 6;

    /** Rank 0's handler: a window of {@link #WINDOW_BYTES}, heap or off-heap. */
    private static final class Target implements RmaHandler {
        final PeerTransport t;
        final MemorySegment window;
        /** Where a GET's argument (the i64 length) lands: one frame at a time, so one suffices. */
        final MemorySegment getArg = MemorySegment.ofArray(new long[1]);
        /** Op ids in the order onRma saw them (any thread holding the token: a synchronized list). */
        final List<Integer> applied = Collections.synchronizedList(new ArrayList<>());
        final ConcurrentLinkedQueue<SendRequest> replies = new ConcurrentLinkedQueue<>();
        final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        final AtomicInteger repliesFromOnRma = new AtomicInteger();
        private boolean inOnRma;

        Target(PeerTransport t, MemorySegment window) {
            this.t = t;
            this.window = window;
        }

        private void onTokenHolder(String what) {
            if (!t.progress.heldByCurrentThread()) errors.add(what + " ran on " + Thread.currentThread() + " without the token");
        }

        @Override
        public MemorySegment payloadTarget(int peer, int flags, long windowId, int opId, long offset, long length) {
            onTokenHolder("payloadTarget");
            if (peer != 1 || windowId != WINDOW_ID) errors.add("payloadTarget for peer " + peer + ", window " + windowId);
            return switch (flags & 0xff) {
                case PUT, THROW_ON_RMA -> window.asSlice(offset, length);
                case GET -> getArg;
                case THROW_TARGET -> throw new IllegalStateException("test: payloadTarget throws (op " + opId + ")");
                case BAD_TARGET -> window.asSlice(offset, length - 1); // one byte short: must not be written
                default -> {
                    errors.add("payloadTarget for kind " + (flags & 0xff));
                    yield null;
                }
            };
        }

        @Override
        public void onRma(int peer, int flags, long windowId, int opId, long offset, MemorySegment payload) {
            onTokenHolder("onRma");
            applied.add(opId);
            int kind = flags & 0xff;
            if (kind == THROW_TARGET || kind == BAD_TARGET) errors.add("onRma for dropped frame " + opId);
            if (kind == THROW_ON_RMA) throw new IllegalStateException("test: onRma throws (op " + opId + ")");
            if (kind == GET) {
                long len = payload.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                inOnRma = true;
                try {
                    // the reply goes from inside the callback, straight from the window (heap or off-heap)
                    replies.add(t.sendRma(peer, REPLY, windowId, opId, 0, window.asSlice(offset, len)));
                    if (inOnRma) repliesFromOnRma.incrementAndGet();
                } finally {
                    inOnRma = false;
                }
            }
        }
    }

    /** Rank 1's handler: replies land in the buffer registered for their op. */
    private static final class Origin implements RmaHandler {
        final PeerTransport t;
        final Map<Integer, MemorySegment> dest = new ConcurrentHashMap<>();
        final Map<Integer, CompletableFuture<Void>> done = new ConcurrentHashMap<>();
        final List<Integer> replyOrder = Collections.synchronizedList(new ArrayList<>());
        final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();

        Origin(PeerTransport t) {
            this.t = t;
        }

        @Override
        public MemorySegment payloadTarget(int peer, int flags, long windowId, int opId, long offset, long length) {
            if ((flags & 0xff) != REPLY || !t.progress.heldByCurrentThread()) errors.add("payloadTarget " + flags);
            return dest.get(opId);
        }

        @Override
        public void onRma(int peer, int flags, long windowId, int opId, long offset, MemorySegment payload) {
            if ((flags & 0xff) != REPLY || !t.progress.heldByCurrentThread()) errors.add("onRma " + flags);
            if (payload != dest.get(opId) && !(payload == null && dest.get(opId) == null)) errors.add("payload of op " + opId);
            replyOrder.add(opId);
            done.get(opId).complete(null);
        }
    }

    /** A get whose reply is awaited; {@code base}: its off-heap buffer, to give back (null: heap). */
    private record Get(int opId, MemorySegment dest, byte[] expect, MemorySegment base) {
    }

    private record Put(SendRequest req, MemorySegment src, MemorySegment base) {
    }

    /** Off-heap buffers of 1 MiB, reused once the transport is done with them (an allocation per op would pile up). */
    private static final class Buffers {
        static final long SIZE = 1 << 20;
        final Arena arena;
        final ArrayDeque<MemorySegment> free = new ArrayDeque<>();

        Buffers(Arena arena) {
            this.arena = arena;
        }

        MemorySegment take(long size) {
            if (size > SIZE) return arena.allocate(size);
            MemorySegment s = free.poll();
            return s != null ? s : arena.allocate(SIZE);
        }

        void give(MemorySegment base) {
            if (base != null && base.byteSize() == SIZE) free.add(base);
        }
    }

    private static PeerTransport[] job(String kind) throws Exception {
        return ReconnectTransportTest.job(2, kind.equals("shm") ? Path.of("/dev/shm") : null,
                kind.equals("reliable") ? 20 : 0, Duration.ofMillis(20));
    }

    @ParameterizedTest(name = "{0}, {1} window")
    @CsvSource({"tcp, native", "tcp, heap", "shm, native", "shm, heap", "reliable, heap"})
    void putsAndGetsLandByteForByteInOrder(String kind, String windowKind) throws Exception {
        PeerTransport[] ts = job(kind);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment window = windowKind.equals("heap") ? MemorySegment.ofArray(new byte[WINDOW_BYTES])
                    : arena.allocate(WINDOW_BYTES);
            Target target = new Target(ts[0], window);
            Origin origin = new Origin(ts[1]);
            ts[0].setRmaHandler(target);
            ts[1].setRmaHandler(origin);
            Result r = drive(ts, target, origin, arena, 20260601L + kind.hashCode() + windowKind.hashCode(), 300, null);
            assertThat(ts[1].transportTo(0)).isEqualTo(kind.equals("shm") ? "shm" : "tcp");
            System.out.printf("RmaFrameTest %s/%s: %d ops, %d MiB put, %d gets, %d handler failures%n", kind, windowKind,
                    r.ops, r.putBytes >> 20, r.gets, ts[0].rma.handlerFailures.get());
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    /**
     * A reliable TCP link broken every 5 ms from a random side while puts and gets stream: RMA frames ride the resend
     * log, so every one is applied exactly once and in order, and a put's buffer is free once its send completed (it is
     * scribbled over then: a resend after that would corrupt the window).
     */
    @Test
    void rmaFramesSurviveReconnects() throws Exception {
        PeerTransport[] ts = job("reliable");
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger drops = new AtomicInteger();
        try (Arena arena = Arena.ofShared()) {
            Target target = new Target(ts[0], arena.allocate(WINDOW_BYTES));
            Origin origin = new Origin(ts[1]);
            ts[0].setRmaHandler(target);
            ts[1].setRmaHandler(origin);
            ReconnectTransportTest.await(ts[1].sendRma(0, PUT, WINDOW_ID, -1, 0, null)); // connected first
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (target.applied.isEmpty() && System.nanoTime() < deadline) Thread.sleep(1);
            assertThat(target.applied).containsExactly(-1);
            target.applied.clear();
            Thread dropper = Thread.ofPlatform().name("dropper").start(() -> {
                Conduit.Drop[] hows = Conduit.Drop.values();
                while (!stop.get()) {
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                    int side = ThreadLocalRandom.current().nextInt(2);
                    if (ts[side].drop(1 - side, hows[ThreadLocalRandom.current().nextInt(hows.length)])) drops.incrementAndGet();
                }
            });
            Result r;
            try {
                r = drive(ts, target, origin, arena, 4242L, 500, stop);
            } finally {
                stop.set(true);
                dropper.join();
            }
            assertThat(drops.get()).as("drops").isGreaterThanOrEqualTo(5);
            assertThat(ts[0].reconnects() + ts[1].reconnects()).isGreaterThanOrEqualTo(drops.get());
            assertThat(ts[0].host.duplicatesDropped.get() + ts[1].host.duplicatesDropped.get()).isZero();
            System.out.printf("RmaFrameTest reconnects: %d ops, %d MiB put, %d drops, reconnects %d/%d, frames sent again %d/%d%n",
                    r.ops, r.putBytes >> 20, drops.get(), ts[0].reconnects(), ts[1].reconnects(),
                    ts[0].host.framesResent.get(), ts[1].host.framesResent.get());
        } finally {
            stop.set(true);
            for (PeerTransport t : ts) t.close();
        }
    }

    private record Result(int ops, long putBytes, int gets) {
    }

    /**
     * Rank 1 sends {@code ops} random frames to rank 0 and checks everything (see the class comment). Puts pipeline (up
     * to 8 in flight); gets pipeline among themselves, and the next put waits for their replies (a reply is sent from
     * the window without a copy, so a later put must not land before it is out). {@code stop}, if given, is set once
     * the stream is sent.
     */
    private static Result drive(PeerTransport[] ts, Target target, Origin origin, Arena arena, long seed, int ops,
                                AtomicBoolean stop) throws Exception {
        Random rnd = new Random(seed);
        Buffers buffers = new Buffers(arena);
        byte[] shadow = new byte[WINDOW_BYTES];
        target.window.copyFrom(MemorySegment.ofArray(shadow));
        ArrayDeque<Put> puts = new ArrayDeque<>();
        List<Get> gets = new ArrayList<>();
        List<Integer> expectApplied = new ArrayList<>();
        List<Integer> expectReplies = new ArrayList<>();
        int bigAt = ops / 3, failures = 0, getCount = 0;
        long putBytes = 0;
        for (int op = 0; op < ops; op++) {
            int dice = rnd.nextInt(100);
            int kind = op == bigAt ? PUT : dice < 62 ? PUT : dice < 92 ? GET : dice < 94 ? THROW_TARGET : dice < 96 ? BAD_TARGET
                    : THROW_ON_RMA;
            long size = op == bigAt ? (5 << 20) + 3 : size(rnd);
            if (kind == BAD_TARGET) size = Math.max(1, size);
            long offset = rnd.nextLong(WINDOW_BYTES - size + 1);
            // flags: the kind, and bits the transport must carry untouched
            int flags = kind | (rnd.nextInt(1 << 23) << 8);
            if (kind == GET) {
                MemorySegment base = rnd.nextBoolean() ? null : buffers.take(size);
                MemorySegment dest = base == null ? MemorySegment.ofArray(new byte[(int) size]) : base.asSlice(0, size);
                dest.fill((byte) 0x11);
                if (size > 0) origin.dest.put(op, dest);
                origin.done.put(op, new CompletableFuture<>());
                byte[] expect = new byte[(int) size];
                System.arraycopy(shadow, (int) offset, expect, 0, (int) size);
                gets.add(new Get(op, dest, expect, base));
                MemorySegment arg = MemorySegment.ofArray(new long[] {size});
                ReconnectTransportTest.await(ts[1].sendRma(0, flags, WINDOW_ID, op, offset, arg));
                expectReplies.add(op);
                getCount++;
            } else {
                completeGets(gets, origin, buffers); // a put lands after every reply that reads its bytes is out
                byte[] data = new byte[(int) size];
                rnd.nextBytes(data);
                MemorySegment base = rnd.nextBoolean() ? null : buffers.take(size);
                MemorySegment src = base == null ? MemorySegment.ofArray(data) : base.asSlice(0, size);
                if (base != null) src.copyFrom(MemorySegment.ofArray(data));
                if (kind == PUT || kind == THROW_ON_RMA) {
                    System.arraycopy(data, 0, shadow, (int) offset, (int) size); // landed (onRma may throw after)
                    putBytes += size;
                }
                if (kind != PUT) failures++;
                puts.add(new Put(ts[1].sendRma(0, flags, WINDOW_ID, op, offset, rnd.nextInt(8) == 0 && size == 0 ? null : src), src, base));
                if (puts.size() > 8) reuse(puts.poll(), buffers);
            }
            if (kind != THROW_TARGET && kind != BAD_TARGET) expectApplied.add(op);
        }
        completeGets(gets, origin, buffers);
        while (!puts.isEmpty()) reuse(puts.poll(), buffers);
        // a last get of the whole window: every put before it was applied
        int last = ops;
        MemorySegment all = arena.allocate(WINDOW_BYTES);
        origin.dest.put(last, all);
        origin.done.put(last, new CompletableFuture<>());
        ReconnectTransportTest.await(ts[1].sendRma(0, GET, WINDOW_ID, last, 0, MemorySegment.ofArray(new long[] {WINDOW_BYTES})));
        origin.done.get(last).get(60, TimeUnit.SECONDS);
        if (stop != null) stop.set(true);
        expectApplied.add(last);
        expectReplies.add(last);
        assertThat(all.mismatch(MemorySegment.ofArray(shadow))).as("the whole window, as read back").isEqualTo(-1);
        assertThat(target.window.mismatch(MemorySegment.ofArray(shadow))).as("the whole window, in place").isEqualTo(-1);
        assertThat(target.applied).as("frames applied once each, in the order sent").containsExactlyElementsOf(expectApplied);
        assertThat(origin.replyOrder).as("replies, in order").containsExactlyElementsOf(expectReplies);
        assertThat(target.repliesFromOnRma.get()).isEqualTo(getCount + 1);
        for (SendRequest reply : target.replies) ReconnectTransportTest.await(reply); // all sent, none failed
        for (SendRequest reply : target.replies) assertThat(reply.isCompletedExceptionally()).isFalse();
        assertThat(target.errors).isEmpty();
        assertThat(origin.errors).isEmpty();
        assertThat(ts[0].rma.handlerFailures.get()).as("handler failures (each logged, none fatal)").isEqualTo(failures);
        assertThat(ts[0].failedRanks()).isEmpty();
        assertThat(ts[1].failedRanks()).isEmpty();
        return new Result(ops, putBytes, getCount);
    }

    /** 0 to 1 MiB: empty, tiny (inline), around the 64 KiB copy bound, large. */
    private static long size(Random rnd) {
        return switch (rnd.nextInt(6)) {
            case 0 -> rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(257);
            case 1 -> rnd.nextInt(8192);
            case 2 -> Frame.RMA_COPY_MAX - 64 + rnd.nextInt(128);
            default -> rnd.nextInt((1 << 20) + 1);
        };
    }

    /** Waits for the put, then scribbles over its buffer: the transport must be done with it. */
    private static void reuse(Put p, Buffers buffers) {
        ReconnectTransportTest.await(p.req);
        assertThat(p.req.isCompletedExceptionally()).isFalse();
        p.src.fill((byte) 0xA5);
        buffers.give(p.base);
    }

    private static void completeGets(List<Get> gets, Origin origin, Buffers buffers) throws Exception {
        for (Get g : gets) {
            origin.done.get(g.opId).get(60, TimeUnit.SECONDS);
            assertThat(g.dest.mismatch(MemorySegment.ofArray(g.expect))).as("reply of get %d", g.opId).isEqualTo(-1);
            buffers.give(g.base);
        }
        gets.clear();
    }

    @ParameterizedTest
    @CsvSource({"tcp", "shm"})
    void withoutAHandlerFramesAreDroppedAndTheLinkLives(String kind) throws Exception {
        PeerTransport[] ts = job(kind);
        try (Arena arena = Arena.ofShared()) {
            for (int i = 0; i < 5; i++) {
                ReconnectTransportTest.await(ts[1].sendRma(0, PUT, WINDOW_ID, i, 0, MemorySegment.ofArray(new byte[i * 50_000])));
            }
            // messages still flow both ways, after the dropped frames
            MemorySegment a = arena.allocate(64), b = arena.allocate(64);
            ReconnectTransportTest.fill(a, 9);
            var rr = ts[0].recv(0, 1, 3, b);
            ReconnectTransportTest.await(ts[1].send(0, 0, 3, a));
            ReconnectTransportTest.await(rr);
            assertThat(b.mismatch(a)).isEqualTo(-1);
            assertThat(ts[0].rma.droppedNoHandler.get()).isEqualTo(5);
            assertThat(ts[0].failedRanks()).isEmpty();
            assertThat(ts[1].failedRanks()).isEmpty();
            // once a handler is set, frames reach it
            MemorySegment window = MemorySegment.ofArray(new byte[1024]);
            Target target = new Target(ts[0], window);
            ts[0].setRmaHandler(target);
            ReconnectTransportTest.await(ts[1].sendRma(0, PUT, WINDOW_ID, 7, 10, MemorySegment.ofArray(new byte[] {1, 2, 3})));
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (target.applied.isEmpty() && System.nanoTime() < deadline) Thread.sleep(1);
            assertThat(target.applied).containsExactly(7);
            assertThat(window.asSlice(10, 3).toArray(ValueLayout.JAVA_BYTE)).containsExactly(1, 2, 3);
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    @Test
    void badArgumentsAFailedPeerAndAnOversizedHeader() throws Exception {
        PeerTransport[] ts = job("tcp");
        try (Arena confined = Arena.ofConfined()) {
            assertThatThrownBy(() -> ts[1].sendRma(1, PUT, 1, 1, 0, null)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("to rank 1");
            assertThatThrownBy(() -> ts[1].sendRma(2, PUT, 1, 1, 0, null)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> ts[1].sendRma(0, PUT, 1, 1, 0, confined.allocate(8)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("confined");
            assertThatThrownBy(() -> ts[1].sendRma(0, PUT, 1, 1, 0, MemorySegment.ofArray(new byte[(int) PeerTransport.MAX_RMA_PAYLOAD + 1])))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most");
            // a header announcing more than the limit is a protocol error of its sender
            ReconnectTransportTest.await(ts[1].sendRma(0, PUT, 1, 1, 0, null)); // connected
            assertThat(ts[1].links()[0].sendFrame(Frame.RMA, PUT, 1, 2, PeerTransport.MAX_RMA_PAYLOAD + 1, 0, null, null)).isTrue();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (ts[0].failedRanks().isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
            assertThat(ts[0].failedRanks()).containsExactly(1);
            assertThat(ts[0].failureReason(1)).contains("protocol error").contains("RMA frame of");
            // a send to a failed peer fails with PeerFailedException
            SendRequest s = ts[0].sendRma(1, PUT, 1, 3, 0, MemorySegment.ofArray(new byte[100]));
            assertThatThrownBy(() -> s.await(Duration.ofSeconds(10))).isInstanceOf(PeerFailedException.class);
            while (ts[1].failedRanks().isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
            SendRequest s1 = ts[1].sendRma(0, PUT, 1, 4, 0, null);
            assertThatThrownBy(() -> s1.await(Duration.ofSeconds(10))).isInstanceOf(PeerFailedException.class);
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }
}
