package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The element-wise and row-wise pieces of the models that need no exponential, forward and backward, on float32
 * {@link MemorySegment}s in native order: ReLU, bias rows and their column sums, the softmax's backward, and the
 * helpers the other classes share ({@link LayerNorm} and {@link Activations} have the rest). Offsets and lengths are
 * in floats.
 * Whole vectors first, then a scalar tail, so any width works: the tiny shapes of the gradient checks run mostly
 * through the tails, the benchmark shapes through the vectors.
 */
final class Ops {
    static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    static final int L = S.length();
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    private static final VectorShuffle<Float> SWAP32 = swap(32), SWAP16 = swap(16), SWAP8 = swap(8);
    private static final VectorShuffle<Float> SWAP4 = swap(4), SWAP2 = swap(2), SWAP1 = swap(1);

    private Ops() {
    }

    /** Lane i takes lane i ^ h: pairs h apart swap; null when h is not below the lane count. */
    private static VectorShuffle<Float> swap(int h) {
        return h < L ? VectorShuffle.fromOp(S, i -> i ^ h) : null;
    }

    static FloatVector ld(MemorySegment s, long index) {
        return FloatVector.fromMemorySegment(S, s, index << 2, ORDER);
    }

    static FloatVector ld(MemorySegment s, long index, VectorMask<Float> mask) {
        return FloatVector.fromMemorySegment(S, s, index << 2, ORDER, mask);
    }

    static void st(FloatVector v, MemorySegment s, long index) {
        v.intoMemorySegment(s, index << 2, ORDER);
    }

    static void st(FloatVector v, MemorySegment s, long index, VectorMask<Float> mask) {
        v.intoMemorySegment(s, index << 2, ORDER, mask);
    }

    static float get(MemorySegment s, long index) {
        return s.getAtIndex(F, index);
    }

    static void set(MemorySegment s, long index, float v) {
        s.setAtIndex(F, index, v);
    }

    /**
     * The sum of v's lanes in a fixed pairwise order (lane i plus lane i + L/2, and so on down). {@code
     * reduceLanes(ADD)} leaves its order open, and the JIT-compiled and the interpreted Vector API do add in
     * different orders: a result would then depend on whether the code had been compiled yet. Lane shuffles and
     * lane-wise adds are exact in every mode. The 16-lane path is split into methods under C2's 35-byte limit for
     * always inlining: a call it did not inline would box v (allocate) every time, as happened from a cold call site.
     */
    static float sumLanes(FloatVector v) {
        return L == 16 ? sum16(v) : sumAnyLength(v);
    }

    private static float sum16(FloatVector v) {
        return fold(fold(fold(fold(v, SWAP8), SWAP4), SWAP2), SWAP1).lane(0);
    }

    private static FloatVector fold(FloatVector v, VectorShuffle<Float> swap) {
        return v.add(v.rearrange(swap));
    }

    /**
     * {@link #sumLanes(FloatVector)} of lanes already stored in an array (L floats from off; overwritten): the same
     * order, so the same bits, in scalar code that takes no vector argument.
     */
    static float sumLanes(float[] a, int off) {
        for (int h = L / 2; h >= 1; h /= 2) {
            for (int i = off; i < off + h; i++) {
                a[i] = a[i] + a[i + h];
            }
        }
        return a[off];
    }

    private static float sumAnyLength(FloatVector v) {
        if (L > 32) {
            v = fold(v, SWAP32);
        }
        if (L > 16) {
            v = fold(v, SWAP16);
        }
        if (L > 8) {
            v = fold(v, SWAP8);
        }
        if (L > 4) {
            v = fold(v, SWAP4);
        }
        if (L > 2) {
            v = fold(v, SWAP2);
        }
        if (L > 1) {
            v = fold(v, SWAP1);
        }
        return v.lane(0);
    }

    /** Whole-vector part of n. */
    static int full(int n) {
        return n - n % L;
    }

    /** {@code dst[0..n) = src[0..n)}. */
    static void copy(MemorySegment src, long s, MemorySegment dst, long d, long n) {
        MemorySegment.copy(src, s << 2, dst, d << 2, n << 2);
    }

    /** {@code a[0..n) = s[o..o+n)}, and zeros up to the next whole vector (a must reach that far). */
    static void toArray(MemorySegment s, long o, float[] a, int n) {
        int i = 0;
        for (; i < full(n); i += L) {
            ld(s, o + i).intoArray(a, i);
        }
        if (i < n) {
            ld(s, o + i, S.indexInRange(i, n)).intoArray(a, i);
        }
    }

