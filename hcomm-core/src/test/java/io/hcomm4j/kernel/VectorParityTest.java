package io.hcomm4j.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The vector kernels compute the scalar kernels' bits (see {@link Elements#same}) for every (type, op), for counts
 * around and across vector widths, on native segments and heap segments of every carrier type, at unaligned offsets,
 * for accumulate and for combine into a separate buffer, into {@code a} and into {@code b}; and they write nothing
 * outside the result range.
 */
class VectorParityTest {
    private static final long[] COUNTS = {0, 1, 7, 31, 1000, 4099};
    /** Byte offsets, rotated over a, b and out so that every case mixes alignments. */
    private static final long[] OFFSETS = {0, 1, 3, 8, 6};
    private static final int GUARD = 64;
    private static final byte GUARD_BYTE = (byte) 0xA5;

    enum Mode { ACCUMULATE, COMBINE, OUT_IS_A, OUT_IS_B }

    @BeforeAll
    static void vectorApiIsHere() {
        assertThat(ReduceKernel.vectorAvailable())
                .as("the tests run with --add-modules jdk.incubator.vector (hcomm.test.jvmArgs)").isTrue();
    }

    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> typesAndOps() {
        return ScalarKernelTest.typesAndOps();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("typesAndOps")
    void vectorEqualsScalar(DataType type, ReduceOp op) {
        ReduceKernel vector = Elements.kernel(type, op, true);
        ReduceKernel scalar = ReduceKernel.of(type, op, false);
        if (type != DataType.FLOAT16 || VectorKernels.fp16Vectorized()) {
            assertThat(vector.toString()).contains("vector");
        }
        long seed = ScalarKernelTest.seed(type, op) ^ 0xC0FFEE;
        SplittableRandom rnd = new SplittableRandom(seed);
        try (Arena arena = Arena.ofConfined()) {
            int c = 0;
            for (long count : COUNTS) {
                for (Elements.Kind kind : Elements.Kind.values()) {
                    c++;
                    long ao = OFFSETS[c % OFFSETS.length];
                    long bo = OFFSETS[(c + 1) % OFFSETS.length];
                    long oo = OFFSETS[(c + 2) % OFFSETS.length];
                    long bytes = count * type.byteSize();
                    MemorySegment a = kind.allocate(arena, bytes + ao + GUARD);
                    MemorySegment b = kind.allocate(arena, bytes + bo + GUARD);
                    Elements.fill(type, a, ao, count, rnd);
                    Elements.fill(type, b, bo, count, rnd);
                    for (Mode mode : Mode.values()) {
                        String context = String.format("seed %d, %d elements, %s segments, %s, offsets a %d b %d out %d",
                                seed, count, kind, mode, ao, bo, oo);
                        MemorySegment viaScalar = run(scalar, mode, arena, kind, a, ao, b, bo, oo, bytes);
                        MemorySegment viaVector = run(vector, mode, arena, kind, a, ao, b, bo, oo, bytes);
                        long at = mode == Mode.OUT_IS_B ? bo : mode == Mode.COMBINE ? oo : ao;
                        compare(type, op, viaScalar, viaVector, at, count, context);
                        checkGuards(viaVector, mode == Mode.COMBINE ? 0 : at, at, bytes, context);
                    }
                }
            }
        }
    }

    /** Runs one kernel call on fresh copies of the inputs; returns the segment that holds the result. */
    private static MemorySegment run(ReduceKernel kernel, Mode mode, Arena arena, Elements.Kind kind,
                                     MemorySegment a0, long ao, MemorySegment b0, long bo, long oo, long bytes) {
        MemorySegment a = copy(arena, kind, a0);
        MemorySegment b = copy(arena, kind, b0);
        long count = bytes / kernel.type().byteSize();
        switch (mode) {
            case ACCUMULATE -> {
                guard(a, ao + bytes);
                kernel.accumulate(a, ao, b, bo, count);
                return a;
            }
            case OUT_IS_A -> {
                guard(a, ao + bytes);
                kernel.combine(a, ao, b, bo, a, ao, count);
                return a;
            }
            case OUT_IS_B -> {
                guard(b, bo + bytes);
                kernel.combine(a, ao, b, bo, b, bo, count);
                return b;
            }
            case COMBINE -> {
                MemorySegment out = kind.allocate(arena, bytes + oo + GUARD);
                guard(out, 0);
                kernel.combine(a, ao, b, bo, out, oo, count);
                return out;
            }
        }
        throw new AssertionError(mode);
    }

    private static MemorySegment copy(Arena arena, Elements.Kind kind, MemorySegment s) {
        MemorySegment c = kind.allocate(arena, s.byteSize());
        c.copyFrom(s);
        return c;
    }

    /** Fills everything from {@code from} to the end with the guard pattern (the result range is rewritten). */
    private static void guard(MemorySegment s, long from) {
        s.asSlice(from).fill(GUARD_BYTE);
    }

    private static void compare(DataType type, ReduceOp op, MemorySegment scalar, MemorySegment vector, long at,
                                long count, String context) {
        StringBuilder wrong = new StringBuilder();
        int bad = 0;
        for (long i = 0; i < count; i++) {
            long s = Elements.get(type, scalar, at, i);
            long v = Elements.get(type, vector, at, i);
            if (!Elements.same(type, s, v) && bad++ < 8) {
                wrong.append(String.format("%n  [%d] scalar %s, vector %s", i, Elements.hex(type, s), Elements.hex(type, v)));
            }
        }
        if (bad > 0) {
            fail("%s %s (%s): vector differs from scalar in %d of %d elements:%s", type, op, context, bad, count, wrong);
        }
    }

    /** The guard pattern in {@code [from, at)} and after the result range must be intact. */
    private static void checkGuards(MemorySegment result, long from, long at, long bytes, String context) {
        for (long i = from; i < result.byteSize(); i++) {
            boolean inResult = i >= at && i < at + bytes;
            if (!inResult && result.get(ValueLayout.JAVA_BYTE, i) != GUARD_BYTE) {
                fail("%s: the vector kernel wrote byte %d, outside the result range [%d, %d)", context, i, at, at + bytes);
            }
        }
    }
}
