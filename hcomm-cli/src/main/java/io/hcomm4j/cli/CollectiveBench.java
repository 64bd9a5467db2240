package io.hcomm4j.cli;

import static io.hcomm4j.cli.CheckValues.getBits;
import static io.hcomm4j.cli.CheckValues.input;
import static io.hcomm4j.cli.CheckValues.encode;
import static io.hcomm4j.cli.CheckValues.reference;
import static io.hcomm4j.cli.CheckValues.pattern;
import static io.hcomm4j.cli.CheckValues.mask;
import static io.hcomm4j.cli.CheckValues.setBits;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Status;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Optional;

/**
 * Collective measurements of {@code hcomm perf}, shaped like nccl-tests. Every rank of the communicator calls
 * {@link #run} with the same {@link Test}; each runs {@code warmup} untimed calls of the blocking op, a barrier,
 * then {@code iters} timed calls back to back, and returns their mean: the loop's time / {@code iters}, as
 * nccl-tests does. {@link #combine} gives rank 0 the time of the job: the maximum over ranks of those means (the
 * slowest rank decides when the calls are done; nccl-tests averages over ranks by default), together with the sum
 * of the ranks' wrong elements.
 *
 * <p>Not the median of single calls: calls run back to back overlap (a broadcast root's eager sends return before
 * the data has arrived), so one rank's calls alternate between waiting and finding the data already there, and
 * the median of such calls misses the waits; the loop time counts them all. Buffers are off-heap
 * ({@link Arena#ofShared()}), registered ({@code comm.memory()}) or Java arrays as {@link Test#mem()} says,
 * allocated and filled once per size, outside the timed loop; ops run out of place unless the test is in place
 * (all-reduce only: each call's output is the next one's input, as in nccl-tests).
 *
 * <p>Sizes follow nccl-tests: {@link Shape#bytes()} is the size of the largest buffer. For allgather,
 * reducescatter, alltoall, gather and scatter that is the buffer of all ranks' blocks, and the count is elements
 * per block ({@code size / ranks / type size}); for the others the count is {@code size / type size}. A size that
 * is not a whole number of elements (blocks) is rounded down, to at least one element per block.
 *
 * <p>With {@code check}, one more call after the timed ones runs on inputs whose exact result is known: for
 * reductions, small integers chosen so that float sums and products are exact in any order (the reference is
 * computed element by element, AVG dividing the way the library's kernels do); for data movement, a hash of
 * (source, element) in every element. Receive buffers are first filled with the complement of the expected bits,
 * so an element nobody wrote counts as wrong. Each rank counts the wrong elements of what it received.
 */
final class CollectiveBench {
    /** Tag of sendrecv's messages. */
    static final int TAG_SENDRECV = 111;
    /** Tag of the per-rank results sent to rank 0 by {@link #combine}. */
    static final int TAG_RESULT = 112;

    private static final long ALIGN = 4096;

    private CollectiveBench() {
    }

    /** The collectives {@code hcomm perf} measures, named as on its command line. */
    enum Coll {
        ALLREDUCE(true, false, false),
        BROADCAST(false, true, false),
        REDUCE(true, true, false),
        ALLGATHER(false, false, true),
        REDUCESCATTER(true, false, true),
        GATHER(false, true, true),
        SCATTER(false, true, true),
        ALLTOALL(false, false, true),
        SENDRECV(false, false, false),
        /** The V forms, measured with equal counts and displacements at the blocks (as OSU's *v tests). */
        ALLGATHERV(ALLGATHER),
        GATHERV(GATHER),
        SCATTERV(SCATTER),
        ALLTOALLV(ALLTOALL);

        /** Reduces with a {@link ReduceOp}. */
        final boolean reduces;
        /** Has a root rank. */
        final boolean rooted;
        /** The size is the buffer of all ranks' blocks; the count is per block. */
        final boolean blocked;
        private final Coll base;

        Coll(boolean reduces, boolean rooted, boolean blocked) {
            this.reduces = reduces;
            this.rooted = rooted;
            this.blocked = blocked;
            this.base = null;
        }

        Coll(Coll base) {
            this.reduces = base.reduces;
            this.rooted = base.rooted;
            this.blocked = base.blocked;
            this.base = base;
        }

        /** The collective whose buffers, inputs and results this one has (itself, or the plain form of a V form). */
        Coll base() {
            return base == null ? this : base;
        }

        /** A V form (counts and displacements per rank). */
        boolean isV() {
            return base != null;
        }

