package io.hcomm4j.cli;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.hcomm4j.Communicator;
import io.hcomm4j.HcommException;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.RemoteEngine;
import io.hcomm4j.TransferBatch;
import io.hcomm4j.TransferConfig;
import io.hcomm4j.TransferEngine;
import io.hcomm4j.TransferOp;
import io.hcomm4j.TransferStatus;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * {@code hcomm perf transfer}: batched transfers of the {@link TransferEngine} between two rank processes. Ranks 0 and
 * 1 each start an engine against the job's store (the one the launcher serves, found like a communicator finds it);
 * rank 1, the target, allocates a segment of one batch's bytes in its engine's {@link TransferEngine#memory() pool}
 * (so that a same-host initiator copies into its mapping) and registers it; rank 0, the initiator, connects to it by
 * name and times blocking batches of {@code batch} ops of {@code size} bytes each (op i at offset i × size on both
 * sides), WRITE then READ. Other ranks wait.
 *
 * <p>A row per kind and size: op {@code transfer_write} or {@code transfer_read}, algo {@code engine-<transport>}
 * ({@code engine-shm}: same host, the pool segment is copied in place; {@code engine-tcp}: frames through the target's
 * progress engine), bytes = bytes of one batch, count = ops per batch, time = median over batches of one blocking
 * {@link TransferEngine#transfer}, algbw = bytes / time. With {@code check}, one more batch per row is verified byte
 * for byte once every row is timed.
 */
final class TransferBench {
    /** The default batch: the 64 × 1 MiB. */
    static final int DEFAULT_BATCH = 64;
    static final long DEFAULT_SIZE = 1L << 20;
    static final int DEFAULT_WARMUP = 5;
    static final Duration BUDGET = Duration.ofSeconds(1);
    static final int MIN_CALLS = 10;
    static final int MAX_CALLS = 100_000;
    /** The JIT warm-up: batches of at most this many ops of at most this many bytes. */
    static final int JIT_OPS = 16;
    static final long JIT_BYTES = 4L << 10;
    static final String SEGMENT = "perf";
    static final int INITIATOR = 0;
    static final int TARGET = 1;

    /** Which way: WRITE (initiator to target) or READ. */
    enum Kind {
        WRITE, READ;

        String opName() {
            return "transfer_" + name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * One row of the plan.
     *
     * @param size   bytes of each op
     * @param batch  ops per batch
     * @param iters  timed batches, or 0: as many as fit in {@link #BUDGET}
     * @param warmup untimed batches before them
     */
    record Test(Kind kind, long size, int batch, int iters, int warmup) {
        long bytes() {
            return size * batch;
        }
    }

    /** What a row took; {@code tailsUs}: p50, p99 and max of its batches' times ({@link PerfReport#tailsUs}), initiator only. */
    record Result(double timeUs, int calls, long wrong, double[] tailsUs) {
    }

    private TransferBench() {
    }

    /**
     * The plan: for every per-op size (1 MiB without {@code -b}/{@code -e}, else the sweep), WRITE and READ (or the kind
     * {@code algo} names: write or read), batches of {@code batch} ops (default 64).
     */
    static List<Test> plan(String algo, Long minBytes, Long maxBytes, Integer factor, Integer batch, Integer iters,
                           Integer warmup) {
        if (iters != null && iters < 1) throw new IllegalArgumentException("--iters must be >= 1, was " + iters);
        if (warmup != null && warmup < 0) throw new IllegalArgumentException("-w/--warmup-iters must be >= 0, was " + warmup);
        int ops = batch != null ? batch : DEFAULT_BATCH;
        if (ops < 1) throw new IllegalArgumentException("--batch must be >= 1, was " + ops);
        List<Kind> kinds;
        if (algo == null) {
            kinds = List.of(Kind.WRITE, Kind.READ);
        } else {
            kinds = Arrays.stream(Kind.values()).filter(k -> k.name().equalsIgnoreCase(algo)).toList();
            if (kinds.isEmpty()) throw new IllegalArgumentException("transfer --algo must be write or read, not '" + algo + "'");
        }
        List<Long> sizes = minBytes == null && maxBytes == null ? List.of(DEFAULT_SIZE)
                : PerfPlan.sweep(minBytes, maxBytes, factor != null ? factor : 2);
        List<Test> plan = new ArrayList<>();
        for (long s : sizes) {
            if (s > Long.MAX_VALUE / ops) throw new IllegalArgumentException("a batch of " + ops + " x " + s + " B is too large");
            for (Kind k : kinds) plan.add(new Test(k, s, ops, iters != null ? iters : 0, warmup != null ? warmup : DEFAULT_WARMUP));
        }
        return plan;
    }

    /**
     * Measures {@code plan} on this rank; every rank of {@code comm} calls it with the same arguments. Rank 0 prints the
     * header and rows to {@code report} and progress lines to {@code progress}, and returns the rows.
     * {@code engineName} names the engine of a rank (in the job's store).
     */
    static List<PerfReport.Row> run(Communicator comm, List<Test> plan, CollectiveBench.Mem mem, boolean check,
                                    boolean jitWarmUp, Function<Integer, String> engineName, PerfReport report,
                                    PrintStream progress) {
        int rank = comm.rank();
        int n = comm.size();
        if (n < 2) throw new IllegalStateException("transfer measurements need at least 2 ranks, not " + n);
        List<PerfReport.Row> rows = new ArrayList<>();
        if (plan.isEmpty()) return rows;
        long largest = plan.stream().mapToLong(Test::bytes).max().orElseThrow();
        TransferEngine engine = rank <= TARGET
                ? TransferEngine.start(TransferConfig.builderFromEnvironment().name(engineName.apply(rank)).build()) : null;
        try (Arena arena = Arena.ofShared();
             Buffers bufs = new Buffers(engine, rank, mem, largest, arena)) {
            if (rank == TARGET) engine.register(bufs.target, SEGMENT);
            comm.barrier(); // the segment is registered
            RemoteEngine remote = rank == INITIATOR ? engine.connect(engineName.apply(TARGET), Duration.ofSeconds(60)) : null;
            String algo = rank == INITIATOR ? "engine-" + engine.transportTo(remote) : null;
            if (rank == 0) header(report, plan.getFirst().batch(), mem, check);
            if (jitWarmUp) {
                Test first = plan.getFirst();
                int ops = Math.min(JIT_OPS, first.batch());
                long size = Math.min(JIT_BYTES, plan.stream().mapToLong(Test::size).min().orElseThrow());
                List<TransferOp> wops = rank == INITIATOR ? ops(Kind.WRITE, bufs.local, ops, size) : null;
                List<TransferOp> rops = rank == INITIATOR ? ops(Kind.READ, bufs.local, ops, size) : null;
                String line = rank <= TARGET
                        ? JitWarmUp.run(comm, 2, rank == INITIATOR ? () -> {
                            for (int i = 0; i < JitWarmUp.CHUNK; i++) once(engine, remote, i % 2 == 0 ? wops : rops);
                        } : () -> { }, "batches of " + ops + " x " + P2pBench.human(size) + " (write and read, alternately)")
                        : null;
                if (rank == 0) progress.println(line);
            } else if (rank == 0) {
                progress.println(JitWarmUp.NONE);
            }
            // every row is timed before any is checked: a READ timed right after the check of a WRITE measured 8.3 GB/s
            // against 18-19 unchecked (64 x 1 MiB, same host; 15.4 over 600 batches: the check's aftermath lasts ~1 s)
            List<Result> timed = new ArrayList<>();
            for (Test t : plan) {
                Result r = measure(comm, engine, remote, t, bufs);
                timed.add(r);
                if (rank == 0) {
                    progress.println(String.format(Locale.ROOT, "# %s %d x %s: %d warmup + %d timed batches", t.kind().opName(),
                            t.batch(), P2pBench.human(t.size()), t.warmup(), r.calls()));
                }
            }
            for (int i = 0; i < plan.size(); i++) {
                Test t = plan.get(i);
                Result r = timed.get(i);
                long wrong = check ? check(comm, engine, remote, t, bufs) : -1;
                if (rank != 0) continue;
                double algbw = r.timeUs() > 0 ? t.bytes() / (r.timeUs() * 1e3) : 0;
                PerfReport.Row row = new PerfReport.Row(t.kind().opName(), algo, n, t.bytes(), t.batch(), "uint8", "none", TARGET,
                        r.timeUs(), algbw, algbw, wrong).withTails(r.tailsUs());
                report.row(row);
                rows.add(row);
            }
            comm.barrier(); // no batch is under way when the engines close
        } finally {
            if (engine != null) engine.close();
        }
        return rows;
    }

    private static void header(PerfReport report, int batch, CollectiveBench.Mem mem, boolean check) {
        report.header("hcomm perf transfer: TransferEngine of rank 0 (initiator) -> engine of rank 1 (target), segment in the"
                        + " target engine's memory() pool, initiator buffer " + mem.name().toLowerCase(Locale.ROOT)
                        + ", check " + (check ? "on" : "off"),
                "a batch = " + batch + " ops (count) of size / count bytes, op i at offset i x op size on both sides; time ="
                        + " median over batches of one blocking transfer(remote, ops), each timed alone",
                "size = bytes of a batch; algbw = size / time, busbw = algbw, GB/s = 1e9 B/s"
                        + (check ? "; #wrong = wrong bytes of one more batch (write: at the target, read: at the initiator)" : ""));
    }

    /** Times one row: the target prepares (read: a pattern), the initiator times (wrong: -1, not checked). */
    private static Result measure(Communicator comm, TransferEngine engine, RemoteEngine remote, Test t, Buffers bufs) {
        int rank = comm.rank();
        long bytes = t.bytes();
        if (rank == TARGET && t.kind() == Kind.READ) P2pBench.fill(bufs.target.asSlice(0, bytes), 1);
        if (rank == INITIATOR && t.kind() == Kind.WRITE) P2pBench.fill(bufs.local.asSlice(0, bytes), 0);
        comm.barrier();
        int calls = 0;
        long[] times = new long[0];
        if (rank == INITIATOR) {
            List<TransferOp> ops = ops(t.kind(), bufs.local, t.batch(), t.size());
            for (int i = 0; i < t.warmup(); i++) once(engine, remote, ops);
            int limit = t.iters() > 0 ? t.iters() : MAX_CALLS;
            times = new long[limit];
            long budget = BUDGET.toNanos();
            long start = System.nanoTime();
            long last = start;
            while (calls < limit && (t.iters() > 0 || calls < MIN_CALLS || last - start < budget)) {
                long t0 = System.nanoTime();
                once(engine, remote, ops);
                long t1 = System.nanoTime();
                times[calls++] = t1 - t0;
                last = t1;
            }
        }
        comm.barrier();
        double timeUs = rank == INITIATOR ? P2pBench.median(Arrays.copyOf(times, calls)) / 1e3 : 0;
        return new Result(timeUs, calls, -1, rank == INITIATOR ? PerfReport.tailsUs(Arrays.copyOf(times, calls), 1) : null);
    }

    /**
     * Checks one more batch of row {@code t}: WRITE into the zeroed segment, verified at the target; READ of the target's
     * pattern into zeroed local memory, verified at the initiator. Returns the wrong bytes (on every rank).
     */
    private static long check(Communicator comm, TransferEngine engine, RemoteEngine remote, Test t, Buffers bufs) {
        int rank = comm.rank();
        long bytes = t.bytes();
        long[] wrong = {0};
        boolean write = t.kind() == Kind.WRITE;
        if (rank == TARGET) {
            if (write) bufs.target.asSlice(0, bytes).fill((byte) 0);
            else P2pBench.fill(bufs.target.asSlice(0, bytes), 1);
        }
        if (rank == INITIATOR) {
            if (write) P2pBench.fill(bufs.local.asSlice(0, bytes), 0); // a READ row timed since may have overwritten it
            else bufs.local.asSlice(0, bytes).fill((byte) 0);
        }
        comm.barrier();
        if (rank == INITIATOR) once(engine, remote, ops(t.kind(), bufs.local, t.batch(), t.size()));
        comm.barrier();
        if (write && rank == TARGET) wrong[0] = wrongBytes(bufs.target.asSlice(0, bytes), 0);
        if (!write && rank == INITIATOR) wrong[0] = wrongBytes(bufs.local.asSlice(0, bytes), 1);
        comm.allReduce(wrong, ReduceOp.SUM);
        return wrong[0];
    }

    /** The ops of one batch: op i moves {@code size} bytes at offset i × size of {@code local} and of the segment. */
    static List<TransferOp> ops(Kind kind, MemorySegment local, int batch, long size) {
        List<TransferOp> ops = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            long off = i * size;
            ops.add(kind == Kind.WRITE ? TransferOp.write(local, off, SEGMENT, off, size) : TransferOp.read(local, off, SEGMENT, off, size));
        }
        return List.copyOf(ops);
    }

    /** One blocking batch; a batch that does not complete ends the run with its error. */
    static void once(TransferEngine engine, RemoteEngine remote, List<TransferOp> ops) {
        TransferBatch b = engine.transfer(remote, ops);
        if (b.status() != TransferStatus.COMPLETED) {
            HcommException e = b.error().orElse(null);
            throw new IllegalStateException("a transfer batch ended " + b.status() + (e != null ? ": " + e.getMessage() : ""), e);
        }
    }

    /** Bytes of {@code got} that differ from {@link P2pBench#pattern} with {@code salt}. */
    static long wrongBytes(MemorySegment got, long salt) {
        long wrong = 0;
        for (long i = 0; i < got.byteSize(); i++) {
            if (got.get(JAVA_BYTE, i) != P2pBench.pattern(i, salt)) wrong++;
        }
        return wrong;
    }

    /** The initiator's local buffer ({@code --mem}) and the target's registered pool segment. */
    private static final class Buffers implements AutoCloseable {
        final MemorySegment local;
        final MemorySegment target;
        private final RegisteredBuffer pooled;
        private final RegisteredBuffer registered;
        private final TransferEngine engine;

        Buffers(TransferEngine engine, int rank, CollectiveBench.Mem mem, long bytes, Arena arena) {
            this.engine = engine;
            boolean pool = rank == INITIATOR && mem == CollectiveBench.Mem.POOL;
            pooled = pool ? engine.memory().allocate(bytes) : null;
            local = rank != INITIATOR ? null : switch (mem) {
                case NATIVE -> arena.allocate(bytes, 4096);
                case POOL -> pooled.segment().asSlice(0, bytes);
                case HEAP -> MemorySegment.ofArray(new long[Math.toIntExact((bytes + 7) / 8)]).asSlice(0, bytes);
            };
            registered = rank == TARGET ? engine.memory().allocate(bytes) : null;
            target = registered != null ? registered.segment().asSlice(0, bytes) : null;
        }

        @Override
        public void close() {
            if (pooled != null) pooled.close();
            if (registered != null) {
                if (engine.segments().stream().anyMatch(d -> d.segment().equals(SEGMENT))) engine.unregister(SEGMENT);
                registered.close();
            }
        }
    }
}