    /** {@code s[o..o+n) = a[0..n)}. */
    static void fromArray(float[] a, MemorySegment s, long o, int n) {
        int i = 0;
        for (; i < full(n); i += L) {
            st(FloatVector.fromArray(S, a, i), s, o + i);
        }
        if (i < n) {
            st(FloatVector.fromArray(S, a, i), s, o + i, S.indexInRange(i, n));
        }
    }

    /** {@code s[o..o+n) = 0}. */
    static void zero(MemorySegment s, long o, int n) {
        int i = 0;
        FloatVector z = FloatVector.zero(S);
        for (; i < full(n); i += L) {
            st(z, s, o + i);
        }
        for (; i < n; i++) {
            set(s, o + i, 0f);
        }
    }

    /** {@code dst[0..n) += src[0..n)}. */
    static void addTo(MemorySegment src, long s, MemorySegment dst, long d, int n) {
        int i = 0;
        for (; i < full(n); i += L) {
            st(ld(dst, d + i).add(ld(src, s + i)), dst, d + i);
        }
        for (; i < n; i++) {
            set(dst, d + i, get(dst, d + i) + get(src, s + i));
        }
    }

    /** {@code out = a + b} over n floats. */
    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment out, long oo, int n) {
        int i = 0;
        for (; i < full(n); i += L) {
            st(ld(a, ao + i).add(ld(b, bo + i)), out, oo + i);
        }
        for (; i < n; i++) {
            set(out, oo + i, get(a, ao + i) + get(b, bo + i));
        }
    }

    /** Every one of rows rows (stride ld) of out starts as the bias: the product then accumulates onto it. */
    static void biasRows(MemorySegment p, long bias, MemorySegment out, long o, int rows, int cols, long ld) {
        for (int r = 0; r < rows; r++) {
            copy(p, bias, out, o + r * ld, cols);
        }
    }

    /** {@code g[j] += Σ_r d[r][j]}, rows in order: a bias's gradient. */
    static void colSumAdd(MemorySegment d, long o, int rows, int cols, long ld, MemorySegment g, long go) {
        for (int r = 0; r < rows; r++) {
            addTo(d, o + r * ld, g, go, cols);
        }
    }

    /** ReLU in place over n floats. */
    static void relu(MemorySegment x, long o, int n) {
        int i = 0;
        for (; i < full(n); i += L) {
            st(ld(x, o + i).max(0f), x, o + i);
        }
        for (; i < n; i++) {
            set(x, o + i, Math.max(0f, get(x, o + i)));
        }
    }

    /** {@code d *= (h > 0)}: ReLU's backward, h its output. */
    static void reluBackward(MemorySegment h, long ho, MemorySegment d, long o, int n) {
        int i = 0;
        FloatVector zero = FloatVector.zero(S);
        for (; i < full(n); i += L) {
            VectorMask<Float> off = ld(h, ho + i).compare(VectorOperators.LE, 0f);
            st(ld(d, o + i).blend(zero, off), d, o + i);
        }
        for (; i < n; i++) {
            if (get(h, ho + i) <= 0f) {
                set(d, o + i, 0f);
            }
        }
    }

    /** {@code d *= s} over n floats: a GELU's backward, s its slope from {@link Activations#gelu}. */
    static void mulInPlace(MemorySegment s, long so, MemorySegment d, long o, int n) {
        int i = 0;
        for (; i < full(n); i += L) {
            st(ld(d, o + i).mul(ld(s, so + i)), d, o + i);
        }
        for (; i < n; i++) {
            set(d, o + i, get(d, o + i) * get(s, so + i));
        }
    }

    /**
     * Softmax's backward on a row of the first n probabilities p, in place on dp:
     * {@code dp = scale·p·(dp − Σ p·dp)} (the scale the scores were multiplied by before the softmax).
     */
    static void softmaxBackwardPrefix(MemorySegment p, long po, MemorySegment dp, long o, int n, int len, float scale) {
        FloatVector acc = FloatVector.zero(S);
        int i = 0;
        for (; i < full(n); i += L) {
            acc = ld(p, po + i).fma(ld(dp, o + i), acc);
        }
        float dot = sumLanes(acc);
        for (; i < n; i++) {
            dot = Math.fma(get(p, po + i), get(dp, o + i), dot);
        }
        i = 0;
        for (; i < full(n); i += L) {
            st(ld(dp, o + i).sub(dot).mul(ld(p, po + i)).mul(scale), dp, o + i);
        }
        for (; i < n; i++) {
            set(dp, o + i, (get(dp, o + i) - dot) * get(p, po + i) * scale);
        }
        zero(dp, o + n, len - n);
    }
}
