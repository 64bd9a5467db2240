package io.hcomm4j.examples;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Memory;
import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Window;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;

/**
 * The parameter server of {@link ParameterServer} on one-sided communication: the servers only expose their shards in
 * a {@link Window}, and the workers pull parameters with {@code get} and push updates with {@code accumulate(SUM)}
 * straight into the servers' memory; no server code is in the loop. The first {@code --servers} ranks are servers, the
 * others workers (or, with {@code --colocated 1}, every rank is a worker and the first ones serve as well).
 *
 * <p>The model and the data are {@link ParameterServer}'s (a linear regression with 65,536 parameters, 16 rows of
 * synthetic data per worker, the gradient of ½‖Xw − y‖²; update {@code w -= lr / workers × gradient}). What lives in
 * the windows:
 * <ul>
 *   <li>{@code params}: server s's block is its shard of the parameters, then one push counter per worker (how many
 *       of that worker's pushes the shard holds). A worker's push to server s is one {@code accumulate} of its update
 *       for the shard with a 1 for its own counter at the end; its pull is a {@code get} of the shard and an atomic read
 *       of the counters ({@code getAccumulate} with {@code NO_OP}).</li>
 *   <li>{@code clocks} (rank 0 only): one {@code INT64} per worker, the number of steps it has finished, bumped with
 *       {@code fetchAndOp(SUM, 1)} once its pushes are applied ({@code flush}), read with {@code fetchAndOp(NO_OP)}.</li>
 * </ul>
 * The workers hold a passive-target epoch ({@code lockAll}) for the whole run; a server that is not also a worker
 * makes the windows and waits at a barrier until training is over: over TCP its progress engine applies the workers'
 * operations while its application thread sits there.
 *
 * <p><b>Fixed point, for exact sums.</b> Several workers accumulate into the same elements, and the order their
 * pushes are applied in is the order they arrive. Float addition is not associative: FLOAT32 accumulates would give
 * results that differ in the last bits from run to run. So the windows hold the parameters as {@code INT64} fixed
 * point, {@code round(p × 2^32)}, and a worker pushes its update rounded to that grid: integer addition is exact and
 * associative, so the sum of the pushes does not depend on the order they land in, and the run equals the
 * single-process computation bit for bit. The grid (2^-32 ≈ 2.3e-10) is far finer than the updates, and the range
 * (±2^31) far wider than the parameters (a few units), so the rounding does not change training noticeably; what
 * matters is that a worker's rounded update is the same here and in the reference.
 *
 * <p><b>Modes</b> ({@code --mode}):
 * <ul>
 *   <li>{@code sync} (bulk-synchronous): a step is pull, compute, barrier, push (then {@code flush}), barrier, on the
 *       workers' communicator: every worker pulls the same parameters, and the next pull sees every push of the step.
 *       Check: the final parameters (each server's shard, and what each worker pulls at the end) equal bit for bit
 *       those of the same steps computed sequentially in this program, and every pull of step c finds exactly c
 *       pushes of every worker in the counters.</li>
 *   <li>{@code ssp} (bounded staleness, {@code --staleness s}): no barrier. A worker about to begin step c (its
 *       clock is c) waits until the slowest worker's clock is at least c - s, then pulls: it sees every push of the
 *       steps before c - s, and maybe some newer ones (a pull that overlaps a push may see part of it). Check: every
 *       pull of step c finds between c - s and c + s + 1 pushes of every worker (exactly c of its own); at the end
 *       every server holds exactly the sum of every push made (the workers all-reduce their pushes' sums), which is
 *       what each worker pulls; and the loss fell.</li>
 * </ul>
 * In both modes each worker's squared error on its own rows must fall to less than a tenth. {@code --jitter-ms J}
 * makes one worker per step (drawn from a fixed seed) sleep J ms after computing, as a straggler would: bulk-synchronous
 * steps all wait for it, bounded staleness lets the others run up to s steps ahead. Each worker prints steps/s and the
 * bytes it moved; exit code 1 if a check fails.
 *
 * <p>Run: {@code scripts/example.sh rma-parameter-server -n 4 [--mode ssp --staleness 2]} (2 servers, 2 workers), or as
 * the command of any launcher ({@code java -cp hcomm-examples.jar io.hcomm4j.examples.RmaParameterServer [--servers S]
 * [--colocated 0|1] [--mode sync|ssp] [--staleness 2] [--steps 20] [--lr 0.5] [--jitter-ms 0]}). By default half of
 * the ranks (at least one) are servers.
 */
