package io.hcomm4j.examples.gpt;

import static io.hcomm4j.examples.gpt.Ops.L;
import static io.hcomm4j.examples.gpt.Ops.S;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/**
 * The pieces that take exponentials: GELU (and its slope), the causal softmax of attention, and the cross-entropy.
 * One instance per model (it owns scratch arrays), for one thread.
 *
 * <p>Two things shape the code. First, the exponential is this class's own ({@link #exp(FloatVector)}), from float
 * arithmetic alone: {@code lanewise(EXP)} is a vector math library once compiled and {@code Math.exp} before, which
 * round differently, and a model's results would then depend on whether the JIT had compiled it yet. Second, work
 * is staged through heap arrays, a row or a chunk at a time: copied in (padded to whole vectors), computed by small
 * loops over whole vectors, copied out. A vector handed to a helper that C2 does not inline (too large for a cold call
 * site, or past the node budget of a big method) is boxed on every call; written as one big loop, GELU ran two to
 * three times slower and made hundreds of MB/s of garbage. exp is called only from such small loops.
 */
final class Activations {
    private static final int CHUNK = 512;
    private static final float INV_SQRT2 = (float) (1 / Math.sqrt(2));
    private static final float INV_SQRT_2PI = (float) (1 / Math.sqrt(2 * Math.PI));
    // exp: ln 2 in two parts (the high one short, so k·LN2_HI is exact), and 1.5·2^23, which rounds to an integer
    private static final float LN2_HI = 0.693145751953125f, LN2_LO = 1.42860682030941723212e-6f;
    private static final float LOG2E = 1.44269504088896341f, ROUNDER = 12582912f;
    private static final float EXP_HI = 88f, EXP_LO = -87.3f;
    /**
     * Numerical Recipes' (3rd ed., §6.2.2) Chebyshev coefficients of erfc: the first 12 of its 28, which truncate at a
     * relative error of 1.1e-8 (in double), below float's 6e-8.
     */
    private static final float[] ERFC_COF = {
        -1.3026537197817094f, 6.4196979235649026e-1f, 1.9476473204185836e-2f, -9.561514786808631e-3f,
        -9.46595344482036e-4f, 3.66839497852761e-4f, 4.2523324806907e-5f, -2.0278578112534e-5f,
        -1.624290004647e-6f, 1.303655835580e-6f, 1.5626441722e-8f, -8.5238095915e-8f};

    private final float[] xs, ts, ps, es;
    /** One vector's lanes, to sum in scalar code: a vector handed to a method C2 did not inline is boxed. */
    private final float[] lanes = new float[L];

    /** Scratch for rows of up to maxRow floats (a softmax or cross-entropy row) and for GELU's chunks. */
    Activations(int maxRow) {
        int n = roundUp(Math.max(CHUNK, maxRow));
        xs = new float[n];
        ts = new float[n];
        ps = new float[n];
        es = new float[n];
    }

    private static int roundUp(int n) {
        return (n + L - 1) / L * L;
    }

    /**
     * {@code e^x} for every lane: x = k·ln2 + r with |r| ≤ ln2/2 (ln2 in two parts, so r is exact), {@code e^r} by
     * its Taylor polynomial to r⁷ (truncation 6e-9, under half a float ulp), times 2^k built in the exponent bits.
     * Below −87.3 (where 2^k would leave the normal range, and for −∞) the result is 0, above 88 it is e^88; within 1
     * ulp in between (checked in GptOpsTest).
     */
    static FloatVector exp(FloatVector x) {
        FloatVector xc = x.min(EXP_HI);
        FloatVector k = xc.mul(LOG2E).add(ROUNDER).sub(ROUNDER);
        FloatVector r = k.mul(-LN2_HI).add(xc);
        r = k.mul(-LN2_LO).add(r);
        FloatVector p = r.mul(1f / 5040).add(1f / 720);
        p = p.mul(r).add(1f / 120);
        p = p.mul(r).add(1f / 24);
        p = p.mul(r).add(1f / 6);
        p = p.mul(r).add(0.5f);
        p = p.mul(r).add(1f);
        p = p.mul(r).add(1f);
        IntVector bits = ((IntVector) k.convert(VectorOperators.F2I, 0)).add(127).lanewise(VectorOperators.LSHL, 23);
        return p.mul(bits.reinterpretAsFloats()).blend(0f, x.compare(VectorOperators.LT, EXP_LO));
    }

