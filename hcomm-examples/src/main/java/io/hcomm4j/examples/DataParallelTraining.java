package io.hcomm4j.examples;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.ddp.DataParallel;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Data-parallel training, the way PyTorch DDP or Horovod do it, as one rank of a job.
 *
 * <p>Every rank holds a full copy of a small model (a 2-layer perceptron, 8 inputs, 16 tanh units, one sigmoid
 * output: 161 parameters) and its own shard of a synthetic dataset (4096 points, label 1
 * inside a circle in the first two coordinates). Each step a rank computes the gradient of the logistic loss on a
 * mini-batch of its shard, the ranks average their gradients with an all-reduce, and every rank applies the same
 * averaged gradient, so the copies never drift apart. The global batch is {@code size × batch}: more ranks, more
 * samples per step at the same cost per rank.
 *
 * <p>It is the smallest user of hcomm-ddp's {@link DataParallel} (the GPT of {@link GptTraining} is the real one):
 * the layer owns the parameters and gradients in registered buffers and broadcasts rank 0's initial weights; its
 * first bucket is the output layer, whose gradients back-propagation finishes first, so that bucket's all-reduce
 * runs while the hidden layer's gradients are computed; {@link DataParallel#synchronize()} is the one wait before
 * the weights are updated.
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

            // The parameters in forward order: hidden layer (W1, b1), output layer (w2, b2). The output layer's
            // gradients (17 floats) are the first bucket: its all-reduce starts while the hidden layer's are computed.
            DataParallel.Builder layer = DataParallel.builder(comm)
                    .tensor("W1", HIDDEN * FEATURES).tensor("b1", HIDDEN).tensor("w2", HIDDEN).tensor("b2", 1)
                    .firstBucketBytes((long) (PARAMS - W2) * Float.BYTES);
            try (DataParallel ddp = layer.build()) {
                MemorySegment params = ddp.parameters();      // one flat buffer, the layout above
                MemorySegment grads = ddp.gradients();
                // Rank 0 initializes the model and broadcasts it: every replica must start from the same weights, and
                // broadcasting (rather than seeding every rank alike) keeps that true for any initialization.
                if (rank == 0) initialize(params);
                ddp.broadcastParameters();

                double lossBefore = globalLoss(comm, params, shard);
                Activations act = new Activations(batch);
                for (int step = 0; step < steps; step++) {
                    int[] rows = shard.batch(step, batch);
                    forward(params, shard, rows, act);
                    ddp.zeroGradients();
                    backwardOutputLayer(act, shard, rows, grads);
                    ddp.gradientReady(3);                      // b2 and w2 final: bucket 0 starts averaging now, on
                    ddp.gradientReady(2);                      // the communicator's collective thread
                    backwardHiddenLayer(params, act, shard, rows, grads);
                    ddp.gradientReady(1);
                    ddp.gradientReady(0);
                    ddp.synchronize();                        // the one wait: grads hold the mean over the ranks
                    sgd(params, grads, lr);                   // the same averaged gradient on every rank
                }

                double lossAfter = globalLoss(comm, params, shard);

                // Check 1: bit-identical replicas. One 64-bit hash per rank, all-gathered, is enough to compare.
                long[] hashes = Examples.allHashes(comm, Examples.hash(params, PARAMS));
                boolean identical = Arrays.stream(hashes).allMatch(h -> h == hashes[0]);

                // Check 3: the same training in one process, from every shard (cheap here; a real job would not).
                float[] reference = referenceTraining(size, steps, batch, lr);
                double maxDiff = 0;
                for (int i = 0; i < PARAMS; i++) maxDiff = Math.max(maxDiff, Math.abs(get(params, i) - reference[i]));

                boolean ok = identical && lossAfter <= lossBound && lossAfter < lossBefore && maxDiff <= REFERENCE_TOLERANCE;
                String detail = Examples.fmt("%d steps x %d ranks x %d samples, loss %.4f -> %.4f (bound %.4f), weights %s"
                                + " (hash %016x), max |w - single-process reference| %.1e",
                        steps, size, batch, lossBefore, lossAfter, lossBound,
                        identical ? "bit-identical on all " + size + " ranks" : "DIFFER between ranks " + Arrays.toString(hashes),
                        hashes[rank], maxDiff);
                return Examples.result(NAME, rank, size, "", detail, ok);
            }
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
    static void initialize(MemorySegment params) {
        SplittableRandom random = new SplittableRandom(SEED ^ 0x5DEECE66DL);
        params.asSlice(0, (long) PARAMS * Float.BYTES).fill((byte) 0);
        for (int i = W1; i < B1; i++) set(params, i, (float) (random.nextGaussian() / Math.sqrt(FEATURES)));
        for (int i = W2; i < B2; i++) set(params, i, (float) (random.nextGaussian() / Math.sqrt(HIDDEN)));
    }

    // The model reads and writes its parameters and gradients in MemorySegments: hcomm-ddp's registered buffers here,
    // heap arrays (MemorySegment.ofArray) in ElasticTraining and in the reference.
    static float get(MemorySegment floats, int i) {
        return floats.getAtIndex(ValueLayout.JAVA_FLOAT, i);
    }

    static void set(MemorySegment floats, int i, float value) {
        floats.setAtIndex(ValueLayout.JAVA_FLOAT, i, value);
    }

    static void add(MemorySegment floats, int i, float value) {
        set(floats, i, get(floats, i) + value);
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

    static void forward(MemorySegment p, Shard data, int[] rows, Activations act) {
        for (int k = 0; k < rows.length; k++) {
            float[] x = data.x()[rows[k]];
            float z2 = get(p, B2);
            for (int j = 0; j < HIDDEN; j++) {
                float z1 = get(p, B1 + j);
                for (int f = 0; f < FEATURES; f++) z1 += get(p, W1 + j * FEATURES + f) * x[f];
                // StrictMath, not Math: Math.tanh may give other last bits in the interpreter than in compiled code,
                // and the reference below must compute exactly what the ranks compute.
                float h = (float) StrictMath.tanh(z1);
                act.hidden[k][j] = h;
                z2 += get(p, W2 + j) * h;
            }
            act.logit[k] = z2;
        }
    }

    /** Output layer: gradients of w2 and b2, the bucket that is ready first. Mean over the batch. */
    static void backwardOutputLayer(Activations act, Shard data, int[] rows, MemorySegment g) {
        int n = rows.length;
        for (int k = 0; k < n; k++) {
            // Logistic loss: d loss / d logit = sigmoid(logit) - label.
            float d = (sigmoid(act.logit[k]) - data.y()[rows[k]]) / n;
            act.delta[k] = d;
            for (int j = 0; j < HIDDEN; j++) add(g, W2 + j, d * act.hidden[k][j]);
            add(g, B2, d);
        }
    }

    /** Hidden layer: gradients of W1 and b1, back-propagated through w2 and tanh. */
    static void backwardHiddenLayer(MemorySegment p, Activations act, Shard data, int[] rows, MemorySegment g) {
        for (int k = 0; k < rows.length; k++) {
            float[] x = data.x()[rows[k]];
            for (int j = 0; j < HIDDEN; j++) {
                float h = act.hidden[k][j];
                float d = act.delta[k] * get(p, W2 + j) * (1 - h * h);
                for (int f = 0; f < FEATURES; f++) add(g, W1 + j * FEATURES + f, d * x[f]);
                add(g, B1 + j, d);
            }
        }
    }

    static void sgd(MemorySegment params, MemorySegment grads, float lr) {
        for (int i = 0; i < PARAMS; i++) set(params, i, get(params, i) - lr * get(grads, i));
    }

    static float sigmoid(float z) {
        return (float) (1 / (1 + StrictMath.exp(-z)));
    }

    /** Summed logistic loss of the shard's rows, in double: log(1 + e^z) - y z, written to avoid overflow. */
    static double lossSum(MemorySegment params, Shard data) {
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
    static double globalLoss(Communicator comm, MemorySegment params, Shard shard) {
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
        MemorySegment p = MemorySegment.ofArray(params);
        initialize(p);
        float[] grads = new float[PARAMS];
        MemorySegment g = MemorySegment.ofArray(grads);
        float[] sum = new float[PARAMS];
        Activations act = new Activations(batch);
        for (int step = 0; step < steps; step++) {
            Arrays.fill(sum, 0f);
            for (int r = 0; r < size; r++) {
                int[] rows = shards[r].batch(step, batch);
                Arrays.fill(grads, 0f);
                forward(p, shards[r], rows, act);
                backwardOutputLayer(act, shards[r], rows, g);
                backwardHiddenLayer(p, act, shards[r], rows, g);
                for (int i = 0; i < PARAMS; i++) sum[i] += grads[i];
            }
            for (int i = 0; i < PARAMS; i++) sum[i] /= size;
            sgd(p, MemorySegment.ofArray(sum), lr);
        }
        return params;
    }
}
