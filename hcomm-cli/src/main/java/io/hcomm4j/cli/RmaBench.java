package io.hcomm4j.cli;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.Window;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.IntFunction;

/**
 * {@code hcomm perf put|get|accumulate|fetch_and_op|counter}: one-sided ops on a {@link Window}, measured as
 * {@code ../shared/peers/mpi_rma_bench.c} measures Open MPI's (its rows and these compare one to one):
 *
 * <ul>
 *   <li>one window for the run ({@link Communicator#allocateWindow} or, with {@link WindowKind#CREATE},
 *       {@link Communicator#createWindow} over {@link Arena#ofShared()} memory); every rank calls {@link Window#lockAll()}
 *       once (passive target) and {@link Window#unlockAll()} at the end;</li>
 *   <li>put, get, accumulate, fetch_and_op: rank 0 is the origin, rank 1 the target, the other ranks wait in a barrier;
 *       each timed call is the op followed by {@link Window#flush(int) flush(1)} (remote completion; the op's future is
 *       awaited after the flush, as MPI_Win_flush completes MPI_Get); time = median over calls, each timed alone;</li>
 *   <li>counter: every rank does {@code fetchAndOp(1, 0, 0, INT64, SUM)} + {@code flush(0)} {@code iters} times;
 *       time = the slowest rank's loop time / iters; the counter must end at exactly iters × ranks.</li>
 * </ul>
 *
 * Buffers and the window are made once, before anything is timed; the timed loop allocates only what the library
 * does per op. Without a fixed {@code --iters}, a size is timed for {@link #BUDGET} ({@link #MIN_CALLS} to
 * {@link #MAX_CALLS} calls), as the baseline does.
 */
final class RmaBench {
    /** The one-sided ops. */
    enum Op {
        PUT, GET, ACCUMULATE, FETCH_AND_OP, COUNTER;

        String cliName() {
            return name().toLowerCase(Locale.ROOT);
        }

        static Optional<Op> of(String name) {
            return Arrays.stream(values()).filter(o -> o.cliName().equals(name)).findFirst();
        }
    }

    /** How the window is made: {@code allocateWindow} (pool memory) or {@code createWindow} over plain native memory. */
    enum WindowKind { ALLOC, CREATE }

    /**
     * One size of the plan.
     *
     * @param iters  timed calls (counter: per rank), or 0: as many as fit in {@link #BUDGET}
     * @param warmup untimed calls before them
     */
    record Test(Op op, long bytes, int iters, int warmup) {
    }

    /**
     * What a size took: its row's numbers.
     *
     * @param tailsUs p50, p99 and max of the calls' times ({@link PerfReport#tailsUs}); null for the counter, whose
     *                calls are not timed one by one (and on ranks other than the origin)
     */
    record Result(double timeUs, int calls, long wrong, double[] tailsUs) {
        Result(double timeUs, int calls, long wrong) {
            this(timeUs, calls, wrong, null);
        }
    }

    static final long[] PUT_GET_SIZES = {8, 4L << 10, 4L << 20, 64L << 20};
    static final long[] ACCUMULATE_SIZES = {4L << 10, 4L << 20};
    static final int DEFAULT_WARMUP = 50;
    static final int COUNTER_ITERS = 20_000;
    static final Duration BUDGET = Duration.ofSeconds(1);
    static final int MIN_CALLS = 20;
    static final int MAX_CALLS = 200_000;
    /** The JIT warm-up runs the op at the smallest size, at most this. */
    static final long JIT_BYTES = 4L << 10;
    /** The origin/target of put, get, accumulate and fetch_and_op. */
    static final int ORIGIN = 0;
    static final int TARGET = 1;
    /** The int64 that fetch_and_op and counter time; the warm-ups add to the next one. */
    static final long COUNTER_OFFSET = 0;
    static final long WARM_OFFSET = 8;

    private RmaBench() {
    }