    /** The scalar twin of {@link #exp(FloatVector)}: the same operations, so the same bits as a lane would get. */
    static float exp(float x) {
        float xc = Math.min(x, EXP_HI);
        float k = xc * LOG2E + ROUNDER - ROUNDER;
        float r = k * -LN2_HI + xc;
        r = k * -LN2_LO + r;
        float p = r * (1f / 5040) + 1f / 720;
        p = p * r + 1f / 120;
        p = p * r + 1f / 24;
        p = p * r + 1f / 6;
        p = p * r + 0.5f;
        p = p * r + 1f;
        p = p * r + 1f;
        float y = p * Float.intBitsToFloat(((int) k + 127) << 23);
        return x < EXP_LO ? 0f : y;
    }

    /** {@code a[0..n) = exp(a[0..n))}, n a multiple of the vector length. */
    private static void expInPlace(float[] a, int n) {
        for (int i = 0; i < n; i += L) {
            exp(FloatVector.fromArray(S, a, i)).intoArray(a, i);
        }
    }

    /**
     * {@code act = x·Φ(x)} over n floats, torch.nn.GELU() (the exact, erf form); with slope, x is then overwritten by
     * GELU's derivative there, {@code Φ(x) + x·φ(x)}, all the backward needs of it (so Φ is computed once).
     *
     * <p>Φ(x) = erfc(−x/√2)/2, with {@code erfc(|x|/√2) = t·exp(P(ty))·exp(−x²/2)}, P the Chebyshev series in
     * {@code ty = 4t − 2}, {@code t = 2/(2+z)}. The exponent is split so that no rounding of a large number reaches
     * it: {@code x²/2} comes from x itself, exactly, as {@code fl(x²)/2} plus a small rest that joins the small P
     * (dividing x by √2 first would round z², by 6e-8 relative, and e^(−z²) with it: 5e-7 at x = 3). The second
     * exponential is φ's as well. About 6·2^-24 relative error at worst, tails included (GptOpsTest).
     */
    void gelu(MemorySegment x, long xo, MemorySegment act, long ao, int n, boolean slope) {
        for (int c0 = 0; c0 < n; c0 += CHUNK) {
            int len = Math.min(CHUNK, n - c0);
            int padded = load(x, xo + c0, len, 0f);
            erfcParts(padded);
            expInPlace(ps, padded);
            expInPlace(es, padded);
            geluFinish(padded, slope);
            Ops.fromArray(ts, act, ao + c0, len);
            if (slope) {
                Ops.fromArray(ps, x, xo + c0, len);
            }
        }
    }

    /** From xs: ts = t, ps = the exponent's small part, es = −x²/2 (its large part). */
    private void erfcParts(int n) {
        for (int i = 0; i < n; i += L) {
            FloatVector x = FloatVector.fromArray(S, xs, i);
            FloatVector z = x.abs().mul(INV_SQRT2);
            FloatVector t = FloatVector.broadcast(S, 2f).div(z.add(2f));
            FloatVector ty = t.mul(4f).sub(2f);
            FloatVector d = FloatVector.zero(S), dd = d;
            for (int j = ERFC_COF.length - 1; j > 0; j--) {
                FloatVector tmp = d;
                d = ty.fma(d, dd.neg()).add(ERFC_COF[j]);
                dd = tmp;
            }
            FloatVector x2 = x.mul(x);
            FloatVector x2Low = x.fma(x, x2.neg());
            t.intoArray(ts, i);
            ty.fma(d, FloatVector.broadcast(S, ERFC_COF[0])).mul(0.5f).sub(dd).sub(x2Low.mul(0.5f)).intoArray(ps, i);
            x2.mul(-0.5f).intoArray(es, i);
        }
    }

