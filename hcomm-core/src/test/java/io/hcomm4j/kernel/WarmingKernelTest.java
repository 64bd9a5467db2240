package io.hcomm4j.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link WarmingKernel}: while cold it splits each call between a timed vector head and the scalar kernel, and the
 * results are the scalar kernel's bits at every length (around the head's length too) and offset; once the vector
 * kernel has come back fast often enough it takes over, with the same bits.
 */
class WarmingKernelTest {
    private static final long SEED = 0x5EED_3A7L;
    private static final long[] COUNTS = {0, 1, 7, WarmingKernel.PROBE - 1, WarmingKernel.PROBE, WarmingKernel.PROBE + 1,
        WarmingKernel.PROBE + 63, 4099};

    /** A fresh, cold wrapper of the (type, op) vector kernel, or null where that type has no vector kernel here. */
    private static WarmingKernel cold(DataType type, ReduceOp op) {
        ReduceKernel vector = Elements.kernel(type, op, true);
        ReduceKernel scalar = ReduceKernel.of(type, op, false);
        if (vector.getClass() == scalar.getClass()) return null; // FLOAT16 with 128-bit vectors
        return new WarmingKernel((AbstractKernel) vector, (AbstractKernel) scalar);
    }

    @Test
    void ofWrapsEveryVectorKernel() {
        assertThat(ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM)).isInstanceOf(WarmingKernel.class);
        assertThat(ReduceKernel.of(DataType.INT8, ReduceOp.MAX, true)).isInstanceOf(WarmingKernel.class);
        assertThat(ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM, false)).isNotInstanceOf(WarmingKernel.class);
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void coldCallsComputeTheScalarBitsAtEveryLength(DataType type) {
        SplittableRandom rnd = new SplittableRandom(SEED ^ type.ordinal());
        int es = type.byteSize();
        for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX, ReduceOp.AVG, ReduceOp.BXOR}) {
            if (!op.accepts(type)) continue;
            WarmingKernel k = cold(type, op);
            if (k == null) continue;
            ReduceKernel scalar = ReduceKernel.of(type, op, false);
            for (long count : COUNTS) {
                long off = es * (1 + rnd.nextInt(3)); // not at a vector boundary
                try (Arena arena = Arena.ofConfined()) {
                    long bytes = off + count * es;
                    MemorySegment a = arena.allocate(bytes);
                    MemorySegment b = arena.allocate(bytes);
                    Elements.fill(type, a, off, count, rnd);
                    Elements.fill(type, b, off, count, rnd);
                    MemorySegment got = arena.allocate(bytes);
                    MemorySegment want = arena.allocate(bytes);
                    k.combine(a, off, b, off, got, off, count);
                    scalar.combine(a, off, b, off, want, off, count);
                    k.finish(got, off, count, 3);
                    scalar.finish(want, off, count, 3);
                    for (long i = 0; i < count; i++) {
                        long g = Elements.get(type, got, off, i);
                        long w = Elements.get(type, want, off, i);
                        assertThat(Elements.same(type, g, w))
                                .as("%s %s count %d element %d: %s, scalar %s", type, op, count, i,
                                        Elements.hex(type, g), Elements.hex(type, w))
                                .isTrue();
                    }
                    // accumulate in place: acc is a, the other operand b
                    MemorySegment acc = arena.allocate(bytes);
                    acc.copyFrom(a);
                    k.accumulate(acc, off, b, off, count);
                    scalar.accumulate(a, off, b, off, count);
                    for (long i = 0; i < count; i++) {
                        assertThat(Elements.same(type, Elements.get(type, acc, off, i), Elements.get(type, a, off, i)))
                                .as("%s %s accumulate, count %d element %d", type, op, count, i).isTrue();
                    }
                }
            }
            assertThat(k.warm()).as("a few calls do not make it warm").isFalse();
        }
    }

    @Test
    void theVectorKernelTakesOverOnceCompiledWithTheSameBits() {
        WarmingKernel k = cold(DataType.FLOAT32, ReduceOp.SUM);
        ReduceKernel scalar = ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM, false);
        int count = 8192;
        SplittableRandom rnd = new SplittableRandom(SEED);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(count * 4L);
            MemorySegment b = arena.allocate(count * 4L);
            MemorySegment got = arena.allocate(count * 4L);
            MemorySegment want = arena.allocate(count * 4L);
            for (int i = 0; i < count; i++) { // no NaN: its bits are not specified, the rest are
                a.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, (float) rnd.nextGaussian());
                b.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, (float) rnd.nextGaussian());
            }
            // the JIT compiles the vector head after some thousands of calls; a loaded machine may take a while
            long deadline = System.nanoTime() + 120_000_000_000L;
            long calls = 0;
            while (!k.warm() && System.nanoTime() < deadline) {
                k.combine(a, 0, b, 0, got, 0, count);
                calls++;
            }
            assertThat(k.warm()).as("warm after %d calls", calls).isTrue();
            assertThat(k.toString()).doesNotContain("scalar");
            got.fill((byte) 0);
            k.combine(a, 0, b, 0, got, 0, count);
            scalar.combine(a, 0, b, 0, want, 0, count);
            assertThat(got.mismatch(want)).isEqualTo(-1);
        }
    }

    @Test
    void aBadRangeFailsBeforeAnythingIsWritten() {
        WarmingKernel k = cold(DataType.INT32, ReduceOp.SUM);
        int[] out = new int[1000];
        MemorySegment o = MemorySegment.ofArray(out);
        MemorySegment in = MemorySegment.ofArray(new int[1000]).fill((byte) 1);
        // the head would fit, the whole range does not
        assertThatThrownBy(() -> k.combine(in, 0, in, 0, o, 8, 1000)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(out).containsOnly(0);
    }
}
