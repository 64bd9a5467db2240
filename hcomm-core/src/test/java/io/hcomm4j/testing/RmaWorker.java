package io.hcomm4j.testing;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.LockType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Window;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Random;

/**
 * One rank of the one-sided test job (a separate JVM). The first argument says how windows are made: {@code alloc}
 * (allocateWindow: same-host members reach each other's memory directly) or {@code create} (createWindow over memory
 * outside the pool: every access goes through the target's progress engine), or several of them joined by {@code +}
 * ({@code alloc+create}: every scenario with the one kind, then every scenario with the next, in one job). A passed
 * scenario prints {@code rank <r> PASS <kind> <scenario>}. Every check covers every element; a failure throws, which
 * exits the JVM non-zero with the reason on stderr.
 */
public final class RmaWorker {
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static Arena arena = Arena.ofShared();
    private static boolean create;

    public static void main(String[] args) throws Exception {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int rank = comm.rank();
            boolean ucx = "ucx".equals(System.getenv("HCOMM_TRANSPORT"));
            boolean tcp = ucx || "tcp".equals(System.getenv("HCOMM_TRANSPORT")); // UCX here: over its TCP or a ring's speed
            for (String kind : args[0].split("\\+")) {
                if (!kind.equals("alloc") && !kind.equals("create")) throw new IllegalArgumentException("unknown window kind " + kind);
                create = kind.equals("create");
                for (int i = 1; i < args.length; i++) {
                    String scenario = args[i];
                    long t0 = System.nanoTime();
                    switch (scenario) {
                        // the 4 x 100 000 on the direct (alloc) path and over TCP (64 in flight); through the rings 4 x 20 000
                        // direct atomics in shared memory are cheap: many; through a progress engine or TCP each op is a
                        // round trip, and fewer still contend as hard (CI time)
                        case "counter" -> counter(comm, tcp ? 20_000 : create ? 5_000 : 100_000, tcp ? 64 : create ? 16 : 1);
                        case "spinlock" -> spinLock(comm, tcp || create ? 100 : 300);
                        case "fence" -> randomUnderFence(comm, 40);
                        case "locks" -> randomUnderLocks(comm, 40);
                        case "floatsum" -> floatSum(comm);
                        case "types" -> types(comm);
                        case "signal" -> signal(comm);
                        case "sleeper" -> sleepingTarget(comm);
                        case "large" -> large(comm);
                        case "errors" -> errors(comm);
                        default -> throw new IllegalArgumentException("unknown scenario " + scenario);
                    }
                    comm.barrier();
                    System.out.printf("rank %d PASS %s %s (%d ms)%n", rank, kind, scenario, (System.nanoTime() - t0) / 1_000_000);
                }
            }
            Ranks.printTransports(hcomm);
            if (ucx) System.out.printf("rank %d UCX ONE-SIDED OPS %d%n", rank, io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(comm)[2]);
            comm.barrier();
        }
    }

    static Window window(Communicator comm, long bytes) {
        if (!create) return comm.allocateWindow(bytes);
        return comm.createWindow(arena.allocate(Math.max(bytes, 8), 8).asSlice(0, bytes).fill((byte) 0));
    }

    /**
     * Every rank adds 1 to rank 0's counter n times, with up to {@code depth} fetchAndOps in flight; the counter ends at
     * exactly size * n, and the old values the ops return, over all ranks, are 0 .. size * n - 1 each exactly once (no
     * two ops saw the same value: each was atomic). Over TCP the ops are pipelined so that the 4 x 100 000 takes
     * seconds on a loaded machine, not minutes of round trips.
     */
    static void counter(Communicator comm, int n, int depth) {
        try (Window w = window(comm, 64)) {
            long[] seen = new long[n];
            @SuppressWarnings("unchecked")
            io.hcomm4j.CommFuture<Long>[] inFlight = new io.hcomm4j.CommFuture[depth];
            w.lockAll();
            for (int i = 0; i < n; i++) {
                int slot = i % depth;
                if (i >= depth) seen[i - depth] = inFlight[slot].await();
                inFlight[slot] = w.fetchAndOpAsync(1, 0, 8, DataType.INT64, ReduceOp.SUM);
            }
            for (int i = Math.max(0, n - depth); i < n; i++) seen[i] = inFlight[i % depth].await();
            w.unlockAll();
            w.fence();
            long total = w.fetchAndOp(0, 0, 8, DataType.INT64, ReduceOp.NO_OP);
            long expected = (long) comm.size() * n;
            expect(total == expected, "counter is " + total + ", expected " + expected);
            if (comm.rank() == 0) expect(w.segment().get(LONG, 8) == total, "rank 0's own view differs");
            long[] all = new long[(int) expected];
            comm.allGather(MemorySegment.ofArray(seen), MemorySegment.ofArray(all), n, DataType.INT64);
            java.util.BitSet hit = new java.util.BitSet((int) expected);
            for (int i = 0; i < all.length; i++) {
                long v = all[i];
                expect(v >= 0 && v < expected, "rank " + i / n + "'s op " + i % n + " returned " + v + ", outside [0, " + expected + ")");
                expect(!hit.get((int) v), "old value " + v + " was returned twice (second time to rank " + i / n + ", op " + i % n + ")");
                hit.set((int) v);
            }
        }
    }

    /**
     * A spin lock built on compareAndSwap at rank 0 guards a plain (not atomic) get-add-put of a counter there: no
     * update may be lost. INT32 lock word, INT64 counter.
     */
    static void spinLock(Communicator comm, int n) {
        try (Window w = window(comm, 64)) {
            w.lockAll();
            MemorySegment v = arena.allocate(8);
            int me = comm.rank() + 1;
            for (int i = 0; i < n; i++) {
                int spins = 0;
                while (w.compareAndSwap(0, me, 0, 0, DataType.INT32) != 0) {
                    if (++spins % 64 == 0) Thread.yield();
                }
                w.get(v, 0, 16);
                w.flush(0);
                v.set(LONG, 0, v.get(LONG, 0) + 1);
                w.put(v, 0, 16);
                w.flush(0);
                long was = w.compareAndSwap(me, 0, 0, 0, DataType.INT32);
                expect(was == me, "lock word was " + was + " while held by " + me);
            }
            w.unlockAll();
            w.fence();
            if (comm.rank() == 0) {
                long total = w.segment().get(LONG, 16);
                expect(total == (long) comm.size() * n, "spin-locked counter is " + total + ", expected " + (long) comm.size() * n);
            }
        }
    }

    /**
     * Seeded random puts, gets and accumulates between fences, checked against a sequential model that every rank
     * computes for everyone: in an epoch each rank puts only into its own slice of each target's block (so puts never
     * conflict) and accumulates (INT64 SUM, any order gives the same) into a shared slice; gets read slices nobody
     * writes in that epoch. After each fence every rank checks its whole block against the model.
     */
    static void randomUnderFence(Communicator comm, int epochs) {
        int n = comm.size();
        int slice = 512; // longs per rank slice
        long bytes = (long) (n + 1) * slice * 8;
        long[][] model = new long[n][(n + 1) * slice];
        try (Window w = window(comm, bytes)) {
            w.fence();
            for (int e = 0; e < epochs; e++) {
                long[][] before = new long[n][];
                for (int t = 0; t < n; t++) before[t] = model[t].clone();
                for (int r = 0; r < n; r++) {
                    Random rnd = new Random(e * 7919L + r);
                    int ops = 1 + rnd.nextInt(12);
                    for (int k = 0; k < ops; k++) {
                        int t = rnd.nextInt(n);
                        int kind = rnd.nextInt(3);
                        int at = rnd.nextInt(slice);
                        int len = 1 + rnd.nextInt(slice - at);
                        long base = rnd.nextLong();
                        boolean mine = r == comm.rank();
                        switch (kind) {
                            case 0 -> { // put into r's slice of t
                                int from = r * slice + at;
                                for (int i = 0; i < len; i++) model[t][from + i] = base + i;
                                if (mine) w.put(k % 2 == 0 ? heapLongs(len, base) : longs(len, base), t, from * 8L);
                            }
                            case 1 -> { // accumulate into the shared slice
                                int from = n * slice + at;
                                for (int i = 0; i < len; i++) model[t][from + i] += base + i;
                                MemorySegment o = k % 2 == 0 ? heapLongs(len, base) : longs(len, base);
                                if (mine) w.accumulate(o, t, from * 8L, DataType.INT64, ReduceOp.SUM);
                            }
                            default -> { // get a slice of r's own from the epoch's start: nobody else writes it
                                if (mine) {
                                    int from = r * slice + at;
                                    // heap arrays work as result buffers too
                                    MemorySegment got = k % 2 == 0 ? MemorySegment.ofArray(new long[len]) : arena.allocate(len * 8L);
                                    // our own puts of this epoch to it may not have landed yet in order: flush first
                                    w.flush(t);
                                    w.get(got, t, from * 8L);
                                    for (int i = 0; i < len; i++) {
                                        long exp = model[t][from + i];
                                        expect(got.get(LONG, i * 8L) == exp, "epoch " + e + ": get from rank " + t + " element "
                                                + (from + i) + " is " + got.get(LONG, i * 8L) + ", expected " + exp);
                                    }
                                }
                            }
                        }
                    }
                }
                w.fence();
                checkBlock(w, model[comm.rank()], "after fence " + e);
                comm.barrier(); // the next epoch's writes must not land while a member still checks this one's

            }
        }
    }

    /** As {@link #randomUnderFence}, each rank's ops in exclusive (or shared, for accumulates) lock epochs per target. */
    static void randomUnderLocks(Communicator comm, int rounds) {
        int n = comm.size();
        int slice = 256;
        long bytes = (long) (n + 1) * slice * 8;
        long[][] model = new long[n][(n + 1) * slice];
        try (Window w = window(comm, bytes)) {
            comm.barrier();
            for (int e = 0; e < rounds; e++) {
                for (int r = 0; r < n; r++) {
                    Random rnd = new Random(e * 104729L + r);
                    int t = rnd.nextInt(n);
                    boolean exclusive = rnd.nextBoolean();
                    int ops = 1 + rnd.nextInt(8);
                    boolean mine = r == comm.rank();
                    if (mine) w.lock(t, exclusive ? LockType.EXCLUSIVE : LockType.SHARED);
                    for (int k = 0; k < ops; k++) {
                        int at = rnd.nextInt(slice);
                        int len = 1 + rnd.nextInt(slice - at);
                        long base = rnd.nextLong();
                        if (rnd.nextBoolean()) {
                            int from = r * slice + at;
                            for (int i = 0; i < len; i++) model[t][from + i] = base + i;
                            if (mine) w.put(longs(len, base), t, from * 8L);
                        } else {
                            int from = n * slice + at;
                            for (int i = 0; i < len; i++) model[t][from + i] += base + i;
                            if (mine) w.accumulate(longs(len, base), t, from * 8L, DataType.INT64, ReduceOp.SUM);
                        }
                    }
                    if (mine) {
                        // within the epoch, a get after a flush sees this rank's own puts to its own slice
                        w.flush(t);
                        MemorySegment got = arena.allocate(slice * 8L);
                        w.get(got, t, (long) r * slice * 8);
                        for (int i = 0; i < slice; i++) {
                            long exp = model[t][r * slice + i];
                            expect(got.get(LONG, i * 8L) == exp, "round " + e + ": own slice at rank " + t + " element " + i
                                    + " is " + got.get(LONG, i * 8L) + ", expected " + exp);
                        }
                        w.unlock(t);
                    }
                }
            }
            comm.barrier();
            w.fence();
            checkBlock(w, model[comm.rank()], "after the lock rounds");
        }
    }

    /** Float SUM accumulates from every rank: exactly representable values, so any order gives the reference. */
    static void floatSum(Communicator comm) {
        int n = comm.size();
        int count = 10_000;
        try (Window w = window(comm, count * 4L)) {
            w.lockAll();
            for (int t = 0; t < n; t++) {
                MemorySegment v = arena.allocate(count * 4L);
                for (int i = 0; i < count; i++) v.setAtIndex(ValueLayout.JAVA_FLOAT, i, (comm.rank() + 1) * 0.25f + (i % 64));
                w.accumulate(v, t, 0, DataType.FLOAT32, ReduceOp.SUM);
            }
            w.unlockAll();
            w.fence();
            for (int i = 0; i < count; i++) {
                float exp = 0;
                for (int r = 0; r < n; r++) exp += (r + 1) * 0.25f + (i % 64);
                float got = w.segment().getAtIndex(ValueLayout.JAVA_FLOAT, i);
                if (!(got == exp)) throw new AssertionError("float sum element " + i + " is " + got + ", expected " + exp);
            }
        }
    }

    /**
     * accumulate and getAccumulate of every DataType x op it takes (the bitwise ops on the integer types and BOOL) from
     * rank 1 to rank 0, against the reduction kernels.
     */
    static void types(Communicator comm) {
        int count = create ? 256 : 257; // createWindow memory of whole words: 1- and 2-byte atomics CAS whole words
        ReduceOp[] ops = {ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.REPLACE, ReduceOp.NO_OP, ReduceOp.BAND,
                ReduceOp.BOR, ReduceOp.BXOR};
        for (DataType type : DataType.values()) {
            long bytes = (long) count * type.byteSize();
            try (Window w = window(comm, bytes * ops.length)) {
                Random rnd = new Random(type.ordinal());
                MemorySegment init = arena.allocate(bytes * ops.length);
                for (long i = 0; i < init.byteSize(); i++) init.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(16));
                MemorySegment operand = arena.allocate(bytes);
                for (long i = 0; i < bytes; i++) operand.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(16));
                if (type == DataType.FLOAT16 || type == DataType.BFLOAT16 || type == DataType.FLOAT32 || type == DataType.FLOAT64) {
                    smallFloats(init, type, rnd);
                    smallFloats(operand, type, rnd);
                }
                if (comm.rank() == 0) MemorySegment.copy(init, 0, w.segment(), 0, init.byteSize());
                w.fence();
                if (comm.rank() == 1) {
                    for (int k = 0; k < ops.length; k++) {
                        if (!ops[k].accepts(type)) continue;
                        MemorySegment old = arena.allocate(bytes);
                        if (k % 2 == 0) w.accumulate(operand, 0, k * bytes, type, ops[k]);
                        else w.getAccumulate(operand, old, 0, k * bytes, type, ops[k]);
                        if (k % 2 == 1) expectSame(old, 0, init, k * bytes, bytes, type + " " + ops[k] + " old values");
                    }
                }
                w.fence();
                if (comm.rank() == 0) {
                    for (int k = 0; k < ops.length; k++) {
                        if (!ops[k].accepts(type)) continue;
                        MemorySegment exp = arena.allocate(bytes);
                        MemorySegment.copy(init, k * bytes, exp, 0, bytes);
                        switch (ops[k]) {
                            case REPLACE -> MemorySegment.copy(operand, 0, exp, 0, bytes);
                            case NO_OP -> { }
                            default -> ReduceKernel.of(type, ops[k]).accumulate(exp, 0, operand, 0, count);
                        }
                        expectSame(w.segment(), k * bytes, exp, 0, bytes, type + " " + ops[k]);
                    }
                }
                w.fence();
            }
        }
    }

    private static void smallFloats(MemorySegment s, DataType type, Random rnd) {
        int size = type.byteSize();
        for (long i = 0; i < s.byteSize() / size; i++) {
            float f = rnd.nextInt(33) - 16;
            switch (type) {
                case FLOAT16 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2, Float.floatToFloat16(f));
                case BFLOAT16 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2, (short) (Float.floatToRawIntBits(f) >>> 16));
                case FLOAT32 -> s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i * 4, f);
                default -> s.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, i * 8, f);
            }
        }
    }

    /** putSignal from every rank to the next; the next waits for the signals and checks the data. */
    static void signal(Communicator comm) {
        int n = comm.size();
        int rounds = 50;
        int len = 1024;
        try (Window w = window(comm, (long) n * len * 8)) {
            w.lockAll();
            int next = (comm.rank() + 1) % n;
            int prev = (comm.rank() - 1 + n) % n;
            for (int i = 0; i < rounds; i++) {
                w.putSignal(longs(len, i * 1000L + comm.rank()), next, (long) comm.rank() * len * 8, 3);
                w.waitSignal(prev, 3, 1, Duration.ofSeconds(30));
                for (int k = 0; k < len; k++) {
                    long got = w.segment().get(LONG, ((long) prev * len + k) * 8);
                    if (!(got == i * 1000L + prev + k)) throw new AssertionError("signal round " + i + ": element " + k + " from rank " + prev + " is " + got);
                }
                comm.barrier(); // the next round's put must not overwrite what the target still checks
            }
            w.unlockAll();
            try {
                w.waitSignal(prev, 3, 1, Duration.ofMillis(100));
                throw new AssertionError("waitSignal without a signal returned");
            } catch (CommTimeoutException expected) {
                expect(expected.getMessage().contains("rank " + comm.rank()), "timeout message names no rank: " + expected.getMessage());
            }
        }
    }

    /**
     * Rank 0's application sleeps and makes no library call until the others' puts, gets and fetchAndOps are all done:
     * between sleeps it only reads the counter in its own memory (up to 60 s, else the scenario fails).
     */
    static void sleepingTarget(Communicator comm) throws InterruptedException {
        int n = comm.size();
        try (Window w = window(comm, (long) n * 4096 + 8)) {
            comm.barrier();
            if (comm.rank() == 0) {
                long deadline = System.nanoTime() + 60_000_000_000L;
                long want = 100L * (n - 1);
                while ((long) ValueLayout.JAVA_LONG.varHandle().getAcquire(w.segment(), (long) n * 4096) < want) {
                    expect(System.nanoTime() < deadline, "sleeper: the others' fetchAndOps did not all land within 60 s");
                    Thread.sleep(5);
                }
            } else {
                w.lock(0, LockType.SHARED);
                MemorySegment got = arena.allocate(4096);
                for (int i = 0; i < 100; i++) {
                    w.put(longs(512, i), 0, (long) comm.rank() * 4096);
                    w.flush(0);
                    w.get(got, 0, (long) comm.rank() * 4096);
                    for (int k = 0; k < 512; k++) if (!(got.get(LONG, k * 8L) == i + k)) throw new AssertionError("sleeper round " + i + " element " + k);
                    w.fetchAndOp(1, 0, (long) n * 4096, DataType.INT64, ReduceOp.SUM);
                }
                w.unlock(0);
            }
            comm.barrier();
            if (comm.rank() == 0) {
                long c = w.segment().get(LONG, (long) n * 4096);
                expect(c == 100L * (n - 1), "sleeper counter " + c);
            }
        }
    }

    /**
     * 16 MiB put and get, every byte checked: where the ops go as frames (createWindow, TCP) that is four chunks of
     * RemoteOps.CHUNK (4 MiB) each way; a larger size crosses no further threshold, on the direct path neither.
     */
    static void large(Communicator comm) {
        long bytes = 16L << 20;
        try (Window w = window(comm, bytes)) {
            w.fence();
            int n = comm.size();
            int t = (comm.rank() + 1) % n;
            MemorySegment src = arena.allocate(bytes);
            for (long i = 0; i < bytes; i += 8) src.set(LONG, i, i * 31 + comm.rank());
            w.put(src, t, 0);
            w.fence();
            int prev = (comm.rank() - 1 + n) % n;
            // the message only on a mismatch: a string per element made this scenario take seconds
            for (long i = 0; i < bytes; i += 8) {
                long got = w.segment().get(LONG, i);
                if (got != i * 31 + prev) throw new AssertionError("large put: byte " + i + " is " + got);
            }
            MemorySegment back = arena.allocate(bytes);
            w.get(back, t, 0);
            for (long i = 0; i < bytes; i += 8) {
                long got = back.get(LONG, i);
                if (got != i * 31 + comm.rank()) throw new AssertionError("large get: byte " + i + " is " + got);
            }
            w.fence();
        }
    }

    /** Bad input: a specific exception naming the argument, the rank and the offset; the target unharmed. */
    static void errors(Communicator comm) {
        int n = comm.size();
        int t = (comm.rank() + 1) % n;
        Window w = window(comm, 64);
        w.segment().set(LONG, 0, 42);
        MemorySegment eight = arena.allocate(8);
        // outside an epoch
        expectThrows(IllegalStateException.class, () -> w.put(eight, t, 0), "no access epoch", "rank " + comm.rank(), "offset 0");
        w.fence();
        expectThrows(IndexOutOfBoundsException.class, () -> w.put(arena.allocate(16), t, 56), "offset 56", "rank " + comm.rank());
        expectThrows(IndexOutOfBoundsException.class, () -> w.get(eight, t, -8), "offset -8");
        expectThrows(IllegalArgumentException.class, () -> w.fetchAndOp(1, t, 4, DataType.INT64, ReduceOp.SUM), "offset 4", "not a multiple");
        expectThrows(IllegalArgumentException.class, () -> w.fetchAndOp(1, t, 0, DataType.FLOAT32, ReduceOp.SUM), "FLOAT32", "INT32 or INT64");
        expectThrows(IllegalArgumentException.class, () -> w.accumulate(eight, t, 0, DataType.INT64, ReduceOp.AVG), "AVG");
        expectThrows(IllegalArgumentException.class, () -> w.accumulate(arena.allocate(6), t, 0, DataType.INT32, ReduceOp.SUM), "6 bytes");
        expectThrows(IllegalArgumentException.class, () -> w.put(eight, n, 0), "rank " + n, "out of range");
        expectThrows(IllegalArgumentException.class, () -> w.putSignal(eight, t, 0, Window.SIGNALS), "signalIndex");
        expectThrows(IllegalArgumentException.class, () -> comm.allReduce(new long[1], ReduceOp.REPLACE), "one-sided");
        w.fence();
        expect(w.segment().get(LONG, 0) == 42, "the target's memory changed after refused ops");
        w.close();
        expectThrows(IllegalStateException.class, () -> w.put(eight, t, 0), "closed");
    }

    interface Call {
        void run();
    }

    static void expectThrows(Class<? extends Exception> type, Call call, String... inMessage) {
        try {
            call.run();
        } catch (Exception e) {
            if (!type.isInstance(e)) throw new AssertionError("expected " + type.getSimpleName() + ", got " + e, e);
            for (String s : inMessage) {
                if (!e.getMessage().contains(s)) throw new AssertionError("message lacks '" + s + "': " + e.getMessage(), e);
            }
            return;
        }
        throw new AssertionError("expected " + type.getSimpleName() + " (" + String.join(", ", inMessage) + ")");
    }

    /** As {@link #longs}, in a Java array (heap arrays work as origin buffers). */
    static MemorySegment heapLongs(int len, long base) {
        long[] a = new long[len];
        for (int i = 0; i < len; i++) a[i] = base + i;
        return MemorySegment.ofArray(a);
    }

    static MemorySegment longs(int len, long base) {
        MemorySegment s = arena.allocate(len * 8L);
        for (int i = 0; i < len; i++) s.set(LONG, i * 8L, base + i);
        return s;
    }

    static void checkBlock(Window w, long[] model, String when) {
        for (int i = 0; i < model.length; i++) {
            long got = w.segment().get(LONG, i * 8L);
            if (!(got == model[i])) throw new AssertionError(when + ": element " + i + " is " + got + ", expected " + model[i]);
        }
    }

    static void expectSame(MemorySegment a, long ao, MemorySegment b, long bo, long bytes, String what) {
        long m = MemorySegment.mismatch(a, ao, ao + bytes, b, bo, bo + bytes);
        expect(m < 0, what + ": byte " + m + " differs");
    }

    static void expect(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }
}