    /**
     * The plan of {@code op}: put and get at 8 B, 4 KiB, 4 MiB and 64 MiB, accumulate at 4 KiB and 4 MiB (without
     * {@code -b}/{@code -e}; with them the sweep, accumulate's sizes rounded down to whole float32s), fetch_and_op and
     * counter one int64.
     */
    static List<Test> plan(Op op, Long minBytes, Long maxBytes, Integer factor, Integer iters, Integer warmup) {
        if (iters != null && iters < 1) throw new IllegalArgumentException("--iters must be >= 1, was " + iters);
        if (warmup != null && warmup < 0) throw new IllegalArgumentException("-w/--warmup-iters must be >= 0, was " + warmup);
        boolean sweep = minBytes != null || maxBytes != null;
        List<Long> sizes = new ArrayList<>();
        switch (op) {
            case FETCH_AND_OP, COUNTER -> {
                if (sweep) throw new IllegalArgumentException(op.cliName() + " works on one int64 (8 B): -b/-e do not apply");
                sizes.add(8L);
            }
            case PUT, GET -> {
                if (sweep) sizes.addAll(PerfPlan.sweep(minBytes, maxBytes, factor != null ? factor : 2));
                else for (long b : PUT_GET_SIZES) sizes.add(b);
            }
            case ACCUMULATE -> {
                if (!sweep) {
                    for (long b : ACCUMULATE_SIZES) sizes.add(b);
                } else {
                    for (long b : PerfPlan.sweep(minBytes, maxBytes, factor != null ? factor : 2)) {
                        long whole = Math.max(4, b / 4 * 4);
                        if (!sizes.contains(whole)) sizes.add(whole);
                    }
                }
            }
        }
        int n = iters != null ? iters : op == Op.COUNTER ? COUNTER_ITERS : 0;
        int w = warmup != null ? warmup : DEFAULT_WARMUP;
        return sizes.stream().map(b -> new Test(op, b, n, w)).toList();
    }

    /**
     * Measures {@code plan} (one op) on this rank; every rank of {@code comm} calls it with the same arguments. Rank 0
     * prints the header and rows to {@code report} and progress lines to {@code progress}, and returns the rows; the
     * other ranks return none. {@code transportTo} names the transport to a rank (for the algo column).
     */
    static List<PerfReport.Row> run(Communicator comm, List<Test> plan, WindowKind kind, CollectiveBench.Mem mem,
                                    boolean check, boolean jitWarmUp, IntFunction<String> transportTo, PerfReport report,
                                    PrintStream progress) {
        int rank = comm.rank();
        int n = comm.size();
        if (n < 2) throw new IllegalStateException("one-sided measurements need at least 2 ranks, not " + n);
        List<PerfReport.Row> rows = new ArrayList<>();
        if (plan.isEmpty()) return rows;
        Op op = plan.getFirst().op();
        int target = op == Op.COUNTER ? 0 : TARGET;
        long largest = plan.stream().mapToLong(Test::bytes).max().orElseThrow();
        long smallest = plan.stream().mapToLong(Test::bytes).min().orElseThrow();
        long windowBytes = rank == target ? (Math.max(largest, 64) + 7) / 8 * 8 : 0;
        try (Arena arena = Arena.ofShared();
             Window w = kind == WindowKind.ALLOC ? comm.allocateWindow(windowBytes)
                     : comm.createWindow(arena.allocate(Math.max(windowBytes, 8), 4096).asSlice(0, windowBytes));
             Origin origin = new Origin(comm, mem, largest, arena)) {
            MemorySegment buf = origin.segment;
            if (op == Op.PUT) P2pBench.fill(buf, 0);
            if (op == Op.ACCUMULATE) {
                for (long i = 0; i < largest / 4; i++) buf.setAtIndex(JAVA_FLOAT, i, operand(i));
            }
            w.lockAll();
            // one message from rank 0 to rank 1, so their connection exists and the transport to rank 1 is known
            MemorySegment hello = arena.allocate(8);
            if (rank == 0) comm.send(hello, 1, P2pBench.TAG_WARMUP);
            if (rank == 1) comm.recv(hello, 0, P2pBench.TAG_WARMUP);
            String algo = rank == 0 ? (kind == WindowKind.ALLOC ? "window-" : "window-create-") + transportTo.apply(1) : null;
            if (rank == 0) header(report, op, n, kind, mem, check);
            if (jitWarmUp) {
                long jb = Math.min(JIT_BYTES, smallest);
                String line;
                if (op == Op.COUNTER) {
                    line = JitWarmUp.run(comm, n, () -> repeat(w, op, buf, 0, WARM_OFFSET, JitWarmUp.CHUNK),
                            "calls of fetchAndOp(sum, 1) + flush(0) per rank");
                } else if (rank <= TARGET) {
                    MemorySegment b = buf.asSlice(0, jb);
                    long offset = op == Op.FETCH_AND_OP ? WARM_OFFSET : 0;
                    line = JitWarmUp.run(comm, 2, rank == ORIGIN ? () -> repeat(w, op, b, TARGET, offset, JitWarmUp.CHUNK) : () -> { },
                            "calls of " + op.cliName() + (op == Op.FETCH_AND_OP ? "" : " " + P2pBench.human(jb)) + " + flush(1)");
                } else {
                    line = null;
                }
                if (rank == 0) progress.println(line);
            } else if (rank == 0) {
                progress.println(JitWarmUp.NONE);
            }
            for (Test t : plan) {
                Result r = op == Op.COUNTER ? counter(comm, w, t, check) : originToTarget(comm, w, t, buf, check);
                if (rank != 0) continue;
                progress.println(String.format(Locale.ROOT, "# %s %s: %d warmup + %d timed calls%s", op.cliName(),
                        P2pBench.human(t.bytes()), t.warmup(), r.calls(), op == Op.COUNTER ? " per rank, " + n + " ranks" : ""));
                double algbw = r.timeUs() > 0 ? t.bytes() / (r.timeUs() * 1e3) : 0;
                PerfReport.Row row = new PerfReport.Row(op.cliName(), algo, n, t.bytes(), count(op, t.bytes(), t.iters(), n),
                        op == Op.PUT || op == Op.GET ? "uint8" : op == Op.ACCUMULATE ? "float32" : "int64",
                        op == Op.PUT || op == Op.GET ? "none" : "sum", target, r.timeUs(), algbw, algbw, r.wrong()).withTails(r.tailsUs());
                report.row(row);
                rows.add(row);
            }
            w.unlockAll();
        }
        return rows;
    }

