package io.hcomm4j.ddp;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The bfloat16 conversions of {@link Hooks} with the Vector API: the same bits as the scalar loops (round to nearest
 * even, NaN to the canonical 0x7FC0), several times faster on a bucket of tens of MB. Loaded only when the JVM has the
 * module ({@link Hooks#VECTOR}); the tails go through the scalar code.
 */
final class HalfVectors {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    /** As many 16-bit lanes as F has floats: half its width. */
    private static final VectorSpecies<Short> S =
            VectorSpecies.of(short.class, VectorShape.forBitSize(F.vectorBitSize() / 2));
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();

    private HalfVectors() {
    }

    /** Converts elements {@code [0, n)} with {@code n} a multiple of {@link #lanes()}. */
    static void toBf16(MemorySegment f32, MemorySegment out, long n) {
        for (long i = 0; i < n; i += F.length()) {
            IntVector bits = FloatVector.fromMemorySegment(F, f32, i * 4, ORDER).reinterpretAsInts();
            IntVector rounded = bits.add(0x7FFF).add(bits.lanewise(VectorOperators.LSHR, 16).and(1))
                    .lanewise(VectorOperators.LSHR, 16);
            VectorMask<Integer> nan = bits.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000);
            rounded = rounded.blend(0x7FC0, nan);
            ((ShortVector) rounded.convertShape(VectorOperators.I2S, S, 0)).intoMemorySegment(out, i * 2, ORDER);
        }
    }

    /** {@code f32[i] = widen(bf16[i]) / divisor} for {@code [0, n)}, {@code n} a multiple of {@link #lanes()}. */
    static void fromBf16(MemorySegment bf16, MemorySegment f32, long n, float divisor) {
        for (long i = 0; i < n; i += F.length()) {
            IntVector wide = (IntVector) ShortVector.fromMemorySegment(S, bf16, i * 2, ORDER)
                    .convertShape(VectorOperators.S2I, I, 0);
            // the sign extension of S2I lies in the bits the shift pushes out: the same as (s & 0xFFFF) << 16
            wide.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().div(divisor).intoMemorySegment(f32, i * 4, ORDER);
        }
    }

    static int lanes() {
        return F.length();
    }
}
