package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;

/**
 * torch_ddp_bench.py's MLP in plain Java: Linear layers with bias through the widths, ReLU between them (not after
 * the last), mean squared error against a teacher: {@code y = tanh(x·W)}, W random normal / √widths[0], on 64 fixed
 * random normal inputs. Each step's batch picks {@code batch} of them at random (with repetition), seeded from
 * (seed, step, rank) as the script's. Large gradients for little compute: a benchmark of gradient communication.
 *
 * <p>Initialisation as torch.nn.Linear's default: weight and bias uniform in ±1/√in. Tensors are named
 * {@code net.0.weight, net.0.bias, net.2.weight, ...} as in the script's Sequential (the ReLUs take the odd indices);
 * weights are stored {@code [in][out]}, the transpose of torch's layout. Teacher, inputs and initial values come from
 * {@link SplittableRandom}, not torch's generator: alike in distribution, not in bits.
 */
public final class Mlp implements Model {
    /** The script's number of fixed examples. */
    public static final int EXAMPLES = 64;

    private final MlpConfig c;
    private final int[] w;
    private final int layers;
    private final List<Tensor> tensors;
    private final long count;
    private final Memory memory = new Memory();
    private final Memory.View paramsView = new Memory.View(), gradsView = new Memory.View();
    private final MatMul mm = new MatMul();
    /** The examples' inputs (EXAMPLES × w[0]) and targets (EXAMPLES × w[layers]). */
    private final MemorySegment xs, ys;
    /** h[l]: the input of layer l, batch × w[l] (h[0] the gathered inputs, then ReLU outputs); h[layers]: the output. */
    private final MemorySegment[] h;
    /** Two gradient buffers, batch × the widest hidden width, used in turn going down the layers. */
    private final MemorySegment dA, dB;

    /** A model of this shape, with its teacher and examples drawn from the config's seed. */
    public Mlp(MlpConfig config) {
        this.c = config;
        this.w = config.widths();
        this.layers = config.layers();
        Layout lay = new Layout();
        for (int l = 0; l < layers; l++) {
            lay.add("net." + 2 * l + ".weight", (long) w[l] * w[l + 1]);
            lay.add("net." + 2 * l + ".bias", w[l + 1]);
        }
        tensors = lay.tensors();
        count = lay.floats();

        int in = w[0], out = w[layers], batch = c.batch();
        h = new MemorySegment[layers + 1];
        int widest = 1;
        for (int l = 0; l <= layers; l++) {
            h[l] = memory.floats((long) batch * w[l]);
            widest = Math.max(widest, w[l]);
        }
        dA = memory.floats((long) batch * widest);
        dB = memory.floats((long) batch * widest);

        // as make_batches: the teacher first, then the inputs, from one generator seeded with the seed
        SplittableRandom r = new SplittableRandom(c.seed());
        MemorySegment teacher = memory.floats((long) in * out);
        double s = 1 / Math.sqrt(in);
        for (long i = 0; i < (long) in * out; i++) {
            Ops.set(teacher, i, (float) (r.nextGaussian() * s));
        }
        xs = memory.floats((long) EXAMPLES * in);
        for (long i = 0; i < (long) EXAMPLES * in; i++) {
            Ops.set(xs, i, (float) r.nextGaussian());
        }
        ys = memory.floats((long) EXAMPLES * out);
        mm.mulAdd(EXAMPLES, out, in, xs, 0, in, 1, teacher, 0, out, ys, 0, out, false);
        for (long i = 0; i < (long) EXAMPLES * out; i++) {
            Ops.set(ys, i, (float) StrictMath.tanh(Ops.get(ys, i)));
        }
    }

    /** The shape. */
    public MlpConfig config() {
        return c;
    }

    /** Element j of the input of example i. */
    public float input(int i, int j) {
        return Ops.get(xs, (long) i * w[0] + j);
    }

    /** Element j of the target of example i: tanh of the teacher's output. */
    public float target(int i, int j) {
        return Ops.get(ys, (long) i * w[layers] + j);
    }

    @Override
    public List<Tensor> tensors() {
        return tensors;
    }

    @Override
    public long parameterCount() {
        return count;
    }

    @Override
    public String name() {
        return c.name();
    }

