package io.hcomm4j.examples;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Memory;
import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A sharded parameter server, as one rank of a job: the first {@code --servers} ranks hold the parameters, the
 * others are workers that train on their own data.
 *
 * <p>The model is a linear regression with 65,536 parameters ({@code float}s, 256 KiB), split into one contiguous
 * shard per server. Each worker has 16 rows of synthetic data. A round:
 * <ol>
 *   <li><b>pull</b>: each server broadcasts its shard to the workers, over a communicator of its own (the server
 *       and every worker, made once with {@link Communicator#split}); a worker receives all shards at once, one
 *       {@code broadcastAsync} per server;</li>
 *   <li>each worker computes its update, the gradient of ½‖Xw − y‖² on its rows, from the parameters it pulled;</li>
 *   <li><b>push</b>: each worker sends every server the part of its update for that server's shard (point-to-point,
 *       {@code sendAsync});</li>
 *   <li>each server has a receive posted for every worker and applies the updates in worker order, each as soon as
 *       it has arrived: {@code w -= lr / workers × update}.</li>
 * </ol>
 * The parameters and the messages live in registered memory ({@code comm.memory()}): between ranks of one host a
 * message from such a buffer is copied once, straight from the sender's buffer into the receiver's.
 *
 * <p>Check (exit code 1 if it fails): after the last round every server's shard, and the parameters every worker
 * pulls at the end, equal <em>bit for bit</em> those of the same rounds run sequentially in this program. Exact
 * equality holds because the servers apply the updates in a fixed order (worker 0, 1, …), not in arrival order:
 * float addition is not associative.
 *
 * <p>Run: {@code scripts/example.sh parameter-server -n 4} (2 servers, 2 workers), or as the command of any launcher
 * ({@code java -cp hcomm-examples.jar io.hcomm4j.examples.ParameterServer [--servers S] [--rounds 10] [--lr 0.5]}).
 * It needs at least 2 ranks; by default half of them (at least one) are servers.
 */
public final class ParameterServer {
    static final String NAME = "parameter-server";

    static final int PARAMS = 1 << 16;
    static final int ROWS = 16;
    static final long SEED = 7_000_000L;
    /** Tag of the workers' pushes. Pulls are broadcasts on the servers' own communicators, which need no tag. */
    static final int PUSH = 1;

    private ParameterServer() {
    }

    /** Runs one rank; see the class comment for the options. */
    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(new Examples.Options(args, "servers", "rounds", "lr")));
    }

    static boolean run(Examples.Options options) {
        int rounds = options.intValue("rounds", 10);
        float lr = (float) options.doubleValue("lr", 0.5);

        try (Hcomm hcomm = Hcomm.init()) {
            Communicator world = hcomm.world();
            int rank = world.rank();
            int size = world.size();
            int servers = options.intValue("servers", Math.max(1, size / 2));
            if (size < 2 || servers < 1 || servers >= size) {
                throw new IllegalArgumentException("a parameter server job needs at least one server and one worker: "
                        + size + " ranks, " + servers + " servers");
            }
            int workers = size - servers;
            Layout layout = new Layout(servers, workers);

            // One communicator per server: that server and all workers. Every rank takes part in every split (it is
            // a collective on the world); a rank outside group s passes UNDEFINED and gets null. Keys are world
            // ranks, and server s has the lowest world rank in its group, so it is rank 0 there: the broadcast root.
            Communicator[] groups = new Communicator[servers];
            for (int s = 0; s < servers; s++) {
                boolean member = rank == s || rank >= servers;
                groups[s] = world.split(member ? 0 : Communicator.UNDEFINED, rank);
            }

            // What the parameters must be at the end: every rank can compute it from the seeds, so each checks itself.
            float[] reference = referenceTraining(workers, rounds, lr);
            boolean ok = rank < servers
                    ? serve(world, groups[rank], layout, rank, rounds, lr, reference)
                    : work(world, groups, layout, rank - servers, rounds, reference);
            for (Communicator g : groups) if (g != null) g.close();
            return ok;
        }
    }

    /** Who is where: shard s of the parameters is elements {@code [from(s), from(s + 1))}; worker k is world rank servers + k. */
    record Layout(int servers, int workers) {
        long from(int shard) {
            return (long) PARAMS * shard / servers;
        }

        long length(int shard) {
            return from(shard + 1) - from(shard);
        }

        /** Shard {@code s} of a buffer that holds all parameters. */
        MemorySegment shard(MemorySegment all, int s) {
            return all.asSlice(from(s) * Float.BYTES, length(s) * Float.BYTES);
        }

        int workerRank(int worker) {
            return servers + worker;
        }
    }

    // ------------------------------------------------------------------------------------------------------ server

    private static boolean serve(Communicator world, Communicator group, Layout layout, int s, int rounds, float lr,
                                 float[] reference) {
        long n = layout.length(s);
        Memory pool = world.memory();
        try (RegisteredBuffer shardBuf = pool.allocate(DataType.FLOAT32, n);
             RegisteredBuffer updateBuf = pool.allocate(DataType.FLOAT32, n * layout.workers())) {
            MemorySegment shard = shardBuf.segment();
            shard.fill((byte) 0);                              // the parameters start at zero (a pooled buffer may hold old bytes)
            float scale = lr / layout.workers();
            for (int round = 0; round < rounds; round++) {
                group.broadcast(shard, n, DataType.FLOAT32, 0);     // pull: the workers get this shard

                // Post a receive for every worker's push first, so no update waits for the one before it to be
                // applied; then apply them in worker order, each as soon as it is here.
                List<CommFuture<Status>> pushes = new ArrayList<>();
                for (int k = 0; k < layout.workers(); k++) {
                    MemorySegment slot = updateBuf.segment().asSlice(k * n * Float.BYTES, n * Float.BYTES);
                    pushes.add(world.recvAsync(slot, layout.workerRank(k), PUSH));
                }
                for (int k = 0; k < layout.workers(); k++) {
                    pushes.get(k).await();
                    apply(shard, updateBuf.segment().asSlice(k * n * Float.BYTES, n * Float.BYTES), scale);
                }
            }
            group.broadcast(shard, n, DataType.FLOAT32, 0);         // a last pull, for the workers' check

            boolean equal = MemorySegment.mismatch(shard, 0, n * Float.BYTES,
                    MemorySegment.ofArray(reference), layout.from(s) * Float.BYTES, (layout.from(s) + n) * Float.BYTES) < 0;
            String detail = Examples.fmt("%d rounds, %d updates of params [%d, %d) applied, shard %s the sequential result",
                    rounds, rounds * layout.workers(), layout.from(s), layout.from(s) + n,
                    equal ? "equals bit for bit" : "DIFFERS from");
            return Examples.result(NAME, world.rank(), world.size(), "(server " + s + " of " + layout.servers() + ")", detail, equal);
        }
    }

    /** The server's update rule, also used by the sequential reference: {@code w -= scale × update}. */
    static void apply(MemorySegment w, MemorySegment update, float scale) {
        long n = w.byteSize() / Float.BYTES;
        for (long i = 0; i < n; i++) {
            w.setAtIndex(JAVA_FLOAT, i, w.getAtIndex(JAVA_FLOAT, i) - scale * update.getAtIndex(JAVA_FLOAT, i));
        }
    }

    // ------------------------------------------------------------------------------------------------------ worker

    private static boolean work(Communicator world, Communicator[] groups, Layout layout, int k, int rounds,
                                float[] reference) {
        Rows data = Rows.of(k);
        Memory pool = world.memory();
        try (RegisteredBuffer paramsBuf = pool.allocate(DataType.FLOAT32, PARAMS);
             RegisteredBuffer gradBuf = pool.allocate(DataType.FLOAT32, PARAMS)) {
            MemorySegment params = paramsBuf.segment();
            MemorySegment grad = gradBuf.segment();
            double firstLoss = 0;
            for (int round = 0; round < rounds; round++) {
                pull(groups, layout, params);
                if (round == 0) firstLoss = data.loss(params);
                data.gradient(params, grad);

                // Push: every server gets its part of the update. Wait for the sends before the next round
                // writes into the gradient buffer again.
                List<CommFuture<Void>> sends = new ArrayList<>();
                for (int s = 0; s < layout.servers(); s++) sends.add(world.sendAsync(layout.shard(grad, s), s, PUSH));
                for (CommFuture<Void> f : sends) f.await();
            }
            pull(groups, layout, params);
            double finalLoss = data.loss(params);

            boolean equal = MemorySegment.mismatch(params, 0, params.byteSize(),
                    MemorySegment.ofArray(reference), 0, (long) PARAMS * Float.BYTES) < 0;
            boolean ok = equal && finalLoss < firstLoss;
            String detail = Examples.fmt("%d rounds, squared error on its %d rows %.4g -> %.4g,"
                            + " pulled parameters %s the sequential result",
                    rounds, ROWS, firstLoss, finalLoss, equal ? "equal bit for bit" : "DIFFER from");
            return Examples.result(NAME, world.rank(), world.size(), "(worker " + k + " of " + layout.workers() + ")", detail, ok);
        }
    }

    /** Pull: one broadcast per server, all in flight at once (each on its own communicator), then wait for all. */
    private static void pull(Communicator[] groups, Layout layout, MemorySegment params) {
        List<CommFuture<Void>> pulls = new ArrayList<>();
        for (int s = 0; s < layout.servers(); s++) {
            pulls.add(groups[s].broadcastAsync(layout.shard(params, s), layout.length(s), DataType.FLOAT32, 0));
        }
        for (CommFuture<Void> f : pulls) f.await();
    }

    /**
     * A worker's training data: {@link #ROWS} rows of {@link #PARAMS} features (uniform, variance 1/PARAMS, so a row
     * has about unit length) and targets {@code y = x · w*} for a fixed random {@code w*}.
     */
    record Rows(float[][] x, float[] y) {
        static Rows of(int worker) {
            float[] truth = new float[PARAMS];
            SplittableRandom t = new SplittableRandom(SEED);
            for (int j = 0; j < PARAMS; j++) truth[j] = (float) t.nextGaussian();
            float[][] x = new float[ROWS][PARAMS];
            float[] y = new float[ROWS];
            SplittableRandom random = new SplittableRandom(SEED + 1 + worker);
            float amplitude = (float) Math.sqrt(3.0 / PARAMS);
            for (int i = 0; i < ROWS; i++) {
                float dot = 0;
                for (int j = 0; j < PARAMS; j++) {
                    x[i][j] = amplitude * (2 * random.nextFloat() - 1);
                    dot += x[i][j] * truth[j];
                }
                y[i] = dot;
            }
            return new Rows(x, y);
        }

        /** The update a worker pushes: the gradient of ½‖Xw − y‖², i.e. {@code Σ_i (x_i · w − y_i) x_i}. */
        void gradient(MemorySegment w, MemorySegment grad) {
            grad.fill((byte) 0);
            for (int i = 0; i < ROWS; i++) {
                float residual = dot(x[i], w) - y[i];
                for (int j = 0; j < PARAMS; j++) {
                    grad.setAtIndex(JAVA_FLOAT, j, grad.getAtIndex(JAVA_FLOAT, j) + residual * x[i][j]);
                }
            }
        }

        /** Mean squared error over the rows. */
        double loss(MemorySegment w) {
            double sum = 0;
            for (int i = 0; i < ROWS; i++) {
                double r = dot(x[i], w) - y[i];
                sum += r * r;
            }
            return sum / ROWS;
        }

        private static float dot(float[] row, MemorySegment w) {
            float s = 0;
            for (int j = 0; j < PARAMS; j++) s += row[j] * w.getAtIndex(JAVA_FLOAT, j);
            return s;
        }
    }

    // ------------------------------------------------------------------------------------------------- reference

    /**
     * The same rounds in one process: every worker's update from the same parameters (the pull), then the updates
     * applied in worker order with the servers' rule. Servers only ever touch their own shard, and the rule is
     * element-wise, so the shards together compute exactly this.
     */
    static float[] referenceTraining(int workers, int rounds, float lr) {
        Rows[] data = new Rows[workers];
        for (int k = 0; k < workers; k++) data[k] = Rows.of(k);
        MemorySegment w = MemorySegment.ofArray(new float[PARAMS]);
        MemorySegment[] updates = new MemorySegment[workers];
        for (int k = 0; k < workers; k++) updates[k] = MemorySegment.ofArray(new float[PARAMS]);
        float scale = lr / workers;
        for (int round = 0; round < rounds; round++) {
            for (int k = 0; k < workers; k++) data[k].gradient(w, updates[k]);
            for (int k = 0; k < workers; k++) apply(w, updates[k], scale);
        }
        return w.toArray(JAVA_FLOAT);
    }
}