    /** With ps and es exponentiated: ts = x·Φ(x), and (for slope) ps = Φ(x) + x·φ(x). */
    private void geluFinish(int n, boolean slope) {
        for (int i = 0; i < n; i += L) {
            FloatVector x = FloatVector.fromArray(S, xs, i), e = FloatVector.fromArray(S, es, i);
            FloatVector half = FloatVector.fromArray(S, ts, i).mul(FloatVector.fromArray(S, ps, i)).mul(e).mul(0.5f);
            // erfc(−|z|) = 2 − erfc(|z|): Φ(x) = 1 − erfc(x/√2)/2 for x > 0
            FloatVector cdf = half.blend(half.neg().add(1f), x.compare(VectorOperators.GT, 0f));
            x.mul(cdf).intoArray(ts, i);
            if (slope) {
                x.mul(e.mul(INV_SQRT_2PI)).add(cdf).intoArray(ps, i);
            }
        }
    }

    /**
     * One row of causal attention scores into probabilities, in place: entries [0, n) are scaled and soft-maxed, the
     * masked ones [n, len) set to 0.
     */
    void softmaxPrefix(MemorySegment s, long o, int n, int len, float scale) {
        int padded = load(s, o, n, Float.NEGATIVE_INFINITY);
        float shift = max(padded) * scale;
        float sum = shiftExpSum(padded, scale, shift);
        scale(padded, 1f / sum);
        Ops.fromArray(xs, s, o, n);
        Ops.zero(s, o + n, len - n);
    }

    /**
     * Cross-entropy of one row of n logits against target: returns {@code logsumexp − logit[target]} and, if
     * gradScale ≠ 0, turns the row into its gradient {@code (softmax − onehot)·gradScale}.
     */
    double crossEntropyRow(MemorySegment z, long o, int n, int target, float gradScale) {
        int padded = load(z, o, n, Float.NEGATIVE_INFINITY);
        float max = max(padded);
        float sum = shiftExpSum(padded, 1f, max);
        double loss = StrictMath.log(sum) + max - Ops.get(z, o + target);
        if (gradScale != 0f) {
            scale(padded, gradScale / sum);
            xs[target] -= gradScale;
            Ops.fromArray(xs, z, o, n);
        }
        return loss;
    }

    /**
     * xs = the n floats at o, padded to whole vectors with pad (−∞ for a softmax: its exponential is 0); returns the
     * padded length. By vectors rather than MemorySegment.copy: for rows this short, C2 did not always remove the heap
     * segment that copy wraps around the array, and copies allocated.
     */
    private int load(MemorySegment s, long o, int n, float pad) {
        int i = 0;
        for (; i < Ops.full(n); i += L) {
            Ops.ld(s, o + i).intoArray(xs, i);
        }
        if (i < n) {
            VectorMask<Float> in = S.indexInRange(i, n);
            Ops.ld(s, o + i, in).blend(pad, in.not()).intoArray(xs, i);
            i += L;
        }
        return i;
    }

    private float max(int n) {
        FloatVector m = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        for (int i = 0; i < n; i += L) {
            m = m.max(FloatVector.fromArray(S, xs, i));
        }
        return m.reduceLanes(VectorOperators.MAX);   // max is exact in any order
    }

    /** xs = exp(xs·scale − shift); returns their sum, in a fixed order. */
    private float shiftExpSum(int n, float scale, float shift) {
        FloatVector acc = FloatVector.zero(S);
        for (int i = 0; i < n; i += L) {
            FloatVector e = exp(FloatVector.fromArray(S, xs, i).mul(scale).sub(shift));
            e.intoArray(xs, i);
            acc = acc.add(e);
        }
        acc.intoArray(lanes, 0);
        return Ops.sumLanes(lanes, 0);
    }

    private void scale(int n, float by) {
        for (int i = 0; i < n; i += L) {
            FloatVector.fromArray(S, xs, i).mul(by).intoArray(xs, i);
        }
    }
}
