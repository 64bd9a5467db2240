package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;

/**
 * torch_ddp_bench.py's GPT in plain Java: a decoder-only byte-level language model, forward and backward by hand.
 *
 * <p>Token + position embedding; {@code layers} pre-LayerNorm blocks, each {@code x += proj(attn(ln1(x)))} (causal
 * self-attention, qkv and proj Linears with bias) then {@code x += fc2(gelu(fc(ln2(x))))} (a 4·dim MLP, exact GELU);
 * a final LayerNorm; logits from the output head, the token embedding itself unless untied; cross-entropy averaged
 * over batch × context tokens. Initialisation as the script's: Linear and Embedding weights normal(0, 0.02), biases
 * 0, LayerNorm weight 1 and bias 0, from a seeded {@link SplittableRandom} (not torch's generator, so not its bits).
 *
 * <p>Tensors are named and ordered as PyTorch would first use them in forward (see {@link #tensors()}), with one
 * difference in layout: a Linear's weight is stored {@code [in][out]}, the transpose of torch's {@code [out][in]}, so
 * the forward product {@code x·W} streams W along its rows. The embeddings and the untied head are {@code [vocab][dim]}
 * as in torch (the head shares the tied embedding's code path).
 *
 * <p>Activations of the configured batch shape are allocated once, off-heap, per instance, so a step allocates
 * nothing; an instance is for one thread. Every product goes through {@link MatMul}, GELU, softmax and cross-entropy
 * through {@link Activations}, LayerNorm through {@link LayerNorm}, the rest through {@link Ops}. The MLP's pre-activation is not kept:
 * the forward overwrites it with GELU's slope, which is all the backward needs of it.
 */
public final class Gpt implements Model {
    // a block's tensors, in forward order, relative to its first
    private static final int LN1_W = 0, LN1_B = 1, QKV_W = 2, QKV_B = 3, PROJ_W = 4, PROJ_B = 5;
    private static final int LN2_W = 6, LN2_B = 7, FC_W = 8, FC_B = 9, FC2_W = 10, FC2_B = 11, PER_BLOCK = 12;
    private static final float INIT_STD = 0.02f;
    private static final int TOK = 0, POS = 1, FIRST_BLOCK = 2;

    private enum Init { NORMAL, ZEROS, ONES }

    private final GptConfig c;
    private final List<Tensor> tensors;
    private final Init[] inits;
    private final long[] off;
    private final long count;
    private final int lnfW;
    private final int head;
    private final TextData data;

    private final Memory memory = new Memory();
    private final Memory.View paramsView = new Memory.View(), gradsView = new Memory.View();
    private final MatMul mm = new MatMul();
    private final Activations act;
    private final LayerNorm ln;
    private final Attention attention;
    private final int rows;
    /** The residual stream, rows × dim, updated in place block after block. */
    private final MemorySegment x;
    private final Block[] blocks;
    private final MemorySegment lnfOut, lnfHat, lnfRstd, logits;
    // backward workspaces
    private final MemorySegment dx, dLn, dAtt, dQkv, dFc;

    /** What a block keeps of its forward for its backward. */
    private record Block(MemorySegment ln1Out, MemorySegment ln1Hat, MemorySegment ln1Rstd, MemorySegment qkv,
                         MemorySegment probs, MemorySegment att, MemorySegment ln2Out, MemorySegment ln2Hat,
                         MemorySegment ln2Rstd, MemorySegment fcSlope, MemorySegment fcAct) {
    }

    /** A model of this shape; its text is {@link TextData#load(int, int, long)}'s. */
    public Gpt(GptConfig config) {
        this(config, TextData.load(config.vocab(), config.context(), config.seed()));
    }

