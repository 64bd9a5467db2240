package io.hcomm4j.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.util.SplittableRandom;
import java.util.function.IntConsumer;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorSpecies;
import org.junit.jupiter.api.Test;

/**
 * The 16-bit conversions on their own, where the kernels' element tests cannot reach every bit pattern: the scalar
 * rounding against {@link Reference}'s table search, and the vector FLOAT16 conversions against the scalar ones, on
 * every binary16 value, every rounding boundary and a spread of all float bit patterns. (The vector narrowing was also
 * checked once on all 2^32 float patterns; that takes seconds, too long for every build.)
 */
class HalfFloatsTest {
    private static final VectorSpecies<Integer> S = IntVector.SPECIES_PREFERRED;

    /** Calls {@code check} with float bit patterns where rounding to 16 bits is decided, and a spread of all others. */
    private static void floatPatterns(int fractionBits, IntConsumer check) {
        int dropped = 23 - fractionBits;
        // every 16-bit value, the midpoint to its upper neighbour and one float ulp either side (in float32 bits the
        // normal 16-bit values of one binade sit 2^dropped apart; FLOAT16 subnormals are checked separately)
        for (int sign = 0; sign <= 1; sign++) {
            for (int k = 0; k < (1 << 15); k++) {
                int base = fractionBits == 7 ? k << 16 : fp16ScaledBits(k);
                if (base == Integer.MIN_VALUE) {
                    continue;
                }
                int s = sign << 31;
                int half = 1 << (dropped - 1);
                for (int delta : new int[] {0, 1, half - 1, half, half + 1, 2 * half - 1}) {
                    check.accept(s | (base + delta));
                }
            }
        }
        for (long bits = 0; bits <= 0xFFFF_FFFFL; bits += 65_521) {
            check.accept((int) bits);
        }
        SplittableRandom rnd = new SplittableRandom(ScalarKernelTest.SEED);
        for (int i = 0; i < 65536; i++) {
            check.accept(rnd.nextInt());
        }
    }

    /** float32 bits of binary16 value k when it is normal (so its neighbours are 2^13 float ulps apart), else MIN. */
    private static int fp16ScaledBits(int k) {
        if (k < 0x0400 || k >= 0x7C00) {
            return Integer.MIN_VALUE;
        }
        return Float.floatToRawIntBits(Float.float16ToFloat((short) k));
    }

    @Test
    void scalarBf16RoundingMatchesTheReference() {
        floatPatterns(7, bits -> {
            float f = Float.intBitsToFloat(bits);
            long expected = Reference.roundBf16(f);
            long actual = HalfFloats.toBf16(f) & 0xFFFF;
            if (expected != actual) {
                fail("bfloat16 of %08x: reference %04x, HalfFloats %04x", bits, expected, actual);
            }
        });
    }

    @Test
    void scalarFp16RoundingMatchesTheReference() {
        floatPatterns(10, bits -> {
            float f = Float.intBitsToFloat(bits);
            long expected = Reference.roundFp16(f);
            long actual = HalfFloats.toFp16(f) & 0xFFFF;
            if (expected != actual) {
                fail("float16 of %08x (%s): reference %04x, HalfFloats %04x", bits, f, expected, actual);
            }
        });
        // subnormal results: around every multiple of 2^-25 below 2^-14
        for (int m = 0; m < 2 * 1024; m++) {
            float f = Math.scalb((float) m, -25);
            for (float g : new float[] {f, Math.nextDown(f), Math.nextUp(f)}) {
                if (Reference.roundFp16(g) != (HalfFloats.toFp16(g) & 0xFFFF)) {
                    fail("float16 of %s: reference %04x, HalfFloats %04x", g, Reference.roundFp16(g), HalfFloats.toFp16(g));
                }
            }
        }
    }

    @Test
    void widenedValuesAreExact() {
        for (int k = 0; k < 65536; k++) {
            double fp16 = Reference.fp16Value(k);
            double bf16 = Reference.bf16Value(k);
            assertSameValue(HalfFloats.fp16((short) k), fp16, "fp16", k);
            assertSameValue(HalfFloats.bf16((short) k), bf16, "bf16", k);
        }
    }

    private static void assertSameValue(float actual, double expected, String format, int bits) {
        boolean same = Double.isNaN(expected) ? Float.isNaN(actual)
                : Double.doubleToRawLongBits(actual) == Double.doubleToRawLongBits(expected);
        if (!same) {
            fail("%s %04x: reference %s, HalfFloats %s", format, bits, expected, actual);
        }
    }

    @Test
    void vectorFp16ConversionsEqualScalar() {
        int[] lanes = new int[S.length()];
        int[] out = new int[S.length()];
        for (int k = 0; k < 65536; k += S.length()) {
            for (int i = 0; i < lanes.length; i++) {
                lanes[i] = k + i;
            }
            VectorFp16Kernel.widen(IntVector.fromArray(S, lanes, 0)).reinterpretAsInts().intoArray(out, 0);
            for (int i = 0; i < lanes.length; i++) {
                float expected = Float.float16ToFloat((short) lanes[i]);
                float actual = Float.intBitsToFloat(out[i]);
                // NaN payloads may differ (the hardware conversion quiets signalling NaNs); results canonicalize them
                assertThat(Float.isNaN(actual) ? Float.isNaN(expected) : out[i] == Float.floatToRawIntBits(expected))
                        .as("widen %04x: vector %08x, scalar %08x", lanes[i], out[i], Float.floatToRawIntBits(expected))
                        .isTrue();
            }
        }
        int[] batch = new int[S.length()];
        int[] filled = {0};
        floatPatterns(10, bits -> {
            batch[filled[0]++] = bits;
            if (filled[0] == batch.length) {
                filled[0] = 0;
                VectorFp16Kernel.narrowToInts(IntVector.fromArray(S, batch, 0).reinterpretAsFloats()).intoArray(out, 0);
                for (int i = 0; i < batch.length; i++) {
                    int expected = HalfFloats.toFp16(Float.intBitsToFloat(batch[i])) & 0xFFFF;
                    if (out[i] != expected) {
                        fail("narrow %08x: vector %08x, scalar %04x", batch[i], out[i], expected);
                    }
                }
            }
        });
    }
}
