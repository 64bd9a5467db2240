package io.hcomm4j.examples.gpt;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The vector products against a plain double-precision product, on shapes that are not multiples of the vector
 * length, the register tile or the cache blocks (and some that cross the blocks), with padded row strides, offsets,
 * A read transposed, and both overwrite and accumulate. Each element must lie within {@code 1e-6·Σ|a·b| + 1e-7} of the
 * reference: float32 rounding of a k-term sum stays far inside that (about k·6e-8 relative to Σ|a·b| at worst), a
 * wrong index or a lost block is off by a whole term. Entries of C outside the m × n result (the padding of each row)
 * must be left untouched.
 */
class MatMulTest {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;

    @ParameterizedTest(name = "m={0} n={1} k={2} A transposed {3} accumulate {4}")
    @CsvSource({
        "1, 1, 1, false, false", "1, 1, 1, true, true", "3, 5, 7, false, true", "4, 64, 16, false, false",
        "5, 17, 33, true, false", "17, 33, 19, false, true", "31, 70, 257, true, true", "130, 77, 300, false, false",
        "129, 1100, 9, true, true", "200, 1500, 300, false, true", "3, 4500, 61, false, false", "16, 300, 1000, true, false"})
    void mulAddMatchesDoubleReference(int m, int n, int k, boolean transposedA, boolean accumulate) {
        SplittableRandom r = new SplittableRandom(m * 1_000_003L + n * 1009L + k);
        long lda = transposedA ? m + 3 : k + 5, ldb = n + 2, ldc = n + 7;
        long aOff = 11, bOff = 3, cOff = 5;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = random(arena, aOff + lda * (transposedA ? k : m), r);
            MemorySegment b = random(arena, bOff + ldb * k, r);
            MemorySegment c = random(arena, cOff + ldc * m, r);
            float[] before = c.toArray(F);
            long aRs = transposedA ? 1 : lda, aCs = transposedA ? lda : 1;
            new MatMul().mulAdd(m, n, k, a, aOff, aRs, aCs, b, bOff, ldb, c, cOff, ldc, accumulate);
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    double sum = accumulate ? before[(int) (cOff + i * ldc + j)] : 0, size = Math.abs(sum);
                    for (int kk = 0; kk < k; kk++) {
                        double p = (double) a.getAtIndex(F, aOff + i * aRs + kk * aCs) * b.getAtIndex(F, bOff + kk * ldb + j);
                        sum += p;
                        size += Math.abs(p);
                    }
                    assertClose(c.getAtIndex(F, cOff + i * ldc + j), sum, size, i, j);
                }
            }
            assertPaddingUntouched(c, before, m, n, cOff, ldc);
        }
    }

    @ParameterizedTest(name = "m={0} n={1} k={2} accumulate {3}")
    @CsvSource({
        "1, 1, 1, false", "1, 1, 1, true", "3, 5, 7, true", "4, 4, 16, false", "5, 17, 33, false", "17, 33, 19, true",
        "9, 600, 500, false", "130, 77, 300, true", "16, 70, 4100, false", "6, 7, 15, true"})
    void mulAddTransBMatchesDoubleReference(int m, int n, int k, boolean accumulate) {
        SplittableRandom r = new SplittableRandom(m * 7919L + n * 104729L + k);
        long lda = k + 3, ldb = k + 1, ldc = n + 5;
        long aOff = 2, bOff = 9, cOff = 1;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = random(arena, aOff + lda * m, r);
            MemorySegment b = random(arena, bOff + ldb * n, r);
            MemorySegment c = random(arena, cOff + ldc * m, r);
            float[] before = c.toArray(F);
            new MatMul().mulAddTransB(m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc, accumulate);
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    double sum = accumulate ? before[(int) (cOff + i * ldc + j)] : 0, size = Math.abs(sum);
                    for (int kk = 0; kk < k; kk++) {
                        double p = (double) a.getAtIndex(F, aOff + i * lda + kk) * b.getAtIndex(F, bOff + j * ldb + kk);
                        sum += p;
                        size += Math.abs(p);
                    }
                    assertClose(c.getAtIndex(F, cOff + i * ldc + j), sum, size, i, j);
                }
            }
            assertPaddingUntouched(c, before, m, n, cOff, ldc);
        }
    }

    @Test
    void emptyDepthOverwritesWithZerosOrLeavesC() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = arena.allocate(6 * 4);
            c.fill((byte) 0x3f);
            float[] before = c.toArray(F);
            MatMul mm = new MatMul();
            mm.mulAdd(2, 3, 0, c, 0, 0, 0, c, 0, 3, c, 0, 3, true);
            assertThat(c.toArray(F)).containsExactly(before);
            mm.mulAdd(2, 3, 0, c, 0, 0, 0, c, 0, 3, c, 0, 3, false);
            assertThat(c.toArray(F)).containsOnly(0f);
        }
    }

    @Test
    void sameInputsGiveTheSameBitsInterpretedAndCompiled() {
        SplittableRandom r = new SplittableRandom(5);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = random(arena, 70 * 90, r), b = random(arena, 90 * 50, r);
            MemorySegment c = arena.allocate(70 * 50 * 4), d = arena.allocate(70 * 90 * 4);
            MatMul mm = new MatMul();
            float[] firstC = null, firstD = null;
            for (int rep = 0; rep < 300; rep++) {   // the first calls run interpreted, the later ones compiled
                mm.mulAdd(70, 50, 90, a, 0, 90, 1, b, 0, 50, c, 0, 50, false);
                mm.mulAddTransB(70, 90, 50, c, 0, 50, b, 0, 50, d, 0, 90, false);
                if (rep == 0) {
                    firstC = c.toArray(F);
                    firstD = d.toArray(F);
                } else {
                    assertThat(c.toArray(F)).as("rep %d", rep).containsExactly(firstC);
                    assertThat(d.toArray(F)).as("rep %d", rep).containsExactly(firstD);
                }
            }
        }
    }

    private static void assertClose(float got, double want, double size, int i, int j) {
        assertThat((double) got).as("C(%d,%d)", i, j).isCloseTo(want, Offset.offset(1e-6 * size + 1e-7));
    }

    private static void assertPaddingUntouched(MemorySegment c, float[] before, int m, int n, long cOff, long ldc) {
        float[] after = c.toArray(F);
        for (int idx = 0; idx < after.length; idx++) {
            long rel = idx - cOff;
            boolean inside = rel >= 0 && rel / ldc < m && rel % ldc < n;
            if (!inside) {
                assertThat(after[idx]).as("C's padding at %d", idx).isEqualTo(before[idx]);
            }
        }
    }

    private static MemorySegment random(Arena arena, long n, SplittableRandom r) {
        MemorySegment s = arena.allocate(n * 4, 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(F, i, (float) (2 * r.nextDouble() - 1));
        }
        return s;
    }
}
