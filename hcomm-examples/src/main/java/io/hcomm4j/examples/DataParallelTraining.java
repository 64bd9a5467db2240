package io.hcomm4j.examples;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Data-parallel training, the way PyTorch DDP or Horovod do it, as one rank of a job.
 *
 * <p>Every rank holds a full copy of a small model (a 2-layer perceptron, 8 inputs, 16 tanh units, one sigmoid
 * output: 161 parameters in plain {@code float[]}s) and its own shard of a synthetic dataset (4096 points, label 1
 * inside a circle in the first two coordinates). Each step a rank computes the gradient of the logistic loss on a
 * mini-batch of its shard, the ranks average their gradients with an all-reduce, and every rank applies the same
 * averaged gradient, so the copies never drift apart. The global batch is {@code size × batch}: more ranks, more
 * samples per step at the same cost per rank.
 *
 * <p>Communication overlaps computation as in DDP's gradient buckets: back-propagation produces the output layer's
 * gradients first, so that bucket's {@link Communicator#allReduceAsync} starts while the hidden layer's gradients
 * are still being computed; the step waits for both buckets only before it updates the weights.
 *
 * <p>Checks, printed in one line per rank (exit code 1 if one fails):
 * <ol>
 *   <li>every rank holds bit-identical weights: the ranks all-gather a hash of their weights and compare;</li>
 *   <li>the loss over the whole dataset went down to at most {@code --loss-bound} (default 0.12, from about 0.7);</li>
 *   <li>the weights equal, within float rounding, those of a single-process reference computed in this program from
 *       all shards (the all-reduce may add the ranks' gradients in another order than the reference, so the last
 *       bits may differ; a lost or doubled gradient would show as a difference of 1e-2 or more).</li>
 * </ol>
 *
 * <p>Run: {@code scripts/example.sh training -n 4}, or as the command of any launcher
 * ({@code java -cp hcomm-examples.jar io.hcomm4j.examples.DataParallelTraining [--steps 1000] [--batch 32] [--lr 1.0]
 * [--loss-bound 0.12]}): {@link Hcomm#init()} finds the rank in RANK/WORLD_SIZE, SLURM_*, OMPI_COMM_WORLD_* or PMI_*.
 */
public final class DataParallelTraining {
    static final String NAME = "training";

    static final int FEATURES = 8;
    static final int HIDDEN = 16;
    // All parameters live in one flat array, hidden layer first, output layer last:
    //   [ W1: HIDDEN x FEATURES | b1: HIDDEN | w2: HIDDEN | b2: 1 ]
    // The gradients use the same layout, so each layer's gradients are one contiguous slice: a bucket that can be
    // all-reduced on its own. The output layer's bucket (w2, b2) is the one back-propagation finishes first.
    static final int W1 = 0;
    static final int B1 = W1 + HIDDEN * FEATURES;
    static final int W2 = B1 + HIDDEN;
    static final int B2 = W2 + HIDDEN;
    static final int PARAMS = B2 + 1;

    static final int SAMPLES = 4096;
    static final long SEED = 20250101L;
    /** How far a rank's weights may be from the single-process reference: float rounding, not a lost gradient. */
    static final double REFERENCE_TOLERANCE = 1e-4;

    private DataParallelTraining() {
    }

    /** Runs one rank; see the class comment for the options. */
    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(new Examples.Options(args, "steps", "batch", "lr", "loss-bound")));
    }

    static boolean run(Examples.Options options) {
        int steps = options.intValue("steps", 1000);
        int batch = options.intValue("batch", 32);            // samples per rank and step
        float lr = (float) options.doubleValue("lr", 1.0);
        double lossBound = options.doubleValue("loss-bound", 0.12);

        try (Hcomm hcomm = Hcomm.init()) {                    // joins the job: rank, size and store from the environment
            Communicator comm = hcomm.world();
            int rank = comm.rank();
            int size = comm.size();
            Shard shard = Shard.of(rank, size);               // this rank reads only its part of the data

            // Rank 0 initializes the model and broadcasts it: every replica must start from the same weights, and
            // broadcasting (rather than seeding every rank alike) keeps that true for any initialization.
            float[] params = new float[PARAMS];
            if (rank == 0) initialize(params);
            comm.broadcast(params, 0);

            double lossBefore = globalLoss(comm, params, shard);

            float[] grads = new float[PARAMS];
            // Views of the two gradient buckets; heap arrays work directly as MemorySegments.
            MemorySegment all = MemorySegment.ofArray(grads);
            MemorySegment hiddenBucket = all.asSlice(0, (long) W2 * Float.BYTES);
            MemorySegment outputBucket = all.asSlice((long) W2 * Float.BYTES);
            Activations act = new Activations(batch);
            for (int step = 0; step < steps; step++) {
                int[] rows = shard.batch(step, batch);
                forward(params, shard, rows, act);
                Arrays.fill(grads, 0f);
                backwardOutputLayer(act, shard, rows, grads);
                // Bucket 1 is complete: start averaging it now. The op runs on the communicator's collective
                // thread; this thread goes on with the hidden layer, which reads params and act, not that bucket.
                CommFuture<Void> output = comm.allReduceAsync(outputBucket, outputBucket, PARAMS - W2, DataType.FLOAT32, ReduceOp.AVG);
                backwardHiddenLayer(params, act, shard, rows, grads);
                CommFuture<Void> hidden = comm.allReduceAsync(hiddenBucket, hiddenBucket, W2, DataType.FLOAT32, ReduceOp.AVG);
                // Async collectives run in call order on every rank, so the two never mix; wait for both.
                output.await();
                hidden.await();
                sgd(params, grads, lr);                       // the same averaged gradient on every rank
            }

            double lossAfter = globalLoss(comm, params, shard);

            // Check 1: bit-identical replicas. One 64-bit hash per rank, all-gathered, is enough to compare.
            long[] hashes = new long[size];
            comm.allGather(new long[] {Examples.hash(params)}, hashes);
            boolean identical = Arrays.stream(hashes).allMatch(h -> h == hashes[0]);

            // Check 3: the same training in one process, from every shard (cheap here; a real job would not).
            float[] reference = referenceTraining(size, steps, batch, lr);
            double maxDiff = 0;
            for (int i = 0; i < PARAMS; i++) maxDiff = Math.max(maxDiff, Math.abs(params[i] - reference[i]));

            boolean ok = identical && lossAfter <= lossBound && lossAfter < lossBefore && maxDiff <= REFERENCE_TOLERANCE;
            String detail = Examples.fmt("%d steps x %d ranks x %d samples, loss %.4f -> %.4f (bound %.4f), weights %s"
                            + " (hash %016x), max |w - single-process reference| %.1e",
                    steps, size, batch, lossBefore, lossAfter, lossBound,
                    identical ? "bit-identical on all " + size + " ranks" : "DIFFER between ranks " + Arrays.toString(hashes),
                    hashes[rank], maxDiff);
            return Examples.result(NAME, rank, size, "", detail, ok);
        }
    }

    // ------------------------------------------------------------------------------------------------------ data

    /**
     * The samples of one rank: rows {@code [from, from + count)} of the global dataset. Each sample is generated from
     * its own index, so a rank materializes only its shard and any process can regenerate any row.
     */
    record Shard(float[][] x, float[] y) {
        static Shard of(int rank, int size) {
            // Contiguous, nearly equal parts, like a DistributedSampler without shuffling.
            int from = (int) ((long) SAMPLES * rank / size);
            int to = (int) ((long) SAMPLES * (rank + 1) / size);
            float[][] x = new float[to - from][FEATURES];
            float[] y = new float[to - from];
            for (int i = from; i < to; i++) {
                SplittableRandom random = new SplittableRandom(SEED + i);
                for (int f = 0; f < FEATURES; f++) x[i - from][f] = (float) random.nextGaussian();
                // Inside the circle of radius sqrt(2 ln 2) about half of the Gaussian points: balanced classes.
                // Only two of the eight inputs matter; the hidden layer has to find them.
                float r2 = x[i - from][0] * x[i - from][0] + x[i - from][1] * x[i - from][1];
                y[i - from] = r2 < 1.3863f ? 1f : 0f;
            }
            return new Shard(x, y);
        }

        int rows() {
            return y.length;
        }

        /** The shard rows of mini-batch {@code step}: the shard taken in order, {@code batch} rows at a time, wrapping. */
        int[] batch(int step, int batch) {
            int[] rows = new int[batch];
            for (int k = 0; k < batch; k++) rows[k] = (int) (((long) step * batch + k) % rows());
            return rows;
        }
    }

    // ----------------------------------------------------------------------------------------------------- model

    /** Initial weights: small Gaussians scaled by fan-in, zero biases. */
    static void initialize(float[] params) {
        SplittableRandom random = new SplittableRandom(SEED ^ 0x5DEECE66DL);
        for (int i = W1; i < B1; i++) params[i] = (float) (random.nextGaussian() / Math.sqrt(FEATURES));
        for (int i = W2; i < B2; i++) params[i] = (float) (random.nextGaussian() / Math.sqrt(HIDDEN));
    }

    /** What the forward pass keeps for the backward pass. */
    static final class Activations {
        final float[][] hidden;   // tanh outputs, per sample
        final float[] logit;      // output before the sigmoid
        final float[] delta;      // d loss / d logit, filled by the backward pass

        Activations(int batch) {
            hidden = new float[batch][HIDDEN];
            logit = new float[batch];
            delta = new float[batch];
        }
    }

    static void forward(float[] p, Shard data, int[] rows, Activations act) {
        for (int k = 0; k < rows.length; k++) {
            float[] x = data.x()[rows[k]];
            float z2 = p[B2];
            for (int j = 0; j < HIDDEN; j++) {
                float z1 = p[B1 + j];
                for (int f = 0; f < FEATURES; f++) z1 += p[W1 + j * FEATURES + f] * x[f];
                // StrictMath, not Math: Math.tanh may give other last bits in the interpreter than in compiled code,
                // and the reference below must compute exactly what the ranks compute.
                float h = (float) StrictMath.tanh(z1);
                act.hidden[k][j] = h;
                z2 += p[W2 + j] * h;
            }
            act.logit[k] = z2;
        }
    }

    /** Output layer: gradients of w2 and b2, the bucket that is ready first. Mean over the batch. */
    static void backwardOutputLayer(Activations act, Shard data, int[] rows, float[] g) {
        int n = rows.length;
        for (int k = 0; k < n; k++) {
            // Logistic loss: d loss / d logit = sigmoid(logit) - label.
            float d = (sigmoid(act.logit[k]) - data.y()[rows[k]]) / n;
            act.delta[k] = d;
            for (int j = 0; j < HIDDEN; j++) g[W2 + j] += d * act.hidden[k][j];
            g[B2] += d;
        }
    }

    /** Hidden layer: gradients of W1 and b1, back-propagated through w2 and tanh. */
    static void backwardHiddenLayer(float[] p, Activations act, Shard data, int[] rows, float[] g) {
        for (int k = 0; k < rows.length; k++) {
            float[] x = data.x()[rows[k]];
            for (int j = 0; j < HIDDEN; j++) {
                float h = act.hidden[k][j];
                float d = act.delta[k] * p[W2 + j] * (1 - h * h);
                for (int f = 0; f < FEATURES; f++) g[W1 + j * FEATURES + f] += d * x[f];
                g[B1 + j] += d;
            }
        }
    }

    static void sgd(float[] params, float[] grads, float lr) {
        for (int i = 0; i < PARAMS; i++) params[i] -= lr * grads[i];
    }

    static float sigmoid(float z) {
        return (float) (1 / (1 + StrictMath.exp(-z)));
    }

    /** Summed logistic loss of the shard's rows, in double: log(1 + e^z) - y z, written to avoid overflow. */
    static double lossSum(float[] params, Shard data) {
        int[] rows = new int[data.rows()];
        for (int i = 0; i < rows.length; i++) rows[i] = i;
        Activations act = new Activations(rows.length);
        forward(params, data, rows, act);
        double sum = 0;
        for (int k = 0; k < rows.length; k++) {
            double z = act.logit[k];
            sum += Math.max(z, 0) + StrictMath.log1p(StrictMath.exp(-Math.abs(z))) - data.y()[k] * z;
        }
        return sum;
    }

    /** Mean loss over the whole dataset: each rank sums its shard, one all-reduce adds the sums and the counts. */
    static double globalLoss(Communicator comm, float[] params, Shard shard) {
        double[] sumAndCount = {lossSum(params, shard), shard.rows()};
        comm.allReduce(sumAndCount, ReduceOp.SUM);            // the array overload: in place, FLOAT64
        return sumAndCount[0] / sumAndCount[1];
    }

    // ------------------------------------------------------------------------------------------------- reference

    /**
     * The same training without communication: every step computes each rank's gradient from each rank's shard with
     * the very same code, adds them in rank order and divides by the number of ranks (what AVG does), then updates.
     */
    static float[] referenceTraining(int size, int steps, int batch, float lr) {
        Shard[] shards = new Shard[size];
        for (int r = 0; r < size; r++) shards[r] = Shard.of(r, size);
        float[] params = new float[PARAMS];
        initialize(params);
        float[] grads = new float[PARAMS];
        float[] sum = new float[PARAMS];
        Activations act = new Activations(batch);
        for (int step = 0; step < steps; step++) {
            Arrays.fill(sum, 0f);
            for (int r = 0; r < size; r++) {
                int[] rows = shards[r].batch(step, batch);
                Arrays.fill(grads, 0f);
                forward(params, shards[r], rows, act);
                backwardOutputLayer(act, shards[r], rows, grads);
                backwardHiddenLayer(params, act, shards[r], rows, grads);
                for (int i = 0; i < PARAMS; i++) sum[i] += grads[i];
            }
            for (int i = 0; i < PARAMS; i++) sum[i] /= size;
            sgd(params, sum, lr);
        }
        return params;
    }
}