    /** A model of this shape that draws its batches from data. */
    public Gpt(GptConfig config, TextData data) {
        this.c = config;
        this.data = data;
        int d = c.dim(), v = c.vocab();
        Layout lay = new Layout();
        List<Init> in = new ArrayList<>();
        add(lay, in, "tok.weight", (long) v * d, Init.NORMAL);
        add(lay, in, "pos.weight", (long) c.context() * d, Init.NORMAL);
        for (int l = 0; l < c.layers(); l++) {
            String p = "blocks." + l + ".";
            add(lay, in, p + "ln1.weight", d, Init.ONES);
            add(lay, in, p + "ln1.bias", d, Init.ZEROS);
            add(lay, in, p + "qkv.weight", 3L * d * d, Init.NORMAL);
            add(lay, in, p + "qkv.bias", 3L * d, Init.ZEROS);
            add(lay, in, p + "proj.weight", (long) d * d, Init.NORMAL);
            add(lay, in, p + "proj.bias", d, Init.ZEROS);
            add(lay, in, p + "ln2.weight", d, Init.ONES);
            add(lay, in, p + "ln2.bias", d, Init.ZEROS);
            add(lay, in, p + "mlp.0.weight", 4L * d * d, Init.NORMAL);
            add(lay, in, p + "mlp.0.bias", 4L * d, Init.ZEROS);
            add(lay, in, p + "mlp.2.weight", 4L * d * d, Init.NORMAL);
            add(lay, in, p + "mlp.2.bias", d, Init.ZEROS);
        }
        lnfW = add(lay, in, "ln_f.weight", d, Init.ONES);
        add(lay, in, "ln_f.bias", d, Init.ZEROS);
        head = c.tied() ? TOK : add(lay, in, "head.weight", (long) v * d, Init.NORMAL);
        tensors = lay.tensors();
        inits = in.toArray(Init[]::new);
        off = tensors.stream().mapToLong(Tensor::offset).toArray();
        count = lay.floats();

        rows = c.batch() * c.context();
        act = new Activations(Math.max(v, c.context()));
        ln = new LayerNorm(d);
        attention = new Attention(mm, act, memory, c.batch(), c.context(), d, c.heads());
        x = memory.floats((long) rows * d);
        blocks = new Block[c.layers()];
        for (int l = 0; l < blocks.length; l++) {
            blocks[l] = new Block(memory.floats((long) rows * d), memory.floats((long) rows * d), memory.floats(rows),
                    memory.floats(3L * rows * d), memory.floats(attention.probsSize()), memory.floats((long) rows * d),
                    memory.floats((long) rows * d), memory.floats((long) rows * d), memory.floats(rows),
                    memory.floats(4L * rows * d), memory.floats(4L * rows * d));
        }
        lnfOut = memory.floats((long) rows * d);
        lnfHat = memory.floats((long) rows * d);
        lnfRstd = memory.floats(rows);
        logits = memory.floats((long) rows * v);
        dx = memory.floats((long) rows * d);
        dLn = memory.floats((long) rows * d);
        dAtt = memory.floats((long) rows * d);
        dQkv = memory.floats(3L * rows * d);
        dFc = memory.floats(4L * rows * d);
    }

    private static int add(Layout lay, List<Init> inits, String name, long n, Init init) {
        inits.add(init);
        return lay.add(name, n);
    }

    /** The shape. */
    public GptConfig config() {
        return c;
    }

    /** The text the batches come from. */
    public TextData data() {
        return data;
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
        for (int i = 0; i < inits.length; i++) {
            long o = off[i], n = tensors.get(i).count();
            for (long j = 0; j < n; j++) {
                float value = switch (inits[i]) {
                    case NORMAL -> (float) r.nextGaussian() * INIT_STD;
                    case ZEROS -> 0f;
                    case ONES -> 1f;
                };
                Ops.set(params, o + j, value);
            }
        }
    }

    @Override
    public TokenBatch batch(long step, int rank) {
        return data.batch(c.seed(), step, rank, c.batch(), c.context());
    }

    @Override
    public float loss(MemorySegment params, Batch batch) {
        return (float) lossDouble(params, batch);
    }

    /** {@link #loss} before its rounding to float: finite differences of it resolve smaller steps. */
    double lossDouble(MemorySegment params, Batch batch) {
        checkSize(params);
        return forward(paramsView.of(params), tokens(batch), false);
    }

    @Override
    public float forwardBackward(MemorySegment params, MemorySegment grads, Batch batch, IntConsumer gradReady) {
        checkSize(params);
        checkSize(grads);
        TokenBatch tb = tokens(batch);
        MemorySegment p = paramsView.of(params);
        double loss = forward(p, tb, true);
        backward(p, gradsView.of(grads), tb, gradReady);
        return (float) loss;
    }