    @Override
    public void init(long seed, MemorySegment params) {
        checkSize(params);
        params = Memory.global(params);
        SplittableRandom r = new SplittableRandom(seed);
        for (int l = 0; l < layers; l++) {
            double bound = 1 / Math.sqrt(w[l]);
            for (int k = 2 * l; k <= 2 * l + 1; k++) {
                Tensor t = tensors.get(k);
                for (long i = 0; i < t.count(); i++) {
                    Ops.set(params, t.offset() + i, (float) ((2 * r.nextDouble() - 1) * bound));
                }
            }
        }
    }

    @Override
    public RowBatch batch(long step, int rank) {
        SplittableRandom r = new SplittableRandom(TextData.seedOf(c.seed(), step, rank));
        int[] rows = new int[c.batch()];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = r.nextInt(EXAMPLES);
        }
        return new RowBatch(rows);
    }

    @Override
    public float loss(MemorySegment params, Batch batch) {
        return (float) lossDouble(params, batch);
    }

    /** {@link #loss} before its rounding to float: finite differences of it resolve smaller steps. */
    double lossDouble(MemorySegment params, Batch batch) {
        checkSize(params);
        return forward(paramsView.of(params), rows(batch), false);
    }

    @Override
    public float forwardBackward(MemorySegment params, MemorySegment grads, Batch batch, IntConsumer gradReady) {
        checkSize(params);
        checkSize(grads);
        MemorySegment p = paramsView.of(params);
        double loss = forward(p, rows(batch), true);
        backward(p, gradsView.of(grads), gradReady);
        return (float) loss;
    }

    private long weight(int l) {
        return tensors.get(2 * l).offset();
    }

    private long bias(int l) {
        return tensors.get(2 * l + 1).offset();
    }

    /** The forward pass; with grad, leaves the loss's gradient in place of the output. Returns the mean loss. */
    private double forward(MemorySegment p, int[] rows, boolean grad) {
        int batch = c.batch(), out = w[layers];
        for (int i = 0; i < batch; i++) {
            Ops.copy(xs, (long) rows[i] * w[0], h[0], (long) i * w[0], w[0]);
        }
        for (int l = 0; l < layers; l++) {
            int n = w[l + 1];
            Ops.biasRows(p, bias(l), h[l + 1], 0, batch, n, n);
            mm.mulAdd(batch, n, w[l], h[l], 0, w[l], 1, p, weight(l), n, h[l + 1], 0, n, true);
            if (l < layers - 1) {
                Ops.relu(h[l + 1], 0, batch * n);
            }
        }
        // F.mse_loss: the mean over batch × out; its gradient 2·(y' − y)/(batch·out)
        MemorySegment y = h[layers];
        double sum = 0;
        float scale = 2f / ((float) batch * out);
        for (int i = 0; i < batch; i++) {
            long yo = (long) i * out, to = (long) rows[i] * out;
            for (int j = 0; j < out; j++) {
                float e = Ops.get(y, yo + j) - Ops.get(ys, to + j);
                sum += (double) e * e;
                if (grad) {
                    Ops.set(y, yo + j, e * scale);
                }
            }
        }
        return sum / ((double) batch * out);
    }

    private void backward(MemorySegment p, MemorySegment g, IntConsumer ready) {
        int batch = c.batch();
        MemorySegment d = h[layers], next = dA;
        for (int l = layers - 1; l >= 0; l--) {
            int n = w[l + 1], k = w[l];
            mm.mulAdd(k, n, batch, h[l], 0, 1, k, d, 0, n, g, weight(l), n, true);
            Ops.colSumAdd(d, 0, batch, n, n, g, bias(l));
            ready.accept(2 * l + 1);
            ready.accept(2 * l);
            if (l > 0) {
                mm.mulAddTransB(batch, k, n, d, 0, n, p, weight(l), n, next, 0, k, false);
                Ops.reluBackward(h[l], 0, next, 0, batch * k);
                d = next;
                next = next == dA ? dB : dA;
            }
        }
    }

    private int[] rows(Batch batch) {
        if (!(batch instanceof RowBatch rb) || rb.rows().length != c.batch()) {
            throw new IllegalArgumentException("need a RowBatch of " + c.batch() + " rows, got " + batch);
        }
        for (int r : rb.rows()) {
            if (r < 0 || r >= EXAMPLES) {
                throw new IllegalArgumentException("row " + r + " outside the " + EXAMPLES + " examples");
            }
        }
        return rb.rows();
    }

    private void checkSize(MemorySegment s) {
        if (s.byteSize() < count * Float.BYTES) {
            throw new IllegalArgumentException("buffer of " + s.byteSize() + " bytes, need " + count * Float.BYTES);
        }
    }
}
