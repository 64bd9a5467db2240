package io.hcomm4j.examples.gpt;

import static io.hcomm4j.examples.gpt.Ops.L;
import static io.hcomm4j.examples.gpt.Ops.S;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;

/**
 * torch.nn.LayerNorm over rows of one width (eps 1e-5, weight and bias), forward and backward; one instance per model
 * (it owns scratch rows), for one thread.
 *
 * <p>Rows are staged through heap arrays: each loop reads or writes at most one memory segment, and the arithmetic
 * runs on arrays. A version whose loops loaded x, weight and bias and stored hat and out, all from segments, was the
 * one kernel C2 kept deoptimizing and recompiling ("profile_predicate" traps every step) once other code in the JVM
 * had used segments of other arena kinds through the same JDK code: a GPT step went from 160 ms to over 400.
 */
final class LayerNorm {
    /** torch.nn.LayerNorm's default. */
    static final float EPS = 1e-5f;

    private final int dim;
    private final int padded;
    private final float[] w, b, xs, hs, ds, gw, gb;
    /** 1 for the dim real lanes, 0 for the padding: keeps the padding out of the variance. */
    private final float[] valid;

    /** For rows of dim floats. */
    LayerNorm(int dim) {
        this.dim = dim;
        this.padded = (dim + L - 1) / L * L;
        w = new float[padded];
        b = new float[padded];
        xs = new float[padded];
        hs = new float[padded];
        ds = new float[padded];
        gw = new float[padded];
        gb = new float[padded];
        valid = new float[padded];
        Arrays.fill(valid, 0, dim, 1f);
    }

    /**
     * {@code out = hat·w + b}, {@code hat = (x − mean)·rstd} for rows × dim (contiguous rows); keeps hat and rstd for
     * the backward. Mean and variance in two passes, for accuracy.
     */
    void forward(MemorySegment x, long xo, MemorySegment p, long wo, long bo, MemorySegment out, long oo,
                 MemorySegment hat, long ho, MemorySegment rstd, long ro, int rows) {
        Ops.toArray(p, wo, w, dim);
        Ops.toArray(p, bo, b, dim);
        for (int r = 0; r < rows; r++) {
            long row = (long) r * dim;
            Ops.toArray(x, xo + row, xs, dim);
            float rs = normalize();
            Ops.set(rstd, ro + r, rs);
            Ops.fromArray(hs, hat, ho + row, dim);
            Ops.fromArray(xs, out, oo + row, dim);
        }
    }

    /** hs = (xs − mean)·rstd, xs = hs·w + b; returns rstd. xs's padding is zeros, and stays out of the sums. */
    private float normalize() {
        FloatVector acc = FloatVector.zero(S);
        for (int i = 0; i < padded; i += L) {
            acc = acc.add(FloatVector.fromArray(S, xs, i));
        }
        float mean = Ops.sumLanes(acc) / dim;
        acc = FloatVector.zero(S);
        for (int i = 0; i < padded; i += L) {
            FloatVector d = FloatVector.fromArray(S, xs, i).sub(mean).mul(FloatVector.fromArray(S, valid, i));
            acc = d.fma(d, acc);
        }
        float var = Ops.sumLanes(acc) / dim;
        float rs = (float) (1 / Math.sqrt(var + EPS));
        for (int i = 0; i < padded; i += L) {
            FloatVector h = FloatVector.fromArray(S, xs, i).sub(mean).mul(rs);
            h.intoArray(hs, i);
            h.fma(FloatVector.fromArray(S, w, i), FloatVector.fromArray(S, b, i)).intoArray(xs, i);
        }
        return rs;
    }

    /**
     * The backward: {@code dx += rstd·(g − mean(g) − hat·mean(g·hat))} with {@code g = dOut·w}; the parameters'
     * gradients {@code Σ dOut·hat} and {@code Σ dOut} are summed over the rows in order, then added into grads at gwo
     * and gbo.
     */
    void backward(MemorySegment dOut, long dOff, MemorySegment hat, long ho, MemorySegment rstd, long ro,
                  MemorySegment p, long wo, MemorySegment grads, long gwo, long gbo,
                  MemorySegment dx, long xo, int rows) {
        Ops.toArray(p, wo, w, dim);
        Arrays.fill(gw, 0f);
        Arrays.fill(gb, 0f);
        for (int r = 0; r < rows; r++) {
            long row = (long) r * dim;
            Ops.toArray(dOut, dOff + row, ds, dim);
            Ops.toArray(hat, ho + row, hs, dim);
            Ops.toArray(dx, xo + row, xs, dim);
            backwardRow(Ops.get(rstd, ro + r));
            Ops.fromArray(xs, dx, xo + row, dim);
        }
        Ops.toArray(grads, gwo, ds, dim);
        Ops.toArray(grads, gbo, hs, dim);
        for (int i = 0; i < padded; i += L) {
            FloatVector.fromArray(S, ds, i).add(FloatVector.fromArray(S, gw, i)).intoArray(ds, i);
            FloatVector.fromArray(S, hs, i).add(FloatVector.fromArray(S, gb, i)).intoArray(hs, i);
        }
        Ops.fromArray(ds, grads, gwo, dim);
        Ops.fromArray(hs, grads, gbo, dim);
    }

    /** From ds (dOut), hs (hat) and xs (dx so far): xs += this row's dx; gw, gb += this row's terms. */
    private void backwardRow(float rs) {
        FloatVector sg = FloatVector.zero(S), sgh = sg;
        for (int i = 0; i < padded; i += L) {
            FloatVector dv = FloatVector.fromArray(S, ds, i), h = FloatVector.fromArray(S, hs, i);
            FloatVector g = dv.mul(FloatVector.fromArray(S, w, i));
            sg = sg.add(g);
            sgh = g.fma(h, sgh);
            dv.fma(h, FloatVector.fromArray(S, gw, i)).intoArray(gw, i);
            dv.add(FloatVector.fromArray(S, gb, i)).intoArray(gb, i);
        }
        float meanG = Ops.sumLanes(sg) / dim, meanGh = Ops.sumLanes(sgh) / dim;
        for (int i = 0; i < padded; i += L) {
            FloatVector g = FloatVector.fromArray(S, ds, i).mul(FloatVector.fromArray(S, w, i));
            FloatVector v = g.sub(meanG).sub(FloatVector.fromArray(S, hs, i).mul(meanGh)).mul(rs);
            v.add(FloatVector.fromArray(S, xs, i)).intoArray(xs, i);
        }
    }
}
