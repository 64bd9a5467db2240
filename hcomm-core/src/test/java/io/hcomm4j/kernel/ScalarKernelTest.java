package io.hcomm4j.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The scalar kernels against {@link Reference}, element by element, for every (type, op) the op defines. */
class ScalarKernelTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
    static final long SEED = Long.getLong("hcomm.test.seed", 0x5EED_2025L);
    private static final int RANDOM_COUNT = 3000;

    static Stream<Arguments> typesAndOps() {
        return Arrays.stream(DataType.values())
                .flatMap(t -> Arrays.stream(COLLECTIVE_OPS).filter(op -> op.accepts(t)).map(op -> Arguments.of(t, op)));
    }

    static long seed(DataType type, ReduceOp op) {
        return SEED * 31 + type.ordinal() * 8L + op.ordinal();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("typesAndOps")
    void everyPairOfEdgeValues(DataType type, ReduceOp op) {
        long[] edges = Elements.edges(type);
        int n = edges.length * edges.length;
        try (Arena arena = Arena.ofConfined()) {
            // native memory at odd offsets: the scalar loops must not assume alignment
            MemorySegment a = arena.allocate(n * type.byteSize() + 3L);
            MemorySegment b = arena.allocate(n * type.byteSize() + 1L);
            MemorySegment out = arena.allocate(n * type.byteSize() + 5L);
            for (int i = 0; i < n; i++) {
                Elements.set(type, a, 3, i, edges[i / edges.length]);
                Elements.set(type, b, 1, i, edges[i % edges.length]);
            }
            ScalarKernels.of(type, op).combine(a, 3, b, 1, out, 5, n);
            check(type, op, a, 3, b, 1, out, 5, n, "edge pairs");
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("typesAndOps")
    void randomValues(DataType type, ReduceOp op) {
        long seed = seed(type, op);
        SplittableRandom rnd = new SplittableRandom(seed);
        int bytes = RANDOM_COUNT * type.byteSize();
        MemorySegment acc = MemorySegment.ofArray(new byte[bytes + 1]);
        MemorySegment in = MemorySegment.ofArray(new byte[bytes + 3]);
        Elements.fill(type, acc, 1, RANDOM_COUNT, rnd);
        Elements.fill(type, in, 3, RANDOM_COUNT, rnd);
        MemorySegment before = MemorySegment.ofArray(acc.toArray(ValueLayout.JAVA_BYTE));
        ScalarKernels.of(type, op).accumulate(acc, 1, in, 3, RANDOM_COUNT);
        check(type, op, before, 1, in, 3, acc, 1, RANDOM_COUNT, "seed " + seed);
    }

    /** Cases worked out by hand, so that the reference itself is checked too. */
    @Test
    void halfPrecisionRoundsTiesToEvenAndOverflowsToInfinity() {
        // FLOAT16: 1 + 2^-11 is half an ulp above 1: tie, 1.0 is even
        assertCombine(DataType.FLOAT16, ReduceOp.SUM, 0x3C00, 0x1000, 0x3C00);
        // (1 + 2^-10) + 2^-11: tie between odd 0x3C01 and even 0x3C02
        assertCombine(DataType.FLOAT16, ReduceOp.SUM, 0x3C01, 0x1000, 0x3C02);
        // 1 + (2^-11 + 2^-21): just above the tie
        assertCombine(DataType.FLOAT16, ReduceOp.SUM, 0x3C00, 0x1001, 0x3C01);
        // 65504 + 8 = 65512 stays below the overflow threshold; 65504 + 16 = 65520 is the tie with 65536: infinity
        assertCombine(DataType.FLOAT16, ReduceOp.SUM, 0x7BFF, 0x4800, 0x7BFF);
        assertCombine(DataType.FLOAT16, ReduceOp.SUM, 0x7BFF, 0x4C00, 0x7C00);
        // 2^-24 * 0.5 = 2^-25: tie between 0 and the smallest subnormal: 0; times 0.75 rounds up to it
        assertCombine(DataType.FLOAT16, ReduceOp.PROD, 0x0001, 0x3800, 0x0000);
        assertCombine(DataType.FLOAT16, ReduceOp.PROD, 0x0001, 0x3A00, 0x0001);
        assertCombine(DataType.FLOAT16, ReduceOp.PROD, 0x8001, 0x3800, 0x8000);
        // NaNs become the canonical quiet NaN, whatever their sign and payload; inf - inf too
        assertCombine(DataType.FLOAT16, ReduceOp.SUM, 0xFD55, 0x3C00, 0x7E00);
        assertCombine(DataType.FLOAT16, ReduceOp.SUM, 0x7C00, 0xFC00, 0x7E00);
        assertCombine(DataType.FLOAT16, ReduceOp.MAX, 0x3C00, 0x7C01, 0x7E00);
        assertCombine(DataType.FLOAT16, ReduceOp.MIN, 0x8000, 0x0000, 0x8000);
        assertCombine(DataType.FLOAT16, ReduceOp.MAX, 0x8000, 0x0000, 0x0000);

        // BFLOAT16: 1 + 2^-8 is a tie, 1.0 even; (1 + 2^-7) + 2^-8 rounds up to 1 + 2^-6
        assertCombine(DataType.BFLOAT16, ReduceOp.SUM, 0x3F80, 0x3B80, 0x3F80);
        assertCombine(DataType.BFLOAT16, ReduceOp.SUM, 0x3F81, 0x3B80, 0x3F82);
        assertCombine(DataType.BFLOAT16, ReduceOp.SUM, 0x3F80, 0x3B81, 0x3F81);
        // the largest finite (ulp 2^120) plus 2^119 is the tie with 2^128: infinity; minus 2^119 is the tie with even 0x7F7E
        assertCombine(DataType.BFLOAT16, ReduceOp.SUM, 0x7F7F, 0x7B00, 0x7F80);
        assertCombine(DataType.BFLOAT16, ReduceOp.SUM, 0xFF7F, 0xFB00, 0xFF80);
        assertCombine(DataType.BFLOAT16, ReduceOp.SUM, 0x7F7F, 0xFB00, 0x7F7E);
        assertCombine(DataType.BFLOAT16, ReduceOp.PROD, 0x7FC1, 0x0000, 0x7FC0);
        assertCombine(DataType.BFLOAT16, ReduceOp.SUM, 0xFFC0, 0x3F80, 0x7FC0);

        // UINT8 orders 0x80 and 0xFF above 0x7F; INT8 below
        assertCombine(DataType.UINT8, ReduceOp.MAX, 0x7F, 0x80, 0x80);
        assertCombine(DataType.UINT8, ReduceOp.MIN, 0xFF, 0x01, 0x01);
        assertCombine(DataType.INT8, ReduceOp.MAX, 0x7F, 0x80, 0x7F);
        assertCombine(DataType.INT8, ReduceOp.PROD, 0x80, 0xFF, 0x80);
        assertCombine(DataType.INT32, ReduceOp.SUM, 0x7FFF_FFFFL, 1, 0x8000_0000L);
    }

    private static void assertCombine(DataType type, ReduceOp op, long x, long y, long expected) {
        assertThat(Elements.hex(type, Reference.combine(type, op, x, y)))
                .as("reference %s %s %s %s", type, op, Elements.hex(type, x), Elements.hex(type, y))
                .isEqualTo(Elements.hex(type, expected));
        for (boolean vector : new boolean[] {false, true}) {
            MemorySegment a = MemorySegment.ofArray(new byte[type.byteSize()]);
            MemorySegment b = MemorySegment.ofArray(new byte[type.byteSize()]);
            Elements.set(type, a, 0, 0, x);
            Elements.set(type, b, 0, 0, y);
            ReduceKernel kernel = Elements.kernel(type, op, vector);
            kernel.accumulate(a, 0, b, 0, 1);
            assertThat(Elements.hex(type, Elements.get(type, a, 0, 0)))
                    .as("%s on %s %s", kernel, Elements.hex(type, x), Elements.hex(type, y))
                    .isEqualTo(Elements.hex(type, expected));
        }
    }

    /** out[i] against Reference.combine(a[i], b[i]); reports the first few differences. */
    static void check(DataType type, ReduceOp op, MemorySegment a, long ao, MemorySegment b, long bo,
                      MemorySegment out, long oo, long n, String context) {
        StringBuilder wrong = new StringBuilder();
        int bad = 0;
        for (long i = 0; i < n; i++) {
            long x = Elements.get(type, a, ao, i);
            long y = Elements.get(type, b, bo, i);
            long expected = Reference.combine(type, op, x, y);
            long actual = Elements.get(type, out, oo, i);
            if (!Elements.same(type, expected, actual) && bad++ < 8) {
                wrong.append(String.format("%n  [%d] %s %s %s = %s, kernel gave %s", i, Elements.hex(type, x), op,
                        Elements.hex(type, y), Elements.hex(type, expected), Elements.hex(type, actual)));
            }
        }
        if (bad > 0) {
            fail("%s %s (%s): %d of %d elements differ from the reference:%s", type, op, context, bad, n, wrong);
        }
    }
}