    private long at(int layer, int tensor) {
        return off[FIRST_BLOCK + layer * PER_BLOCK + tensor];
    }

    /** The forward pass; with grad, leaves the logits' gradient in place of the logits. Returns the mean loss. */
    private double forward(MemorySegment p, TokenBatch tb, boolean grad) {
        int d = c.dim(), t = c.context(), v = c.vocab();
        for (int b = 0; b < c.batch(); b++) {
            for (int i = 0; i < t; i++) {
                long row = (long) (b * t + i) * d;
                Ops.sum(p, off[TOK] + (long) tb.input(b, i) * d, p, off[POS] + (long) i * d, x, row, d);
            }
        }
        for (int l = 0; l < blocks.length; l++) {
            Block a = blocks[l];
            ln.forward(x, 0, p, at(l, LN1_W), at(l, LN1_B), a.ln1Out, 0, a.ln1Hat, 0, a.ln1Rstd, 0, rows);
            Ops.biasRows(p, at(l, QKV_B), a.qkv, 0, rows, 3 * d, 3L * d);
            mm.mulAdd(rows, 3 * d, d, a.ln1Out, 0, d, 1, p, at(l, QKV_W), 3L * d, a.qkv, 0, 3L * d, true);
            attention.forward(a.qkv, a.probs, a.att);
            mm.mulAdd(rows, d, d, a.att, 0, d, 1, p, at(l, PROJ_W), d, x, 0, d, true);
            addBiasRows(p, at(l, PROJ_B), x, d);
            ln.forward(x, 0, p, at(l, LN2_W), at(l, LN2_B), a.ln2Out, 0, a.ln2Hat, 0, a.ln2Rstd, 0, rows);
            Ops.biasRows(p, at(l, FC_B), a.fcSlope, 0, rows, 4 * d, 4L * d);
            mm.mulAdd(rows, 4 * d, d, a.ln2Out, 0, d, 1, p, at(l, FC_W), 4L * d, a.fcSlope, 0, 4L * d, true);
            act.gelu(a.fcSlope, 0, a.fcAct, 0, rows * 4 * d, grad);
            mm.mulAdd(rows, d, 4 * d, a.fcAct, 0, 4L * d, 1, p, at(l, FC2_W), d, x, 0, d, true);
            addBiasRows(p, at(l, FC2_B), x, d);
        }
        ln.forward(x, 0, p, off[lnfW], off[lnfW + 1], lnfOut, 0, lnfHat, 0, lnfRstd, 0, rows);
        mm.mulAddTransB(rows, v, d, lnfOut, 0, d, p, off[head], d, logits, 0, v, false);
        float gradScale = grad ? 1f / rows : 0f;
        double sum = 0;
        for (int b = 0; b < c.batch(); b++) {
            for (int i = 0; i < t; i++) {
                sum += act.crossEntropyRow(logits, (long) (b * t + i) * v, v, tb.target(b, i), gradScale);
            }
        }
        return sum / rows;
    }

    private void addBiasRows(MemorySegment p, long bias, MemorySegment out, int d) {
        for (int r = 0; r < rows; r++) {
            Ops.addTo(p, bias, out, (long) r * d, d);
        }
    }