public final class RmaParameterServer {
    static final String NAME = "rma-parameter-server";

    static final int PARAMS = ParameterServer.PARAMS;
    static final int ROWS = ParameterServer.ROWS;
    /** Fixed point: the parameter p is the long round(p × 2^32). */
    static final double ONE = 0x1p32;
    static final long SEED = 8_000_000L;

    private RmaParameterServer() {
    }

    /** Runs one rank; see the class comment for the options. */
    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(new Examples.Options(args, "servers", "colocated", "mode", "staleness", "steps",
                "lr", "jitter-ms")));
    }

    /** The options, checked. {@code staleness} is -1 for the bulk-synchronous mode. */
    record Settings(int steps, float lr, int staleness, int jitterMs) {
        boolean sync() {
            return staleness < 0;
        }

        String mode() {
            return sync() ? "sync" : "ssp (staleness " + staleness + ")";
        }
    }

    static boolean run(Examples.Options options) throws InterruptedException {
        String mode = options.stringValue("mode", "sync");
        if (!mode.equals("sync") && !mode.equals("ssp")) throw new IllegalArgumentException("--mode is sync or ssp, not " + mode);
        int staleness = options.intValue("staleness", 2);
        if (staleness < 0) throw new IllegalArgumentException("--staleness must be at least 0, not " + staleness);
        int steps = options.intValue("steps", 20);
        if (steps < 1) throw new IllegalArgumentException("--steps must be at least 1, not " + steps);
        Settings settings = new Settings(steps, (float) options.doubleValue("lr", 0.5), mode.equals("sync") ? -1 : staleness,
                options.intValue("jitter-ms", 0));

        try (Hcomm hcomm = Hcomm.init()) {
            Communicator world = hcomm.world();
            int rank = world.rank();
            int size = world.size();
            boolean colocated = options.intValue("colocated", 0) != 0;
            int servers = options.intValue("servers", Math.max(1, size / 2));
            if (servers < 1 || servers > size || (!colocated && servers == size)) {
                throw new IllegalArgumentException("a parameter server job needs at least one server and one worker: "
                        + size + " ranks, " + servers + " servers" + (colocated ? " (colocated)" : ""));
            }
            Layout layout = new Layout(servers, colocated ? size : size - servers, colocated);
            int worker = layout.workerOf(rank);

            // The workers' own communicator, for the bulk-synchronous barriers (a server that is not a worker is not in them).
            Communicator workers = world.split(worker >= 0 ? 0 : Communicator.UNDEFINED, rank);
            boolean ok;
            // Collective on the world: a server exposes its block (zeroed: the parameters start at 0), a worker that is
            // not a server nothing; the clocks (used by ssp) live on rank 0.
            try (Window params = world.allocateWindow(rank < servers ? layout.blockLongs(rank) * Long.BYTES : 0);
                 Window clocks = world.allocateWindow(rank == 0 ? (long) layout.workers() * Long.BYTES : 0);
                 Worker w = worker >= 0
                         ? new Worker(world.memory(), workers, params, clocks, layout, worker, settings, hcomm.config().timeout())
                         : null) {
                if (w != null) w.train();
                // That is all a server's code does: the workers moved the data. After this barrier every push is
                // applied (a worker flushes its pushes before it gets here).
                world.barrier();

                // What the parameters must be: the single-process run (sync), or the sum of everything pushed (ssp).
                long[] expected;
                if (settings.sync()) {
                    expected = referenceTraining(layout.workers(), settings.steps(), settings.lr());
                } else {
                    expected = w != null ? w.pushedSum.clone() : new long[PARAMS];
                    world.allReduce(expected, ReduceOp.SUM);
                }
                String what = settings.sync() ? "the single-process result" : "the sum of every worker's pushes";

                List<String> roles = new ArrayList<>();
                List<String> details = new ArrayList<>();
                ok = true;
                if (w != null) {
                    // what carries the windows' traffic to the servers: shm (same host: the worker maps their memory) or tcp
                    String via = String.join("/", IntStream.range(0, servers).filter(s -> s != rank)
                            .mapToObj(hcomm::transportTo).distinct().toList());
                    ok &= w.finish(expected, what, via.isEmpty() ? "self" : via, details);
                    roles.add("worker " + worker + " of " + layout.workers());
                }
                if (rank < servers) {
                    ok &= checkShard(params.segment(), layout, rank, settings, expected, what, details);
                    roles.add("server " + rank + " of " + servers);
                }
                Examples.result(NAME, rank, size, "(" + String.join(", ", roles) + ")", String.join("; ", details), ok);
            }
            if (workers != null) workers.close();
            return ok;
        }
    }

    /**
     * Who is where. Shard s is parameters {@code [from(s), from(s + 1))}; server s's block is that shard, then one push
     * counter per worker. Worker k is world rank {@code servers + k}, or rank k when colocated.
     */
    record Layout(int servers, int workers, boolean colocated) {
        long from(int s) {
            return (long) PARAMS * s / servers;
        }

        long length(int s) {
            return from(s + 1) - from(s);
        }

        /** Longs in server s's block: its shard's parameters, then a counter per worker. */
        long blockLongs(int s) {
            return length(s) + workers;
        }

        /** Where server s's block is in a worker's buffer of all blocks (what it pulls, what it pushes). */
        MemorySegment block(MemorySegment all, int s) {
            return all.asSlice((from(s) + (long) s * workers) * Long.BYTES, blockLongs(s) * Long.BYTES);
        }

        long allLongs() {
            return PARAMS + (long) servers * workers;
        }

        /** The worker index of world rank {@code rank}, or -1 for a server that is not a worker. */
        int workerOf(int rank) {
            return colocated ? rank : rank >= servers ? rank - servers : -1;
        }
    }

    // ------------------------------------------------------------------------------------------------------ the rules

    /** A stored parameter as the float the model computes with. */
    static float param(long fixed) {
        return (float) (fixed / ONE);
    }

    /** What a worker adds to a stored parameter for its gradient element g: {@code -scale × g} on the fixed-point grid. */
    static long delta(float scale, float g) {
        return Math.round(-(double) (scale * g) * ONE);
    }

    /** The worker that sleeps {@code --jitter-ms} at step {@code step}. */
    static int straggler(int step, int workers) {
        return new SplittableRandom(SEED + step).nextInt(workers);
    }

    // ------------------------------------------------------------------------------------------------------ worker

    /** One worker: its data, its buffers (registered memory: over TCP the transport moves them without a copy), what it counted. */
    static final class Worker implements AutoCloseable {
        private final Communicator workers;
        private final Window params;
        private final Window clocks;
        private final Layout layout;
        private final int k;
        private final Settings settings;
        private final long timeoutNanos;
        private final ParameterServer.Rows rows;
        private final RegisteredBuffer pulledBuf;
        private final RegisteredBuffer pushBuf;
        private final MemorySegment w = MemorySegment.ofArray(new float[PARAMS]);
        private final MemorySegment grad = MemorySegment.ofArray(new float[PARAMS]);
        /** Per element, the sum of everything this worker pushed (the bounded-staleness check). */
        final long[] pushedSum = new long[PARAMS];

        private double firstLoss;
        private double seconds;
        private long pulledBytes;
        private long pushedBytes;
        private long clockOps;
        private int waits;
        private long waitNanos;
        private long maxLead;
        private String counterError;

        Worker(Memory pool, Communicator workers, Window params, Window clocks, Layout layout, int k, Settings settings,
               Duration timeout) {
            this.workers = workers;
            this.params = params;
            this.clocks = clocks;
            this.layout = layout;
            this.k = k;
            this.settings = settings;
            this.timeoutNanos = timeout.toNanos();
            this.rows = ParameterServer.Rows.of(k);
            this.pulledBuf = pool.allocate(DataType.INT64, layout.allLongs());
            this.pushBuf = pool.allocate(DataType.INT64, layout.allLongs());
        }

        void train() throws InterruptedException {
            // One passive-target epoch on every rank for the whole run: the targets take no part in it.
            params.lockAll();
            clocks.lockAll();
            workers.barrier();                                   // start the clock together
            long t0 = System.nanoTime();
            float scale = settings.lr() / layout.workers();
            for (int c = 0; c < settings.steps(); c++) {
                if (!settings.sync()) waitForTheSlowest(c);
                pull(c, settings.sync() ? c : c - settings.staleness(), settings.sync() ? c : c + settings.staleness() + 1);
                if (c == 0) firstLoss = rows.loss(w);
                rows.gradient(w, grad);
                if (settings.jitterMs() > 0 && straggler(c, layout.workers()) == k) Thread.sleep(settings.jitterMs());
                // sync: every worker has pulled step c's parameters before anyone pushes step c's update
                if (settings.sync()) workers.barrier();
                push(scale);
                if (settings.sync()) {
                    workers.barrier();                           // every push of step c is applied before any pull of c + 1
                } else {
                    long was = clocks.fetchAndOp(1, 0, (long) k * Long.BYTES, DataType.INT64, ReduceOp.SUM);
                    clockOps++;
                    if (was != c && counterError == null) counterError = "own clock was " + was + " at the end of step " + c;
                }
            }
            seconds = (System.nanoTime() - t0) / 1e9;
        }

        /** Bounded staleness: waits until every worker's clock (steps finished) is at least {@code c - s}. */
        private void waitForTheSlowest(int c) {
            long need = c - settings.staleness();
            long start = System.nanoTime();
            for (int attempt = 0; ; attempt++) {
                List<CommFuture<Long>> reads = new ArrayList<>();
                for (int j = 0; j < layout.workers(); j++) {
                    reads.add(clocks.fetchAndOpAsync(0, 0, (long) j * Long.BYTES, DataType.INT64, ReduceOp.NO_OP));
                }
                long slowest = Long.MAX_VALUE;
                for (CommFuture<Long> r : reads) slowest = Math.min(slowest, r.await());
                clockOps += layout.workers();
                if (slowest >= need) {
                    maxLead = Math.max(maxLead, c - slowest);
                    if (attempt > 0) {
                        waits++;
                        waitNanos += System.nanoTime() - start;
                    }
                    return;
                }
                if (System.nanoTime() - start > timeoutNanos) {
                    throw new IllegalStateException("worker " + k + " at clock " + c + ": the slowest worker's clock stayed at "
                            + slowest + " (below " + need + ") for " + Duration.ofNanos(timeoutNanos));
                }
                // Spin briefly, then sleep, longer and longer (up to 1 ms): the worker we wait for may need this core.
                if (attempt < 20) Thread.onSpinWait();
                else LockSupport.parkNanos(Math.min(1_000_000L, 20_000L << Math.min(6, (attempt - 20) / 4)));
            }
        }

        /**
         * Pull: from every server, a {@code get} of its shard and an atomic read of its push counters (in bounded
         * staleness other workers' pushes may land meanwhile: {@code getAccumulate(NO_OP)} reads each counter whole),
         * all in flight at once. Then the parameters as floats, and the counters checked against {@code [lo, hi]} (this
         * worker's own exactly {@code done}: its pushes were flushed).
         */
        private void pull(int done, long lo, long hi) {
            MemorySegment all = pulledBuf.segment();
            MemorySegment noOp = pushBuf.segment();              // not read for NO_OP; the same size as the counters
            List<CommFuture<Void>> gets = new ArrayList<>();
            for (int s = 0; s < layout.servers(); s++) {
                MemorySegment block = layout.block(all, s);
                long shardBytes = layout.length(s) * Long.BYTES;
                long counterBytes = (long) layout.workers() * Long.BYTES;
                gets.add(params.getAsync(block.asSlice(0, shardBytes), s, 0));
                gets.add(params.getAccumulateAsync(noOp.asSlice(0, counterBytes), block.asSlice(shardBytes, counterBytes), s,
                        shardBytes, DataType.INT64, ReduceOp.NO_OP));
                pulledBytes += block.byteSize();
            }
            for (CommFuture<Void> g : gets) g.await();
            for (int s = 0; s < layout.servers(); s++) {
                MemorySegment block = layout.block(all, s);
                long n = layout.length(s);
                long from = layout.from(s);
                for (long i = 0; i < n; i++) w.setAtIndex(JAVA_FLOAT, from + i, param(block.getAtIndex(JAVA_LONG, i)));
                for (int j = 0; j < layout.workers(); j++) {
                    long pushes = block.getAtIndex(JAVA_LONG, n + j);
                    boolean fine = j == k ? pushes == done : pushes >= lo && pushes <= hi;
                    if (!fine && counterError == null) {
                        counterError = Examples.fmt("pull at step %d: server %d held %d pushes of worker %d, expected %s", done,
                                s, pushes, j, j == k || lo == hi ? Long.toString(done) : lo + " to " + hi);
                    }
                }
            }
        }

        /** Push: to every server, its part of the update and a 1 in this worker's counter; then flush (remote completion). */
        private void push(float scale) {
            MemorySegment all = pushBuf.segment();
            List<CommFuture<Void>> accs = new ArrayList<>();
            for (int s = 0; s < layout.servers(); s++) {
                MemorySegment block = layout.block(all, s);
                long n = layout.length(s);
                long from = layout.from(s);
                for (long i = 0; i < n; i++) {
                    long d = delta(scale, grad.getAtIndex(JAVA_FLOAT, from + i));
                    block.setAtIndex(JAVA_LONG, i, d);
                    pushedSum[(int) (from + i)] += d;
                }
                for (int j = 0; j < layout.workers(); j++) block.setAtIndex(JAVA_LONG, n + j, j == k ? 1 : 0);
                accs.add(params.accumulateAsync(block, s, 0, DataType.INT64, ReduceOp.SUM));
                pushedBytes += block.byteSize();
            }
            for (CommFuture<Void> a : accs) a.await();           // local completion: the buffer may be reused
            for (int s = 0; s < layout.servers(); s++) params.flush(s);   // remote completion: applied at the server
        }

        @Override
        public void close() {
            pulledBuf.close();
            pushBuf.close();
        }

        /** After training (every push applied): the last pull, the checks, the numbers. */
        boolean finish(long[] expected, String what, String via, List<String> details) {
            pull(settings.steps(), settings.steps(), settings.steps());
            long[] pulled = new long[PARAMS];
            double finalLoss = rows.loss(w);
            long mismatch = -1;
            MemorySegment all = pulledBuf.segment();
            for (int s = 0; s < layout.servers(); s++) {
                MemorySegment block = layout.block(all, s);
                for (long i = 0; i < layout.length(s); i++) {
                    long p = block.getAtIndex(JAVA_LONG, i);
                    pulled[(int) (layout.from(s) + i)] = p;
                    if (p != expected[(int) (layout.from(s) + i)] && mismatch < 0) mismatch = layout.from(s) + i;
                }
            }
            clocks.unlockAll();
            params.unlockAll();

            long bytes = pulledBytes + pushedBytes + clockOps * Long.BYTES;
            String sspPart = settings.sync() ? "" : Examples.fmt(", %d clock ops, waited for the slowest worker at %d steps"
                    + " (%.0f ms), at most %d steps ahead of it", clockOps, waits, waitNanos / 1e6, maxLead);
            details.add(Examples.fmt("%s over %s, %d steps, %.1f steps/s, moved %.1f MB (%.1f MB/s)%s, squared error on its"
                            + " %d rows %.4g -> %.4g, every pull's push counters %s, pulled parameters (hash %016x) %s %s",
                    settings.mode(), via, settings.steps(), settings.steps() / seconds, bytes / 1e6, bytes / 1e6 / seconds,
                    sspPart, ROWS, firstLoss, finalLoss, counterError == null ? "right" : "WRONG (" + counterError + ")",
                    Examples.hash(pulled), mismatch < 0 ? "equal bit for bit" : "DIFFER (first at parameter " + mismatch + ") from",
                    what));
            return counterError == null && mismatch < 0 && finalLoss < firstLoss / 10;
        }
    }

    // ------------------------------------------------------------------------------------------------------ server

    /** A server's check of its own block, read locally: the shard equals {@code expected}, every counter is the step count. */
    private static boolean checkShard(MemorySegment block, Layout layout, int s, Settings settings, long[] expected,
                                      String what, List<String> details) {
        long n = layout.length(s);
        long from = layout.from(s);
        long mismatch = -1;
        for (long i = 0; i < n; i++) {
            if (block.getAtIndex(JAVA_LONG, i) != expected[(int) (from + i)]) {
                mismatch = from + i;
                break;
            }
        }
        long pushes = 0;
        boolean counters = true;
        for (int j = 0; j < layout.workers(); j++) {
            long c = block.getAtIndex(JAVA_LONG, n + j);
            pushes += c;
            counters &= c == settings.steps();
        }
        details.add(Examples.fmt("%s, %d steps: %d pushes into params [%d, %d) applied (%s), shard %s %s", settings.mode(),
                settings.steps(), pushes, from, from + n,
                counters ? settings.steps() + " from each of " + layout.workers() + " workers" : "NOT " + settings.steps() + " from each worker",
                mismatch < 0 ? "equals bit for bit" : "DIFFERS (first at parameter " + mismatch + ") from", what));
        return counters && mismatch < 0;
    }

    // ------------------------------------------------------------------------------------------------- reference

    /**
     * The bulk-synchronous run in one process: each step, every worker's gradient from the same parameters, then every
     * worker's fixed-point update added (integer sums: the order does not matter, here worker 0, 1, ...).
     */
    static long[] referenceTraining(int workers, int steps, float lr) {
        ParameterServer.Rows[] data = new ParameterServer.Rows[workers];
        for (int k = 0; k < workers; k++) data[k] = ParameterServer.Rows.of(k);
        long[] p = new long[PARAMS];
        MemorySegment w = MemorySegment.ofArray(new float[PARAMS]);
        MemorySegment[] grads = new MemorySegment[workers];
        for (int k = 0; k < workers; k++) grads[k] = MemorySegment.ofArray(new float[PARAMS]);
        float scale = lr / workers;
        for (int step = 0; step < steps; step++) {
            for (int i = 0; i < PARAMS; i++) w.setAtIndex(JAVA_FLOAT, i, param(p[i]));
            for (int k = 0; k < workers; k++) data[k].gradient(w, grads[k]);
            for (int k = 0; k < workers; k++) {
                for (int i = 0; i < PARAMS; i++) p[i] += delta(scale, grads[k].getAtIndex(JAVA_FLOAT, i));
            }
        }
        return p;
    }
}