    /** The count column: bytes (put, get), float32s (accumulate), 1 (fetch_and_op), all increments (counter). */
    static long count(Op op, long bytes, int iters, int n) {
        return switch (op) {
            case PUT, GET -> bytes;
            case ACCUMULATE -> bytes / 4;
            case FETCH_AND_OP -> 1;
            case COUNTER -> (long) iters * n;
        };
    }

    private static void header(PerfReport report, Op op, int n, WindowKind kind, CollectiveBench.Mem mem, boolean check) {
        String window = kind == WindowKind.ALLOC ? "allocateWindow (pool memory)" : "createWindow (Arena.ofShared() memory)";
        String base = "hcomm perf " + op.cliName() + ": " + n + " ranks, window " + window + ", lockAll once, origin buffer "
                + mem.name().toLowerCase(Locale.ROOT) + ", check " + (check ? "on" : "off");
        String timing = op == Op.COUNTER
                ? "counter: every rank fetchAndOp(sum, 1) + flush(0) on rank 0's int64, iters times; time = max over ranks of"
                + " loop time / iters"
                : "rank 0 -> rank 1: time = median over calls of one " + op.cliName() + " + flush(1) (remote completion), each"
                + " timed alone";
        report.header(base, timing, "algbw = size / time, busbw = algbw, GB/s = 1e9 B/s"
                + (check ? "; #wrong = wrong elements (counter: 1 if its end value is off, + values fetched twice)" : ""));
    }