    /** The backward pass, from the logits' gradient the forward left; adds into g, reports tensors as they finish. */
    private void backward(MemorySegment p, MemorySegment g, TokenBatch tb, IntConsumer ready) {
        int d = c.dim(), t = c.context(), v = c.vocab();
        // logits = lnfOut·Eᵀ: dLnfOut = dLogits·E, dE += dLogitsᵀ·lnfOut
        mm.mulAdd(rows, d, v, logits, 0, v, 1, p, off[head], d, dLn, 0, d, false);
        mm.mulAdd(v, d, rows, logits, 0, 1, v, lnfOut, 0, d, g, off[head], d, true);
        if (!c.tied()) {
            ready.accept(head);
        }
        dx.fill((byte) 0);
        ln.backward(dLn, 0, lnfHat, 0, lnfRstd, 0, p, off[lnfW], g, off[lnfW], off[lnfW + 1], dx, 0, rows);
        ready.accept(lnfW + 1);
        ready.accept(lnfW);
        for (int l = blocks.length - 1; l >= 0; l--) {
            Block a = blocks[l];
            int first = FIRST_BLOCK + l * PER_BLOCK;
            // x += fc2(gelu(fc(ln2(x))))
            mm.mulAddTransB(rows, 4 * d, d, dx, 0, d, p, at(l, FC2_W), d, dFc, 0, 4L * d, false);
            mm.mulAdd(4 * d, d, rows, a.fcAct, 0, 1, 4L * d, dx, 0, d, g, at(l, FC2_W), d, true);
            Ops.colSumAdd(dx, 0, rows, d, d, g, at(l, FC2_B));
            ready.accept(first + FC2_B);
            ready.accept(first + FC2_W);
            Ops.mulInPlace(a.fcSlope, 0, dFc, 0, rows * 4 * d);
            mm.mulAddTransB(rows, d, 4 * d, dFc, 0, 4L * d, p, at(l, FC_W), 4L * d, dLn, 0, d, false);
            mm.mulAdd(d, 4 * d, rows, a.ln2Out, 0, 1, d, dFc, 0, 4L * d, g, at(l, FC_W), 4L * d, true);
            Ops.colSumAdd(dFc, 0, rows, 4 * d, 4L * d, g, at(l, FC_B));
            ready.accept(first + FC_B);
            ready.accept(first + FC_W);
            ln.backward(dLn, 0, a.ln2Hat, 0, a.ln2Rstd, 0, p, at(l, LN2_W), g, at(l, LN2_W), at(l, LN2_B), dx, 0, rows);
            ready.accept(first + LN2_B);
            ready.accept(first + LN2_W);
            // x += proj(attn(ln1(x)))
            mm.mulAddTransB(rows, d, d, dx, 0, d, p, at(l, PROJ_W), d, dAtt, 0, d, false);
            mm.mulAdd(d, d, rows, a.att, 0, 1, d, dx, 0, d, g, at(l, PROJ_W), d, true);
            Ops.colSumAdd(dx, 0, rows, d, d, g, at(l, PROJ_B));
            ready.accept(first + PROJ_B);
            ready.accept(first + PROJ_W);
            attention.backward(a.qkv, a.probs, dAtt, dQkv);
            mm.mulAddTransB(rows, d, 3 * d, dQkv, 0, 3L * d, p, at(l, QKV_W), 3L * d, dLn, 0, d, false);
            mm.mulAdd(d, 3 * d, rows, a.ln1Out, 0, 1, d, dQkv, 0, 3L * d, g, at(l, QKV_W), 3L * d, true);
            Ops.colSumAdd(dQkv, 0, rows, 3 * d, 3L * d, g, at(l, QKV_B));
            ready.accept(first + QKV_B);
            ready.accept(first + QKV_W);
            ln.backward(dLn, 0, a.ln1Hat, 0, a.ln1Rstd, 0, p, at(l, LN1_W), g, at(l, LN1_W), at(l, LN1_B), dx, 0, rows);
            ready.accept(first + LN1_B);
            ready.accept(first + LN1_W);
        }
        for (int b = 0; b < c.batch(); b++) {
            for (int i = 0; i < t; i++) {
                Ops.addTo(dx, (long) (b * t + i) * d, g, off[POS] + (long) i * d, d);
            }
        }
        ready.accept(POS);
        for (int b = 0; b < c.batch(); b++) {
            for (int i = 0; i < t; i++) {
                Ops.addTo(dx, (long) (b * t + i) * d, g, off[TOK] + (long) tb.input(b, i) * d, d);
            }
        }
        ready.accept(TOK);
    }

    private TokenBatch tokens(Batch batch) {
        if (!(batch instanceof TokenBatch tb) || tb.rows() != c.batch() || tb.context() != c.context()) {
            throw new IllegalArgumentException("need a TokenBatch of " + c.batch() + " x " + c.context() + ", got " + batch);
        }
        for (int tok : tb.tokens()) {
            if (tok < 0 || tok >= c.vocab()) {
                throw new IllegalArgumentException("token " + tok + " outside the vocabulary of " + c.vocab());
            }
        }
        return tb;
    }

    private void checkSize(MemorySegment s) {
        if (s.byteSize() < count * Float.BYTES) {
            throw new IllegalArgumentException("buffer of " + s.byteSize() + " bytes, need " + count * Float.BYTES);
        }
    }
}