        /** The command-line name: {@code allreduce}, {@code reducescatter} ... */
        String cliName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** The collective named {@code name} on the command line, if any. */
        static Optional<Coll> of(String name) {
            for (Coll c : values()) {
                if (c.cliName().equals(name)) return Optional.of(c);
            }
            return Optional.empty();
        }

        /**
         * nccl-tests' bus bandwidth factor on {@code n} ranks (busbw = algbw × factor): allreduce 2(n−1)/n;
         * allgather, reducescatter, alltoall, gather, scatter (n−1)/n; broadcast, reduce, sendrecv 1.
         */
        double busFactor(int n) {
            return switch (base()) {
                case ALLREDUCE -> 2.0 * (n - 1) / n;
                case ALLGATHER, REDUCESCATTER, ALLTOALL, GATHER, SCATTER -> (double) (n - 1) / n;
                case BROADCAST, REDUCE, SENDRECV -> 1.0;
                default -> throw new AssertionError(this);
            };
        }

        /** The factor as a formula, for headers. */
        String busFactorFormula() {
            return switch (base()) {
                case ALLREDUCE -> "2(n-1)/n";
                case ALLGATHER, REDUCESCATTER, ALLTOALL, GATHER, SCATTER -> "(n-1)/n";
                case BROADCAST, REDUCE, SENDRECV -> "1";
                default -> throw new AssertionError(this);
            };
        }
    }

    /**
     * One size of a measurement.
     *
     * @param coll   the collective
     * @param bytes  requested size (see the class comment); {@link #shape} rounds it
     * @param type   element type
     * @param op     reduction (used by reducing collectives only)
     * @param root   root rank (used by rooted collectives only)
     * @param iters  timed calls
     * @param warmup untimed calls before them
     */
    record Test(Coll coll, long bytes, DataType type, ReduceOp op, int root, int iters, int warmup, Mem mem, boolean inPlace) {
        /** A test on {@link Mem#NATIVE} buffers. */
        Test(Coll coll, long bytes, DataType type, ReduceOp op, int root, int iters, int warmup) {
            this(coll, bytes, type, op, root, iters, warmup, Mem.NATIVE);
        }

        /** An out-of-place test. */
        Test(Coll coll, long bytes, DataType type, ReduceOp op, int root, int iters, int warmup, Mem mem) {
            this(coll, bytes, type, op, root, iters, warmup, mem, false);
        }

        /** Checks that {@code inPlace} is asked of all-reduce only (broadcast is in place anyway). */
        Test {
            if (inPlace && coll != Coll.ALLREDUCE) {
                throw new IllegalArgumentException("--in-place applies to allreduce only (its receive buffer is then its send"
                        + " buffer), not to " + coll.cliName());
            }
        }
    }

    /**
     * Where the buffers come from ({@code --mem}): NATIVE off-heap memory of {@link Arena#ofShared()} (the default);
     * POOL registered buffers of {@code comm.memory()}, which same-host ranks read in place (zero-copy collectives);
     * HEAP Java arrays ({@code byte[]}, {@code short[]}, {@code float[]} or {@code double[]} by element size) as heap
     * segments through the same {@code MemorySegment} calls.
     */
    enum Mem { NATIVE, POOL, HEAP }

    /**
     * The buffers of one call on {@code n} ranks.
     *
     * @param count     the count column: elements per block for blocked collectives, elements otherwise; the
     *                  count argument of the call
     * @param bytes     the size column: bytes of the largest buffer, what algbw divides
     * @param sendBytes bytes of each rank's send buffer (broadcast: its one buffer)
     * @param recvBytes bytes of each rank's receive buffer
     */
    record Shape(long count, long bytes, long sendBytes, long recvBytes) {
    }

    /** The buffers for {@code requestedBytes} of {@code coll} with {@code type} on {@code n} ranks (rounded down, at least one element per block). */
    static Shape shape(Coll coll, long requestedBytes, int n, DataType type) {
        long es = type.byteSize();
        if (!coll.blocked) {
            long count = Math.max(1, requestedBytes / es);
            long bytes = count * es;
            return new Shape(count, bytes, bytes, bytes);
        }
        long count = Math.max(1, requestedBytes / (es * n));
        long block = count * es;
        long all = Math.multiplyExact(block, n);
        return switch (coll.base()) {
            case ALLGATHER, GATHER -> new Shape(count, all, block, all);
            case REDUCESCATTER, SCATTER -> new Shape(count, all, all, block);
            case ALLTOALL -> new Shape(count, all, all, all);
            default -> throw new AssertionError(coll);
        };
    }

