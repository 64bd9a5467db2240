package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;

/**
 * Causal multi-head self-attention, forward and backward, one (window, head) at a time, on a block's qkv activation
 * ({@code rows × 3·dim}: q, then k, then v, each split into heads of headDim columns, as the script's
 * {@code split(C, dim=2)} and {@code view(B, T, heads, C // heads)} lay them out).
 *
 * <p>Scores are computed for the whole T × T square and the upper triangle masked afterwards: the masked half costs
 * a few percent of a step, and square products keep one code path.
 */
final class Attention {
    private final MatMul mm;
    private final Activations act;
    private final int batch;
    private final int context;
    private final int dim;
    private final int heads;
    private final int headDim;
    private final float scale;
    /** The score gradient of one (window, head), T × T. */
    private final MemorySegment dScores;

    Attention(MatMul mm, Activations act, Memory memory, int batch, int context, int dim, int heads) {
        this.mm = mm;
        this.act = act;
        this.batch = batch;
        this.context = context;
        this.dim = dim;
        this.heads = heads;
        this.headDim = dim / heads;
        this.scale = (float) (1 / Math.sqrt(headDim));
        this.dScores = memory.floats((long) context * context);
    }

    /** Floats of the probabilities a layer keeps for its backward. */
    long probsSize() {
        return (long) batch * heads * context * context;
    }

    /**
     * {@code out = softmax(mask(q·kᵀ·scale))·v} per (window, head), into out's head columns ({@code rows × dim});
     * keeps the probabilities in probs ({@code batch × heads × T × T}).
     */
    void forward(MemorySegment qkv, MemorySegment probs, MemorySegment out) {
        int t = context;
        long ld = 3L * dim;
        for (int b = 0; b < batch; b++) {
            long row0 = (long) b * t;
            for (int h = 0; h < heads; h++) {
                long q = row0 * ld + (long) h * headDim, k = q + dim, v = q + 2L * dim;
                long p = ((long) b * heads + h) * t * t;
                mm.mulAddTransB(t, t, headDim, qkv, q, ld, qkv, k, ld, probs, p, t, false);
                for (int i = 0; i < t; i++) {
                    act.softmaxPrefix(probs, p + (long) i * t, i + 1, t, scale);
                }
                mm.mulAdd(t, headDim, t, probs, p, t, 1, qkv, v, ld, out, row0 * dim + (long) h * headDim, dim, false);
            }
        }
    }

    /**
     * The backward of {@link #forward}: from dOut ({@code rows × dim}) writes (not adds) dQkv ({@code rows × 3·dim}).
     */
    void backward(MemorySegment qkv, MemorySegment probs, MemorySegment dOut, MemorySegment dQkv) {
        int t = context;
        long ld = 3L * dim;
        for (int b = 0; b < batch; b++) {
            long row0 = (long) b * t;
            for (int h = 0; h < heads; h++) {
                long q = row0 * ld + (long) h * headDim, k = q + dim, v = q + 2L * dim;
                long p = ((long) b * heads + h) * t * t;
                long dO = row0 * dim + (long) h * headDim;
                // dP = dO·vᵀ, dv = Pᵀ·dO
                mm.mulAddTransB(t, t, headDim, dOut, dO, dim, qkv, v, ld, dScores, 0, t, false);
                mm.mulAdd(t, headDim, t, probs, p, 1, t, dOut, dO, dim, dQkv, v, ld, false);
                for (int i = 0; i < t; i++) {
                    Ops.softmaxBackwardPrefix(probs, p + (long) i * t, dScores, (long) i * t, i + 1, t, scale);
                }
                // dq = dS·k, dk = dSᵀ·q (dS already carries the scale)
                mm.mulAdd(t, headDim, t, dScores, 0, t, 1, qkv, k, ld, dQkv, q, ld, false);
                mm.mulAdd(t, headDim, t, dScores, 0, 1, t, qkv, q, ld, dQkv, k, ld, false);
            }
        }
    }
}