    /**
     * One size of put, get, accumulate or fetch_and_op from rank 0 to rank 1. The target prepares its block (get: a
     * pattern; accumulate, fetch_and_op: zeros), rank 0 times, then (with {@code check}) the data is verified.
     */
    private static Result originToTarget(Communicator comm, Window w, Test t, MemorySegment buf, boolean check) {
        int rank = comm.rank();
        Op op = t.op();
        long bytes = t.bytes();
        MemorySegment local = buf.asSlice(0, bytes);
        if (rank == TARGET) {
            MemorySegment block = w.segment().asSlice(0, bytes);
            if (op == Op.GET) P2pBench.fill(block, 1);
            else if (op != Op.PUT) block.fill((byte) 0);
        }
        comm.barrier();
        long offset = op == Op.FETCH_AND_OP ? COUNTER_OFFSET : 0;
        int cap = t.iters() > 0 ? t.iters() : MAX_CALLS;
        long[] times = new long[rank == ORIGIN ? cap : 0];
        long[] fetched = new long[rank == ORIGIN && op == Op.FETCH_AND_OP ? t.warmup() + cap : 0];
        int calls = 0;
        if (rank == ORIGIN) calls = timeOrigin(w, op, local, offset, t.iters(), t.warmup(), times, fetched);
        comm.barrier();
        double timeUs = rank == ORIGIN ? P2pBench.median(Arrays.copyOf(times, calls)) / 1e3 : 0;
        double[] tails = rank == ORIGIN ? PerfReport.tailsUs(Arrays.copyOf(times, calls), 1) : null;
        if (!check) return new Result(timeUs, calls, -1, tails);
        long wrong = switch (op) {
            case PUT -> {
                if (rank == TARGET) w.segment().asSlice(0, bytes).fill((byte) 0);
                comm.barrier();
                if (rank == ORIGIN) once(w, op, local, TARGET, 0);
                comm.barrier();
                long[] count = {rank == TARGET ? wrongBytes(w.segment().asSlice(0, bytes), 0) : 0};
                comm.allReduce(count, ReduceOp.SUM);
                yield count[0];
            }
            case GET -> {
                if (rank != ORIGIN) yield 0;
                local.fill((byte) 0);
                once(w, op, local, TARGET, 0);
                yield wrongBytes(local, 1);
            }
            case ACCUMULATE -> {
                long[] count = {t.warmup() + calls}; // every call added to the zeroed block
                comm.broadcast(count, ORIGIN);
                count[0] = rank == TARGET ? wrongSums(w.segment().asSlice(0, bytes), count[0]) : 0;
                comm.allReduce(count, ReduceOp.SUM);
                yield count[0];
            }
            default -> { // fetch_and_op: call k fetched k; the int64 ends at the number of calls
                if (rank != ORIGIN) yield 0;
                int all = t.warmup() + calls;
                long bad = 0;
                for (int k = 0; k < all; k++) if (fetched[k] != k) bad++;
                CommFuture<Long> end = w.fetchAndOpAsync(0, TARGET, offset, DataType.INT64, ReduceOp.NO_OP);
                w.flush(TARGET);
                yield bad + (end.await() == all ? 0 : 1);
            }
        };
        return new Result(timeUs, calls, wrong, tails);
    }

    /**
     * Rank 0's loop: {@code warmup} untimed calls, then {@code iters} timed ones (0: until {@link #BUDGET} has passed,
     * {@link #MIN_CALLS} to {@link #MAX_CALLS}). Each call's time goes to {@code times}, each fetched value (in call
     * order, warm-up included) to {@code fetched} if it has room. Returns the number of timed calls.
     */
    static int timeOrigin(Window w, Op op, MemorySegment local, long offset, int iters, int warmup, long[] times,
                          long[] fetched) {
        boolean keep = fetched.length > 0;
        for (int i = 0; i < warmup; i++) {
            long v = once(w, op, local, TARGET, offset);
            if (keep) fetched[i] = v;
        }
        long budget = BUDGET.toNanos();
        int limit = iters > 0 ? iters : MAX_CALLS;
        int calls = 0;
        long start = System.nanoTime();
        long last = start;
        while (calls < limit && (iters > 0 || calls < MIN_CALLS || last - start < budget)) {
            long t0 = System.nanoTime();
            long v = once(w, op, local, TARGET, offset);
            long t1 = System.nanoTime();
            times[calls] = t1 - t0;
            if (keep) fetched[warmup + calls] = v;
            calls++;
            last = t1;
        }
        return calls;
    }

