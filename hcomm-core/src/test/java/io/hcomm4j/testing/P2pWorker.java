package io.hcomm4j.testing;

import io.hcomm4j.CommAbortedException;
import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Status;
import io.hcomm4j.Stream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * One rank of the point-to-point test job (a separate JVM). Every check is on every element; a failure
 * throws, which exits the JVM non-zero with the reason on stderr. Scenario {@code collectives} is not point to point:
 * {@link CollectiveWorker#sequences} (seed 4242 + the number of ranks), in this job so that the ranks' JVMs start once.
 */
public final class P2pWorker {
    static final long[] SIZES = {0, 1, 4095, 4096, (1 << 20) + 7, 64L << 20};
    /**
     * The sizes of {@link #types}: {@link #SIZES} with the largest 4 MiB + 3 instead of 64 MiB. Still above every
     * threshold a heap payload meets (eager limit 64 KiB, the heap staging of 128 KiB, the shared-memory ring of 1 MiB,
     * the TCP chunk of up to 4 MiB); the 64 MiB message is {@link #sizes}'s (eleven heap arrays of 64 MiB per rank and
     * direction added time, not paths).
     */
    static final long[] TYPE_SIZES = {0, 1, 4095, 4096, (1 << 20) + 7, (4L << 20) + 3};

    public static void main(String[] args) throws Exception {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int rank = comm.rank();
            for (String scenario : args) {
                long t0 = System.nanoTime();
                switch (scenario) {
                    case "sizes" -> sizes(comm);
                    case "types" -> types(comm);
                    case "tags" -> tags(comm);
                    case "anysource" -> anySource(comm);
                    case "stream" -> stream(comm);
                    case "self" -> self(comm);
                    case "errors" -> errors(comm);
                    case "probe" -> probe(comm);
                    case "collectives" -> CollectiveWorker.sequences(comm, 4242 + comm.size());
                    default -> throw new IllegalArgumentException("unknown scenario " + scenario);
                }
                barrier(comm);
                System.out.printf("rank %d PASS %s (%d ms)%n", rank, scenario, (System.nanoTime() - t0) / 1_000_000);
            }
            Ranks.printTransports(hcomm);
            barrier(hcomm.world()); // nobody closes its connections before every rank has looked at them
        }
    }

    /** Keeps scenarios apart (their wildcard receives must not see the next scenario's messages). */
    static void barrier(Communicator comm) {
        byte[] b = new byte[1];
        if (comm.rank() == 0) {
            for (int p = 1; p < comm.size(); p++) comm.recv(b, p, 9999);
            for (int p = 1; p < comm.size(); p++) comm.send(b, p, 9998);
        } else {
            comm.send(b, 0, 9999);
            comm.recv(b, 0, 9998);
        }
    }

    /** The pattern of the messages from src with tag: {@link Engines}' word patterns, written and compared a word at a time. */
    static long seed(int src, int tag) {
        return src * 31L + tag * 1_000_003L;
    }

    /** The byte every test message from src with tag carries at index i. */
    static byte pattern(int src, int tag, long i) {
        return Engines.at(seed(src, tag), i);
    }

    static void fill(MemorySegment s, int src, int tag) {
        Engines.fill(s, 0, s.byteSize(), seed(src, tag), 0);
    }

    static void check(MemorySegment s, long n, int src, int tag, String what) {
        long i = Engines.mismatch(s, 0, n, seed(src, tag), 0);
        if (i >= 0) {
            throw new AssertionError(what + ": byte " + i + " of " + n + " is " + s.get(ValueLayout.JAVA_BYTE, i) + ", expected " + pattern(src, tag, i));
        }
    }

    enum Form { BLOCKING, ASYNC, STREAM }

    /**
     * Every size, off-heap, around the ring (send to next, receive from previous), each in all three forms but the
     * 64 MiB message, which takes one form per job (ASYNC with 2 ranks, STREAM with 4 over shared memory, BLOCKING with
     * 4 over TCP). The forms differ in how a call is made and waited for, which 1 MiB + 7 (above the eager limit and the
     * shared-memory ring) shows in each; what only 64 MiB reaches (many ring turns, TCP frames of 4 MiB) does not
     * depend on the form, and its two more exchanges took a third of the scenario's CPU time.
     */
    static void sizes(Communicator comm) {
        int n = comm.size(), rank = comm.rank(), next = (rank + 1) % n, prev = (rank - 1 + n) % n;
        Form largest = Form.values()[(n / 2 + ("tcp".equals(System.getenv("HCOMM_TRANSPORT")) ? 1 : 0)) % 3];
        try (Arena arena = Arena.ofShared(); Stream stream = comm.newStream()) {
            for (long size : SIZES) {
                MemorySegment out = arena.allocate(Math.max(1, size)).asSlice(0, size);
                MemorySegment in = arena.allocate(size + 16);
                for (Form form : Form.values()) {
                    if (size == SIZES[SIZES.length - 1] && form != largest) continue;
                    int tag = (int) (size % 1000) + form.ordinal();
                    fill(out, rank, tag);
                    in.fill((byte) 0x5A);
                    Status st = exchange(comm, stream, form, out, in, next, prev, tag);
                    expect(st, prev, tag, size, "sizes " + form + " " + size);
                    check(in, size, prev, tag, "sizes " + form + " " + size);
                    if (in.get(ValueLayout.JAVA_BYTE, size) != 0x5A) throw new AssertionError("wrote past the message end");
                }
            }
        }
    }

    static Status exchange(Communicator comm, Stream stream, Form form, MemorySegment out, MemorySegment in,
                           int next, int prev, int tag) {
        return switch (form) {
            case BLOCKING -> {
                // even ranks send first, odd ranks receive first: plain blocking calls, no deadlock on a ring
                if (comm.rank() % 2 == 0 && comm.size() % 2 == 0) {
                    comm.send(out, next, tag);
                    yield comm.recv(in, prev, tag);
                } else if (comm.size() % 2 == 0) {
                    Status st = comm.recv(in, prev, tag);
                    comm.send(out, next, tag);
                    yield st;
                } else {
                    CommFuture<Status> r = comm.recvAsync(in, prev, tag);
                    comm.send(out, next, tag);
                    yield r.await();
                }
            }
            case ASYNC -> {
                CommFuture<Status> r = comm.recvAsync(in, prev, tag);
                CommFuture<Void> s = comm.sendAsync(out, next, tag);
                s.join();
                yield r.join();
            }
            case STREAM -> {
                // a second stream receives so the ring cannot deadlock; synchronize waits for both
                try (Stream recvStream = comm.newStream()) {
                    CommFuture<Status> r = recvStream.recv(in, prev, tag);
                    stream.send(out, next, tag);
                    stream.synchronize();
                    recvStream.synchronize();
                    yield r.join();
                }
            }
        };
    }

    static void expect(Status st, int src, int tag, long bytes, String what) {
        if (st.source() != src || st.tag() != tag || st.bytes() != bytes) {
            throw new AssertionError(what + ": status " + st + ", expected source " + src + " tag " + tag + " bytes " + bytes);
        }
    }

    /** Heap arrays of every element type (each DataType's Java carrier), every size of {@link #TYPE_SIZES}, checked per element. */
    static void types(Communicator comm) {
        int n = comm.size(), rank = comm.rank(), next = (rank + 1) % n, prev = (rank - 1 + n) % n;
        for (DataType type : DataType.values()) {
            for (long bytes : TYPE_SIZES) {
                int count = (int) (bytes / type.byteSize());
                int tag = 100 + type.ordinal();
                Object out = newArray(type, count), in = newArray(type, count + 3);
                fillElements(out, type, rank, count);
                CommFuture<Status> r = switch (in) {
                    case byte[] a -> comm.recvAsync(a, prev, tag);
                    case short[] a -> comm.recvAsync(a, prev, tag);
                    case int[] a -> comm.recvAsync(a, prev, tag);
                    case long[] a -> comm.recvAsync(a, prev, tag);
                    case float[] a -> comm.recvAsync(a, prev, tag);
                    case double[] a -> comm.recvAsync(a, prev, tag);
                    default -> throw new IllegalStateException();
                };
                switch (out) {
                    case byte[] a -> comm.send(a, next, tag);
                    case short[] a -> comm.send(a, next, tag);
                    case int[] a -> comm.send(a, next, tag);
                    case long[] a -> comm.send(a, next, tag);
                    case float[] a -> comm.send(a, next, tag);
                    case double[] a -> comm.send(a, next, tag);
                    default -> throw new IllegalStateException();
                }
                Status st = r.await();
                expect(st, prev, tag, (long) count * type.byteSize(), "types " + type);
                int i = firstWrongElement(in, type, prev, count);
                if (i >= 0) {
                    throw new AssertionError("types " + type + " count " + count + ": element " + i + " is " + getElem(seg(in), type, i)
                            + ", expected " + value(prev, type, i));
                }
            }
        }
    }

    static Object newArray(DataType t, int count) {
        return switch (t) {
            case INT8, UINT8, BOOL -> new byte[count];
            case INT16, FLOAT16, BFLOAT16 -> new short[count];
            case INT32 -> new int[count];
            case INT64 -> new long[count];
            case FLOAT32 -> new float[count];
            case FLOAT64 -> new double[count];
        };
    }

    static MemorySegment seg(Object a) {
        return switch (a) {
            case byte[] x -> MemorySegment.ofArray(x);
            case short[] x -> MemorySegment.ofArray(x);
            case int[] x -> MemorySegment.ofArray(x);
            case long[] x -> MemorySegment.ofArray(x);
            case float[] x -> MemorySegment.ofArray(x);
            case double[] x -> MemorySegment.ofArray(x);
            default -> throw new IllegalStateException();
        };
    }

    /** A value per (rank, type, index), as the raw bits the element holds. */
    static long value(int rank, DataType t, int i) {
        long v = (long) i * 2654435761L + rank * 97L + t.ordinal();
        return switch (t) {
            case INT8, UINT8, BOOL -> (byte) v;
            case INT16, FLOAT16, BFLOAT16 -> (short) v;
            case INT32 -> (int) v;
            case INT64 -> v * 0x100000001L;
            case FLOAT32 -> Float.floatToRawIntBits((float) (v * 0.5));
            case FLOAT64 -> Double.doubleToRawLongBits(v * 0.25);
        };
    }

    /**
     * Sets elements {@code 0 .. count-1} of {@code a} (the Java carrier array of {@code t}) to {@code value(rank, t, i)}.
     * A loop per array type: element by element through a {@link MemorySegment} view with the type switched per
     * element, the 8 types' 9.5 MB took most of the scenario's seconds.
     */
    static void fillElements(Object a, DataType t, int rank, int count) {
        switch (a) {
            case byte[] x -> { for (int i = 0; i < count; i++) x[i] = (byte) value(rank, t, i); }
            case short[] x -> { for (int i = 0; i < count; i++) x[i] = (short) value(rank, t, i); }
            case int[] x -> { for (int i = 0; i < count; i++) x[i] = (int) value(rank, t, i); }
            case long[] x -> { for (int i = 0; i < count; i++) x[i] = value(rank, t, i); }
            case float[] x -> { for (int i = 0; i < count; i++) x[i] = Float.intBitsToFloat((int) value(rank, t, i)); }
            case double[] x -> { for (int i = 0; i < count; i++) x[i] = Double.longBitsToDouble(value(rank, t, i)); }
            default -> throw new IllegalStateException();
        }
    }

    /** The first of elements {@code 0 .. count-1} of {@code a} whose raw bits are not {@code value(rank, t, i)}, or -1. */
    static int firstWrongElement(Object a, DataType t, int rank, int count) {
        switch (a) {
            case byte[] x -> { for (int i = 0; i < count; i++) if (x[i] != (byte) value(rank, t, i)) return i; }
            case short[] x -> { for (int i = 0; i < count; i++) if (x[i] != (short) value(rank, t, i)) return i; }
            case int[] x -> { for (int i = 0; i < count; i++) if (x[i] != (int) value(rank, t, i)) return i; }
            case long[] x -> { for (int i = 0; i < count; i++) if (x[i] != value(rank, t, i)) return i; }
            case float[] x -> { for (int i = 0; i < count; i++) if (Float.floatToRawIntBits(x[i]) != (int) value(rank, t, i)) return i; }
            case double[] x -> { for (int i = 0; i < count; i++) if (Double.doubleToRawLongBits(x[i]) != value(rank, t, i)) return i; }
            default -> throw new IllegalStateException();
        }
        return -1;
    }

    static long getElem(MemorySegment s, DataType t, int i) {
        return switch (t) {
            case INT8, UINT8, BOOL -> s.getAtIndex(ValueLayout.JAVA_BYTE, i);
            case INT16, FLOAT16, BFLOAT16 -> s.getAtIndex(ValueLayout.JAVA_SHORT, i);
            case INT32 -> s.getAtIndex(ValueLayout.JAVA_INT, i);
            case INT64 -> s.getAtIndex(ValueLayout.JAVA_LONG, i);
            case FLOAT32 -> Float.floatToRawIntBits(s.getAtIndex(ValueLayout.JAVA_FLOAT, i));
            case FLOAT64 -> Double.doubleToRawLongBits(s.getAtIndex(ValueLayout.JAVA_DOUBLE, i));
        };
    }

    /**
     * Many messages on interleaved tags, eager and rendezvous mixed within a tag, received in a different
     * tag order than sent: within each tag they must arrive in send order (MPI non-overtaking).
     */
    static void tags(Communicator comm) {
        int n = comm.size(), rank = comm.rank(), next = (rank + 1) % n, prev = (rank - 1 + n) % n;
        int tags = 7, perTag = 30;
        Random rnd = new Random(42);
        long[] sizes = new long[tags * perTag];
        for (int i = 0; i < sizes.length; i++) sizes[i] = rnd.nextInt(4) == 0 ? 70_000 + rnd.nextInt(200_000) : 8 + rnd.nextInt(3000);
        try (Arena arena = Arena.ofShared()) {
            List<CommFuture<Status>> recvs = new ArrayList<>();
            List<MemorySegment> inBufs = new ArrayList<>();
            List<int[]> expected = new ArrayList<>();
            // post receives tag by tag, highest tag first
            for (int tag = tags - 1; tag >= 0; tag--) {
                for (int k = 0; k < perTag; k++) {
                    int msg = k * tags + tag;
                    MemorySegment in = arena.allocate(sizes[msg]);
                    inBufs.add(in);
                    expected.add(new int[] {tag, msg});
                    recvs.add(comm.recvAsync(in, prev, tag));
                }
            }
            // send round-robin over tags; message index encodes (k, tag)
            List<CommFuture<Void>> sends = new ArrayList<>();
            List<MemorySegment> keep = new ArrayList<>();
            for (int msg = 0; msg < sizes.length; msg++) {
                int tag = msg % tags;
                MemorySegment out = arena.allocate(sizes[msg]);
                fill(out, rank * 1000 + msg, tag);
                keep.add(out);
                sends.add(comm.sendAsync(out, next, tag));
            }
            for (CommFuture<Void> s : sends) s.await();
            for (int i = 0; i < recvs.size(); i++) {
                Status st = recvs.get(i).await();
                int tag = expected.get(i)[0], msg = expected.get(i)[1];
                expect(st, prev, tag, sizes[msg], "tags msg " + msg);
                check(inBufs.get(i), sizes[msg], prev * 1000 + msg, tag, "tags msg " + msg + " (order within tag " + tag + ")");
            }
        }
    }

    /**
     * Rank 0 receives one message from every rank with ANY_SOURCE (fixed tag), then one more from each rank
     * with ANY_TAG (fixed source); statuses name the real source, tag and size.
     */
    static void anySource(Communicator comm) {
        int n = comm.size(), rank = comm.rank();
        try (Arena arena = Arena.ofShared()) {
            if (rank == 0) {
                Set<Integer> seen = new HashSet<>();
                for (int i = 0; i < n - 1; i++) {
                    MemorySegment in = arena.allocate(200_000);
                    Status st = comm.recv(in, Communicator.ANY_SOURCE, 500);
                    int src = st.source();
                    if (src <= 0 || src >= n || !seen.add(src)) throw new AssertionError("anysource: unexpected source " + st);
                    long size = src % 2 == 0 ? 100 : 150_000;
                    expect(st, src, 500, size, "anysource");
                    check(in, size, src, 500, "anysource from " + src);
                }
                for (int src = 1; src < n; src++) {
                    MemorySegment in = arena.allocate(200_000);
                    Status st = comm.recv(in, src, Communicator.ANY_TAG);
                    long size = src % 2 == 0 ? 150_000 : 100;
                    expect(st, src, 600 + src, size, "anytag");
                    check(in, size, src, 600 + src, "anytag from " + src);
                }
            } else {
                long size = rank % 2 == 0 ? 100 : 150_000;
                MemorySegment out = arena.allocate(size);
                fill(out, rank, 500);
                comm.send(out, 0, 500);
                long size2 = rank % 2 == 0 ? 150_000 : 100;
                MemorySegment out2 = arena.allocate(size2);
                fill(out2, rank, 600 + rank);
                comm.send(out2, 0, 600 + rank);
            }
        }
    }

    /** FIFO order on one stream; a failed op fails the rest until synchronize reports it. */
    static void stream(Communicator comm) {
        int n = comm.size(), rank = comm.rank(), next = (rank + 1) % n, prev = (rank - 1 + n) % n;
        try (Arena arena = Arena.ofShared(); Stream s = comm.newStream(); Stream r = comm.newStream()) {
            int count = 50;
            List<MemorySegment> ins = new ArrayList<>();
            List<CommFuture<Status>> fs = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                MemorySegment in = arena.allocate(5000);
                ins.add(in);
                fs.add(r.recv(in, prev, 7)); // same tag: the stream order is the send order
            }
            for (int i = 0; i < count; i++) {
                MemorySegment out = arena.allocate(5000);
                fill(out, rank * 100 + i, 7);
                s.send(out, next, 7);
            }
            s.synchronize();
            r.synchronize();
            for (int i = 0; i < count; i++) {
                if (!fs.get(i).isDone()) throw new AssertionError("stream op " + i + " not done after synchronize");
                check(ins.get(i), 5000, prev * 100 + i, 7, "stream msg " + i);
            }
            // failure: a too-small receive fails; the op queued after it is not run; synchronize throws the first
            MemorySegment big = arena.allocate(10_000);
            fill(big, rank, 8);
            comm.send(big, next, 8);
            CommFuture<Status> tooSmall = r.recv(arena.allocate(100), prev, 8);
            CommFuture<Status> after = r.recv(arena.allocate(100), prev, 9);
            try {
                r.synchronize();
                throw new AssertionError("synchronize did not report the failed receive");
            } catch (io.hcomm4j.MessageTruncatedException e) {
                if (!e.getMessage().contains("smaller than the message")) throw new AssertionError("wrong failure: " + e);
                if (e.bufferBytes() != 100 || e.messageBytes() != big.byteSize()) throw new AssertionError("wrong sizes: " + e);
            }
            if (!tooSmall.isCompletedExceptionally()) throw new AssertionError("too-small receive did not fail");
            try {
                after.await();
                throw new AssertionError("the op after a failure ran");
            } catch (CommAbortedException expectedFailure) {
                // the stream did not run it
            }
            // the stream is usable again after synchronize reported the failure
            MemorySegment in = arena.allocate(64);
            MemorySegment out = arena.allocate(64);
            fill(out, rank, 10);
            CommFuture<Status> again = r.recv(in, prev, 10);
            s.send(out, next, 10);
            s.synchronize();
            r.synchronize();
            expect(again.join(), prev, 10, 64, "stream after failure");
            check(in, 64, prev, 10, "stream after failure");
        }
    }

    /** Messages to oneself, eager and rendezvous, posted before and after the send. */
    static void self(Communicator comm) {
        int rank = comm.rank();
        try (Arena arena = Arena.ofShared()) {
            for (long size : new long[] {0, 10, 100_000, 5_000_000}) {
                MemorySegment out = arena.allocate(Math.max(1, size)).asSlice(0, size);
                fill(out, rank, 3);
                MemorySegment in = arena.allocate(size + 1);
                CommFuture<Void> s = comm.sendAsync(out, rank, 3);
                Status st = comm.recv(in, rank, 3);
                s.await();
                expect(st, rank, 3, size, "self");
                check(in, size, rank, 3, "self " + size);
                CommFuture<Status> r = comm.recvAsync(in, rank, 4);
                fill(out, rank, 4);
                comm.sendAsync(out, rank, 4).await();
                expect(r.await(), rank, 4, size, "self posted first");
                check(in, size, rank, 4, "self posted first " + size);
            }
        }
    }

    /**
     * Variable-size messages received by probing first: blocking probe from a rank, iprobe polling, and
     * ANY_SOURCE probes at rank 0; the probed size allocates an exact buffer.
     */
    static void probe(Communicator comm) {
        int n = comm.size(), rank = comm.rank(), next = (rank + 1) % n, prev = (rank - 1 + n) % n;
        Random sizes = new Random(7);
        try (Arena arena = Arena.ofShared()) {
            List<CommFuture<Void>> sends = new ArrayList<>();
            int count = 20;
            long[] sent = new long[count];
            for (int i = 0; i < count; i++) {
                sent[i] = sizes.nextInt(3) == 0 ? 100_000 + sizes.nextInt(50_000) : sizes.nextInt(2000);
                MemorySegment out = arena.allocate(Math.max(1, sent[i])).asSlice(0, sent[i]);
                fill(out, rank * 100 + i, 20 + i % 3);
                sends.add(comm.sendAsync(out, next, 20 + i % 3));
            }
            for (int i = 0; i < count; i++) {
                int tag = 20 + i % 3;
                Status st;
                if (i % 2 == 0) {
                    st = comm.probe(prev, tag);
                } else {
                    java.util.Optional<Status> o;
                    while ((o = comm.iprobe(prev, Communicator.ANY_TAG)).isEmpty()) Thread.onSpinWait();
                    st = o.get();
                    if (comm.iprobe(prev, Communicator.ANY_TAG).orElseThrow().bytes() != st.bytes()) {
                        throw new AssertionError("probing twice gave different messages");
                    }
                }
                expect(st, prev, tag, sent[i], "probe " + i);
                MemorySegment in = arena.allocate(Math.max(1, st.bytes())).asSlice(0, st.bytes());
                expect(comm.recv(in, st.source(), st.tag()), prev, tag, sent[i], "recv after probe " + i);
                check(in, st.bytes(), prev * 100 + i, tag, "probe " + i);
            }
            for (CommFuture<Void> s : sends) s.await();
            for (int tag = 20; tag < 23; tag++) {
                if (comm.iprobe(prev, tag).isPresent()) throw new AssertionError("iprobe found tag " + tag + " after all were received");
            }
            // rank 0 probes ANY_SOURCE for one message from every other rank
            if (rank == 0) {
                Set<Integer> seen = new HashSet<>();
                for (int k = 1; k < n; k++) {
                    Status st = comm.probe(Communicator.ANY_SOURCE, 30);
                    if (!seen.add(st.source()) || st.bytes() != 1000L * st.source()) throw new AssertionError("probe any: " + st);
                    MemorySegment in = arena.allocate(st.bytes());
                    comm.recv(in, st.source(), 30);
                    check(in, st.bytes(), st.source(), 30, "probe any from " + st.source());
                }
            } else {
                MemorySegment out = arena.allocate(1000L * rank);
                fill(out, rank, 30);
                comm.send(out, 0, 30);
            }
        }
    }

    /** Bad arguments fail at once with a message naming the argument; the job goes on. */
    static void errors(Communicator comm) {
        int n = comm.size(), rank = comm.rank(), next = (rank + 1) % n, prev = (rank - 1 + n) % n;
        MemorySegment small = MemorySegment.ofArray(new byte[16]);
        expectThrows(() -> comm.send(small, n, 0), IllegalArgumentException.class, "peer " + n);
        expectThrows(() -> comm.send(small, -1, 0), IllegalArgumentException.class, "peer -1");
        expectThrows(() -> comm.recv(small, n + 5, 0), IllegalArgumentException.class, "peer " + (n + 5));
        expectThrows(() -> comm.send(small, next, -3), IllegalArgumentException.class, "tag -3");
        expectThrows(() -> comm.probe(n, 0), IllegalArgumentException.class, "peer " + n);
        expectThrows(() -> comm.iprobe(prev, -9), IllegalArgumentException.class, "tag -9");
        expectThrows(() -> comm.recv(small, prev, -7), IllegalArgumentException.class, "tag -7");
        expectThrows(() -> comm.send((MemorySegment) null, next, 0), NullPointerException.class, "buf");
        expectThrows(() -> comm.recv(small.asReadOnly(), prev, 0), IllegalArgumentException.class, "read-only");
        try (Arena confined = Arena.ofConfined()) {
            MemorySegment mine = confined.allocate(16);
            expectThrows(() -> comm.send(mine, next, 0), IllegalArgumentException.class, "confined");
            expectThrows(() -> comm.recv(mine, prev, 0), IllegalArgumentException.class, "confined");
        }
        Arena gone = Arena.ofShared();
        MemorySegment closed = gone.allocate(16);
        gone.close();
        expectThrows(() -> comm.send(closed, next, 0), IllegalArgumentException.class, "closed arena");
        // receive buffer smaller than the message, eager and rendezvous: the receiver gets the error, the sender completes
        for (int size : new int[] {1000, 300_000}) {
            byte[] out = new byte[size];
            CommFuture<Void> s = comm.sendAsync(out, next, 11);
            expectThrows(() -> comm.recv(new byte[size / 2], prev, 11), io.hcomm4j.MessageTruncatedException.class,
                    "buffer " + size / 2 + " bytes): buf is smaller than the message of " + size + " bytes from rank " + prev
                            + " (tag 11); receive into a buffer of at least " + size + " bytes (probe() tells the size first)");
            s.await();
        }
        // the link still works afterwards
        byte[] out = new byte[32];
        for (int i = 0; i < 32; i++) out[i] = (byte) (rank + i);
        byte[] in = new byte[32];
        CommFuture<Status> r = comm.recvAsync(in, prev, 12);
        comm.send(out, next, 12);
        r.await();
        for (int i = 0; i < 32; i++) if (in[i] != (byte) (prev + i)) throw new AssertionError("after errors: byte " + i);
    }

    static void expectThrows(Runnable r, Class<? extends Throwable> type, String fragment) {
        try {
            r.run();
        } catch (Throwable e) {
            if (!type.isInstance(e) || e.getMessage() == null || !e.getMessage().contains(fragment)) {
                throw new AssertionError("expected " + type.getSimpleName() + " mentioning '" + fragment + "', got " + e, e);
            }
            return;
        }
        throw new AssertionError("expected " + type.getSimpleName() + " mentioning '" + fragment + "', nothing thrown");
    }
}