    /**
     * What one rank measured.
     *
     * @param shape  the buffers
     * @param timeUs time per call in microseconds: this rank's mean over the timed loop, or after {@link #combine}
     *               on rank 0 the maximum over ranks of the means
     * @param wrong  wrong elements found by the check (after {@link #combine} on rank 0: of every rank), -1 when
     *               not checked
     * @param perCallNanos MEDIAN timing: this rank's time of each call (null for MEAN)
     * @param tailNanos    the median, 99th percentile and maximum of the time per call, in ns: MEAN, this rank's
     *                     back-to-back calls (after {@link #combine} on rank 0: the largest of every rank's);
     *                     MEDIAN, after {@link #combine}, of the slowest rank's time of each call; null if not known
     */
    record Result(Shape shape, double timeUs, long wrong, long[] perCallNanos, long[] tailNanos) {
        Result(Shape shape, double timeUs, long wrong) {
            this(shape, timeUs, wrong, null, null);
        }

        /** Size / time in GB/s (1e9 B/s). */
        double algbwGBs() {
            return timeUs > 0 ? shape.bytes() / (timeUs * 1e3) : 0;
        }
    }

    /** Runs {@code t} on this rank of {@code comm} (every rank calls it with the same test). */
    static Result run(Communicator comm, Test t, boolean check) {
        return run(comm, t, check, Timing.MEAN);
    }

    /**
     * How a size's time is taken. MEAN: nccl-tests' — the timed calls run back to back and the time is the loop's
     * time / iters (per rank; {@link #combine} takes the slowest rank). MEDIAN: OSU's and the Open MPI baseline's
     * (../shared/peers/mpi_bench.c) — a barrier before every call, each call timed on its own, the slowest rank's
     * time per call, and the median of those.
     */
    enum Timing { MEAN, MEDIAN }

    /** Runs {@code t} on this rank of {@code comm} (every rank calls it with the same test), timed as {@code timing} says. */
    static Result run(Communicator comm, Test t, boolean check, Timing timing) {
        if (t.iters() < 1) throw new IllegalArgumentException("iters must be >= 1, was " + t.iters());
        Call call;
        try (Arena arena = Arena.ofShared(); Call c = new Call(comm, t, arena)) {
            call = c;
            call.fillInputs();
            for (int i = 0; i < t.warmup(); i++) call.run();
            comm.barrier();
            long[] perCall = new long[t.iters()];
            long t0 = System.nanoTime();
            if (timing == Timing.MEAN) {
                // back to back, one clock read per call: the calls' times add up to the loop's
                long before = t0;
                for (int i = 0; i < t.iters(); i++) {
                    call.run();
                    long now = System.nanoTime();
                    perCall[i] = now - before;
                    before = now;
                }
            } else {
                for (int i = 0; i < t.iters(); i++) {
                    comm.barrier();
                    long c0 = System.nanoTime();
                    call.run();
                    perCall[i] = System.nanoTime() - c0;
                }
            }
            long elapsed = System.nanoTime() - t0;
            long wrong = -1;
            if (check) {
                call.prepareCheck();
                call.run();
                wrong = call.countWrong();
            }
            if (timing == Timing.MEAN) return new Result(call.shape, elapsed / 1e3 / t.iters(), wrong, null, tails(perCall));
            return new Result(call.shape, elapsed / 1e3 / t.iters(), wrong, perCall, null);
        }
    }

