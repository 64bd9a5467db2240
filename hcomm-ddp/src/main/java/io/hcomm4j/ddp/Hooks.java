package io.hcomm4j.ddp;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** The built-in {@link CommHook}s. */
final class Hooks {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    private Hooks() {
    }

    /** The float32 mean, in place. */
    static final CommHook AVERAGE = new CommHook() {
        @Override
        public CommFuture<Void> start(Communicator comm, Bucket b) {
            MemorySegment g = b.gradients();
            return comm.allReduceAsync(g, g, b.count(), DataType.FLOAT32, ReduceOp.AVG);
        }

        @Override
        public String toString() {
            return "average";
        }
    };

    /** The bucket rounded to a 16-bit type in its wire buffer, summed there, widened back (see {@link CommHook}). */
    static final class Compressing implements CommHook {
        private final DataType wire;

        Compressing(DataType wire) {
            this.wire = wire;
        }

        @Override
        public CommFuture<Void> start(Communicator comm, Bucket b) {
            MemorySegment w = b.wire(wire);
            if (wire == DataType.BFLOAT16) toBf16(b.gradients(), w, b.count());
            else toFp16(b.gradients(), w, b.count(), comm.size());
            return comm.allReduceAsync(w, w, b.count(), wire, ReduceOp.SUM);
        }

        @Override
        public void finish(Communicator comm, Bucket b) {
            MemorySegment w = b.wire(wire);
            if (wire == DataType.BFLOAT16) fromBf16(w, b.gradients(), b.count(), comm.size());
            else fromFp16(w, b.gradients(), b.count());
        }

        @Override
        public String toString() {
            return wire == DataType.BFLOAT16 ? "bf16" : "fp16";
        }
    }

    /** Rounds float32 to bfloat16, to nearest even; a NaN becomes the canonical quiet NaN, as the core's kernels do. */
    static short bf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) return (short) 0x7FC0;
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    /**
     * Whether the JVM has the Vector API ({@code --add-modules jdk.incubator.vector}): then the bfloat16 conversions run
     * in {@link HalfVectors}, which is loaded only then.
     */
    static final boolean VECTOR = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    static void toBf16(MemorySegment f32, MemorySegment out, long count) {
        long head = VECTOR ? count - count % HalfVectors.lanes() : 0;
        if (head > 0) HalfVectors.toBf16(f32, out, head);
        toBf16Scalar(f32, out, head, count);
    }

    /** {@code f32[i] = widen(bf16[i]) / divisor}, in float32. */
    static void fromBf16(MemorySegment bf16, MemorySegment f32, long count, int divisor) {
        long head = VECTOR ? count - count % HalfVectors.lanes() : 0;
        if (head > 0) HalfVectors.fromBf16(bf16, f32, head, divisor);
        fromBf16Scalar(bf16, f32, head, count, divisor);
    }

    /** Elements {@code [from, to)} of {@link #toBf16} without the Vector API. */
    static void toBf16Scalar(MemorySegment f32, MemorySegment out, long from, long to) {
        for (long i = from; i < to; i++) out.setAtIndex(U16, i, bf16(f32.getAtIndex(F32, i)));
    }

    /** Elements {@code [from, to)} of {@link #fromBf16} without the Vector API. */
    static void fromBf16Scalar(MemorySegment bf16, MemorySegment f32, long from, long to, int divisor) {
        float d = divisor;
        for (long i = from; i < to; i++) {
            f32.setAtIndex(F32, i, Float.intBitsToFloat((bf16.getAtIndex(U16, i) & 0xFFFF) << 16) / d);
        }
    }

    /** {@code out[i] = float16(f32[i] / divisor)}, rounded to nearest even. */
    static void toFp16(MemorySegment f32, MemorySegment out, long count, int divisor) {
        float d = divisor;
        for (long i = 0; i < count; i++) out.setAtIndex(U16, i, Float.floatToFloat16(f32.getAtIndex(F32, i) / d));
    }

    static void fromFp16(MemorySegment fp16, MemorySegment f32, long count) {
        for (long i = 0; i < count; i++) f32.setAtIndex(F32, i, Float.float16ToFloat(fp16.getAtIndex(U16, i)));
    }
}