    /**
     * The counter: every rank adds 1 to rank 0's int64 {@code iters} times, each fetchAndOp followed by flush(0). The
     * time is the slowest rank's loop time / iters. Wrong: 1 if the counter does not end at iters × ranks; with
     * {@code check} also every fetched value that is out of range or fetched twice, and every value a rank fetched that
     * is not above its previous one.
     */
    private static Result counter(Communicator comm, Window w, Test t, boolean check) {
        int n = comm.size();
        int iters = t.iters();
        long[] fetched = new long[iters];
        for (int i = 0; i < t.warmup(); i++) once(w, Op.COUNTER, null, 0, WARM_OFFSET);
        comm.barrier();
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) fetched[i] = once(w, Op.COUNTER, null, 0, COUNTER_OFFSET);
        long t1 = System.nanoTime();
        // every rank's increments were applied (flushed) before it joins the all-reduce: rank 0 reads the end value after
        double[] perOp = {(t1 - t0) / 1e3 / iters};
        comm.allReduce(perOp, ReduceOp.MAX);
        long expected = (long) iters * n;
        long wrong = 0;
        if (comm.rank() == 0) {
            long end = w.fetchAndOp(0, 0, COUNTER_OFFSET, DataType.INT64, ReduceOp.NO_OP);
            if (end != expected) wrong = 1;
        }
        if (check) {
            long[] bad = {0};
            for (int i = 1; i < iters; i++) if (fetched[i] <= fetched[i - 1]) bad[0]++;
            long[] all = new long[Math.toIntExact(expected)];
            comm.gather(MemorySegment.ofArray(fetched), MemorySegment.ofArray(all), iters, DataType.INT64, 0);
            if (comm.rank() == 0) {
                boolean[] seen = new boolean[all.length];
                for (long v : all) {
                    if (v < 0 || v >= all.length || seen[(int) v]) bad[0]++;
                    else seen[(int) v] = true;
                }
            }
            comm.allReduce(bad, ReduceOp.SUM);
            wrong += bad[0];
        }
        return new Result(perOp[0], iters, wrong);
    }

    /** {@code times} calls of the op (untimed), each followed by its flush. */
    private static void repeat(Window w, Op op, MemorySegment local, int target, long offset, int times) {
        for (int i = 0; i < times; i++) once(w, op, local, target, offset);
    }

    /**
     * One call as the baseline times it: the op, then {@code flush(target)} (remote completion), then its future (already
     * complete then; it carries a fetched value or a failure). Returns the fetched value (fetch_and_op, counter), else 0.
     */
    static long once(Window w, Op op, MemorySegment local, int target, long offset) {
        switch (op) {
            case PUT -> {
                CommFuture<Void> f = w.putAsync(local, target, offset);
                w.flush(target);
                f.await();
                return 0;
            }
            case GET -> {
                CommFuture<Void> f = w.getAsync(local, target, offset);
                w.flush(target);
                f.await();
                return 0;
            }
            case ACCUMULATE -> {
                CommFuture<Void> f = w.accumulateAsync(local, target, offset, DataType.FLOAT32, ReduceOp.SUM);
                w.flush(target);
                f.await();
                return 0;
            }
            default -> {
                CommFuture<Long> f = w.fetchAndOpAsync(1, target, offset, DataType.INT64, ReduceOp.SUM);
                w.flush(target);
                return f.await();
            }
        }
    }

    /** Accumulate's operand at element {@code i}: 1 .. 8, so sums of many calls stay small and exact for long. */
    static float operand(long i) {
        return (i % 8) + 1;
    }

    /** Bytes of {@code got} that differ from {@link P2pBench#pattern} with {@code salt}. */
    static long wrongBytes(MemorySegment got, long salt) {
        long wrong = 0;
        for (long i = 0; i < got.byteSize(); i++) {
            if (got.get(JAVA_BYTE, i) != P2pBench.pattern(i, salt)) wrong++;
        }
        return wrong;
    }

    /** Elements of {@code block} (float32) that are not {@code calls} additions of {@link #operand} to 0, in float. */
    static long wrongSums(MemorySegment block, long calls) {
        float[] expected = new float[8];
        for (int v = 0; v < 8; v++) {
            float s = 0;
            for (long k = 0; k < calls; k++) s += operand(v);
            expected[v] = s;
        }
        long wrong = 0;
        long count = block.byteSize() / 4;
        for (long i = 0; i < count; i++) {
            if (block.getAtIndex(JAVA_FLOAT, i) != expected[(int) (i % 8)]) wrong++;
        }
        return wrong;
    }

    /** The origin buffer ({@code --mem}): off-heap, a registered pool buffer, or a Java array. */
    private static final class Origin implements AutoCloseable {
        final MemorySegment segment;
        private final RegisteredBuffer pooled;

        Origin(Communicator comm, CollectiveBench.Mem mem, long bytes, Arena arena) {
            pooled = mem == CollectiveBench.Mem.POOL ? comm.memory().allocate(bytes) : null;
            segment = switch (mem) {
                case NATIVE -> arena.allocate(bytes, 4096);
                case POOL -> pooled.segment().asSlice(0, bytes);
                case HEAP -> MemorySegment.ofArray(new long[Math.toIntExact((bytes + 7) / 8)]).asSlice(0, bytes);
            };
        }

        @Override
        public void close() {
            if (pooled != null) pooled.close();
        }
    }
}