    /**
     * Brings every rank's result to rank 0 (point to point, so the measured collectives do not report on
     * themselves): rank 0 returns the maximum time and the total of wrong elements (-1 if unchecked); the other
     * ranks return their own result.
     */
    static Result combine(Communicator comm, Result mine) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment msg = arena.allocate(16, 8);
            if (comm.rank() != 0) {
                msg.set(JAVA_DOUBLE, 0, mine.timeUs());
                msg.set(JAVA_LONG, 8, mine.wrong());
                comm.send(msg, 0, TAG_RESULT);
                if (mine.perCallNanos() != null) comm.send(mine.perCallNanos(), 0, TAG_RESULT);
                if (mine.tailNanos() != null) comm.send(mine.tailNanos(), 0, TAG_RESULT);
                return mine;
            }
            double time = mine.timeUs();
            long wrong = mine.wrong();
            long[] tails = mine.tailNanos() == null ? null : mine.tailNanos().clone();
            long[] theirTails = new long[3];
            for (int r = 1; r < comm.size(); r++) {
                comm.recv(msg, r, TAG_RESULT);
                time = Math.max(time, msg.get(JAVA_DOUBLE, 0));
                long w = msg.get(JAVA_LONG, 8);
                wrong = wrong < 0 || w < 0 ? Math.max(wrong, w) : wrong + w;
                if (tails != null) {
                    comm.recv(theirTails, r, TAG_RESULT);
                    for (int k = 0; k < 3; k++) tails[k] = Math.max(tails[k], theirTails[k]);
                }
            }
            if (mine.perCallNanos() != null) {
                long[] slowest = mine.perCallNanos().clone();
                long[] theirs = new long[slowest.length];
                for (int r = 1; r < comm.size(); r++) {
                    comm.recv(theirs, r, TAG_RESULT);
                    for (int i = 0; i < slowest.length; i++) slowest[i] = Math.max(slowest[i], theirs[i]);
                }
                tails = tails(slowest);
                time = P2pBench.median(slowest) / 1e3;
            }
            return new Result(mine.shape(), time, wrong, mine.perCallNanos(), tails);
        }
    }

    /** The median, 99th percentile and maximum of {@code nanos} (nearest rank; {@code nanos} is not changed). */
    static long[] tails(long[] nanos) {
        long[] sorted = nanos.clone();
        java.util.Arrays.sort(sorted);
        int m = sorted.length;
        return new long[] {sorted[(m - 1) / 2], sorted[(int) Math.ceil(0.99 * m) - 1], sorted[m - 1]};
    }

    /** The buffers of one test on this rank, the blocking call and its check. */
    static final class Call implements AutoCloseable {
        final java.util.List<io.hcomm4j.RegisteredBuffer> pooled = new java.util.ArrayList<>();
        final Communicator comm;
        final Test t;
        final Shape shape;
        final int rank;
        final int n;
        final int es;
        final MemorySegment send;
        final MemorySegment recv;
        final Runnable op;

        Call(Communicator comm, Test t, Arena arena) {
            this.comm = comm;
            this.t = t;
            this.rank = comm.rank();
            this.n = comm.size();
            this.es = t.type().byteSize();
            this.shape = shape(t.coll(), t.bytes(), n, t.type());
            if (t.coll().rooted && (t.root() < 0 || t.root() >= n)) {
                throw new IllegalArgumentException("root " + t.root() + " is out of range for " + n + " ranks");
            }
            boolean root = rank == t.root();
            // buffers a rank does not use (non-root receive of reduce and gather, send of scatter) are one element
            Coll base = t.coll().base();
            long sendBytes = base == Coll.SCATTER && !root ? es : shape.sendBytes();
            long recvBytes = (base == Coll.REDUCE || base == Coll.GATHER) && !root ? es : shape.recvBytes();
            this.send = buffer(sendBytes, arena);
            this.recv = t.coll() == Coll.BROADCAST || t.inPlace() ? send : buffer(recvBytes, arena);
            this.op = op();
        }

        private MemorySegment buffer(long bytes, Arena arena) {
            return switch (t.mem()) {
                case NATIVE -> arena.allocate(bytes, ALIGN);
                case POOL -> {
                    io.hcomm4j.RegisteredBuffer b = comm.memory().allocate(bytes);
                    pooled.add(b);
                    yield b.segment();
                }
                case HEAP -> {
                    int len = Math.toIntExact((bytes + es - 1) / es);
                    yield switch (es) {
                        case 1 -> MemorySegment.ofArray(new byte[len]);
                        case 2 -> MemorySegment.ofArray(new short[len]);
                        case 4 -> MemorySegment.ofArray(new float[len]);
                        default -> MemorySegment.ofArray(new double[len]);
                    };
                }
            };
        }

        @Override
        public void close() {
            for (io.hcomm4j.RegisteredBuffer b : pooled) b.close();
        }

        void run() {
            op.run();
        }

        private Runnable op() {
            long c = shape.count();
            DataType ty = t.type();
            ReduceOp ro = t.op();
            int root = t.root();
            int next = (rank + 1) % n;
            int prev = (rank + n - 1) % n;
            long[] counts = new long[n];
            long[] displs = new long[n];
            for (int r = 0; r < n; r++) {
                counts[r] = c;
                displs[r] = r * c;
            }
            return switch (t.coll()) {
                case ALLGATHERV -> () -> comm.allGatherV(send, recv, counts, displs, ty);
                case GATHERV -> () -> comm.gatherV(send, recv, counts, displs, ty, root);
                case SCATTERV -> () -> comm.scatterV(send, counts, displs, recv, ty, root);
                case ALLTOALLV -> () -> comm.allToAllV(send, counts, displs, recv, counts, displs, ty);
                case ALLREDUCE -> () -> comm.allReduce(send, recv, c, ty, ro);
                case BROADCAST -> () -> comm.broadcast(send, c, ty, root);
                case REDUCE -> () -> comm.reduce(send, recv, c, ty, ro, root);
                case ALLGATHER -> () -> comm.allGather(send, recv, c, ty);
                case REDUCESCATTER -> () -> comm.reduceScatter(send, recv, c, ty, ro);
                case GATHER -> () -> comm.gather(send, recv, c, ty, root);
                case SCATTER -> () -> comm.scatter(send, recv, c, ty, root);
                case ALLTOALL -> () -> comm.allToAll(send, recv, c, ty);
                case SENDRECV -> () -> {
                    CommFuture<Status> r = comm.recvAsync(recv, prev, TAG_SENDRECV);
                    CommFuture<Void> s = comm.sendAsync(send, next, TAG_SENDRECV);
                    s.await();
                    r.await();
                };
            };
        }

        /** Writes this rank's inputs into {@code send} (once; the timed calls and the check use them). */
        void fillInputs() {
            long c = shape.count();
            int root = t.root();
            switch (t.coll().base()) {
                case ALLREDUCE, REDUCE, REDUCESCATTER -> {
                    long elems = shape.sendBytes() / es;
                    for (long i = 0; i < elems; i++) setBits(send, es, i, encode(t.type(), input(t.op(), t.type(), n, rank, i)));
                }
                case BROADCAST -> {
                    if (rank == root) fillPattern(send, 0, c, root);
                }
                case ALLGATHER, GATHER -> fillPattern(send, 0, c, rank);
                case SCATTER -> {
                    if (rank == root) {
                        for (int d = 0; d < n; d++) fillPattern(send, d * c, c, scatterSalt(root, d));
                    }
                }
                case ALLTOALL -> {
                    for (int d = 0; d < n; d++) fillPattern(send, d * c, c, (long) rank * n + d);
                }
                case SENDRECV -> fillPattern(send, 0, c, rank);
            }
        }

        private void fillPattern(MemorySegment seg, long from, long count, long salt) {
            for (long j = 0; j < count; j++) setBits(seg, es, from + j, pattern(salt, j, es));
        }

        /** Elements this rank checks after the check call (0: it receives nothing, like a non-root of reduce). */
        private long checkedElements() {
            boolean root = rank == t.root();
            return switch (t.coll().base()) {
                case REDUCE, GATHER -> root ? shape.recvBytes() / es : 0;
                default -> shape.recvBytes() / es;
            };
        }

        /** The bits element {@code i} of {@code recv} must hold after the call. */
        private long expected(long i) {
            long c = shape.count();
            return switch (t.coll().base()) {
                case ALLREDUCE, REDUCE -> reference(t.op(), t.type(), n, i);
                case REDUCESCATTER -> reference(t.op(), t.type(), n, rank * c + i);
                case BROADCAST -> pattern(t.root(), i, es);
                case ALLGATHER, GATHER -> pattern(i / c, i % c, es);
                case SCATTER -> pattern(scatterSalt(t.root(), rank), i, es);
                case ALLTOALL -> pattern((i / c) * n + rank, i % c, es);
                case SENDRECV -> pattern((rank + n - 1) % n, i, es);
                default -> throw new AssertionError(t.coll()); // V forms have their base's results
            };
        }

        /** Fills what will be checked with the complement of the expected bits (broadcast's root: its data again). */
        void prepareCheck() {
            if (t.coll() == Coll.BROADCAST && rank == t.root() || t.inPlace()) {
                fillInputs(); // in place, the timed calls' outputs were the next calls' inputs
                return;
            }
            long mask = mask(es);
            long elems = checkedElements();
            for (long i = 0; i < elems; i++) setBits(recv, es, i, ~expected(i) & mask);
        }

        long countWrong() {
            long wrong = 0;
            long elems = checkedElements();
            for (long i = 0; i < elems; i++) {
                if (getBits(recv, es, i) != expected(i)) wrong++;
            }
            return wrong;
        }
    }

    private static long scatterSalt(int root, int dest) {
        return ((long) root << 24) | dest;
    }
}
