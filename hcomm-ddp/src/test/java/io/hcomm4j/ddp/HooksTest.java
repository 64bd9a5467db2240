package io.hcomm4j.ddp;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The bfloat16 conversions: the Vector API path gives the scalar path's bits on every kind of float32. */
class HooksTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    @Test
    void vectorAndScalarConversionsGiveTheSameBits() {
        assertThat(Hooks.VECTOR).as("tests run with --add-modules jdk.incubator.vector").isTrue();
        int n = 100_003; // not a multiple of any vector length: the tail goes through the scalar loop
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment f = arena.allocate(n * 4L, 64);
            SplittableRandom r = new SplittableRandom(2026);
            float[] special = {Float.NaN, Float.intBitsToFloat(0xFFC0_0001), Float.POSITIVE_INFINITY,
                    Float.NEGATIVE_INFINITY, -0f, 0f, Float.MIN_VALUE, Float.MAX_VALUE, -Float.MAX_VALUE,
                    Float.intBitsToFloat(0x3F80_8000), Float.intBitsToFloat(0x3F81_8000), Float.intBitsToFloat(0x7F7F_FFFF)};
            for (int i = 0; i < n; i++) {
                float v = i < special.length ? special[i]
                        : switch (i % 4) {
                            case 0 -> Float.intBitsToFloat(r.nextInt());            // any bit pattern
                            case 1 -> (float) r.nextGaussian() * 1e-3f;
                            case 2 -> Float.intBitsToFloat((r.nextInt() & 0xFFFF_0000) | 0x8000); // exact ties
                            default -> (float) r.nextGaussian();
                        };
                f.setAtIndex(F32, i, v);
            }
            MemorySegment vec = arena.allocate(n * 2L, 64);
            MemorySegment sca = arena.allocate(n * 2L, 64);
            Hooks.toBf16(f, vec, n);
            Hooks.toBf16Scalar(f, sca, 0, n);
            for (int i = 0; i < n; i++) {
                assertThat(vec.getAtIndex(U16, i)).as("element %d (%s)", i, f.getAtIndex(F32, i)).isEqualTo(sca.getAtIndex(U16, i));
                float x = f.getAtIndex(F32, i);
                if (!Float.isNaN(x)) {
                    assertThat(Float.intBitsToFloat((vec.getAtIndex(U16, i) & 0xFFFF) << 16)).as("element %d", i).isEqualTo(RefHalf.bf16(x));
                } else {
                    assertThat(vec.getAtIndex(U16, i)).isEqualTo((short) 0x7FC0);
                }
            }
            MemorySegment back = arena.allocate(n * 4L, 64);
            MemorySegment backScalar = arena.allocate(n * 4L, 64);
            for (int divisor : new int[] {1, 3}) {
                Hooks.fromBf16(vec, back, n, divisor);
                Hooks.fromBf16Scalar(vec, backScalar, 0, n, divisor);
                for (int i = 0; i < n; i++) {
                    assertThat(Float.floatToRawIntBits(back.getAtIndex(F32, i))).as("element %d / %d", i, divisor)
                            .isEqualTo(Float.floatToRawIntBits(backScalar.getAtIndex(F32, i)));
                }
            }
        }
    }
}
