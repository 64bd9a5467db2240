package io.hcomm4j.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** AVG's final division on every type, scalar and vector, against {@link Reference}; other ops' finish does nothing. */
class FinishTest {
    private static final int[] DIVISORS = {1, 2, 3, 7};
    private static final long[] COUNTS = {0, 1, 7, 31, 1000, 4099};

    @ParameterizedTest
    @EnumSource(value = DataType.class, names = "BOOL", mode = EnumSource.Mode.EXCLUDE) // BOOL has no AVG
    void averageDividesLikeTheReference(DataType type) {
        long seed = ScalarKernelTest.SEED * 17 + type.ordinal();
        SplittableRandom rnd = new SplittableRandom(seed);
        long[] edges = Elements.edges(type);
        int n = 1500;
        for (int divisor : DIVISORS) {
            for (boolean vector : new boolean[] {false, true}) {
                ReduceKernel kernel = Elements.kernel(type, ReduceOp.AVG, vector);
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment buf = arena.allocate((long) n * type.byteSize() + 3);
                    long[] before = new long[n];
                    for (int i = 0; i < n; i++) {
                        before[i] = i < edges.length ? edges[i] : Elements.random(type, rnd);
                        Elements.set(type, buf, 3, i, before[i]);
                    }
                    kernel.finish(buf, 3, n, divisor);
                    StringBuilder wrong = new StringBuilder();
                    int bad = 0;
                    for (int i = 0; i < n; i++) {
                        long expected = Reference.divide(type, before[i], divisor);
                        long actual = Elements.get(type, buf, 3, i);
                        if (!Elements.same(type, expected, actual) && bad++ < 8) {
                            wrong.append(String.format("%n  [%d] %s / %d = %s, kernel gave %s", i,
                                    Elements.hex(type, before[i]), divisor, Elements.hex(type, expected),
                                    Elements.hex(type, actual)));
                        }
                    }
                    if (bad > 0) {
                        fail("%s (seed %d): %d of %d quotients differ from the reference:%s", kernel, seed, bad, n, wrong);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = DataType.class, names = "BOOL", mode = EnumSource.Mode.EXCLUDE) // BOOL has no AVG
    void vectorDivisionEqualsScalarAtEveryLengthAndOffset(DataType type) {
        long seed = ScalarKernelTest.SEED * 19 + type.ordinal();
        SplittableRandom rnd = new SplittableRandom(seed);
        ReduceKernel vector = Elements.kernel(type, ReduceOp.AVG, true);
        ReduceKernel scalar = ReduceKernel.of(type, ReduceOp.AVG, false);
        int c = 0;
        for (long count : COUNTS) {
            for (Elements.Kind kind : Elements.Kind.values()) {
                long offset = new long[] {0, 1, 3, 6}[c++ % 4];
                int divisor = DIVISORS[c % DIVISORS.length];
                try (Arena arena = Arena.ofConfined()) {
                    long bytes = count * type.byteSize();
                    MemorySegment viaScalar = kind.allocate(arena, offset + bytes + 32);
                    Elements.fill(type, viaScalar, offset, count, rnd);
                    MemorySegment viaVector = kind.allocate(arena, viaScalar.byteSize());
                    viaVector.copyFrom(viaScalar);
                    scalar.finish(viaScalar, offset, count, divisor);
                    vector.finish(viaVector, offset, count, divisor);
                    for (long i = 0; i < count; i++) {
                        long s = Elements.get(type, viaScalar, offset, i);
                        long v = Elements.get(type, viaVector, offset, i);
                        if (!Elements.same(type, s, v)) {
                            fail("%s / %d (seed %d, %d elements, %s, offset %d): [%d] scalar %s, vector %s", type,
                                    divisor, seed, count, kind, offset, i, Elements.hex(type, s), Elements.hex(type, v));
                        }
                    }
                    assertThat(viaVector.asSlice(offset + bytes).toArray(ValueLayout.JAVA_BYTE))
                            .as("bytes past the range").containsOnly(0);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = ReduceOp.class, names = {"AVG", "REPLACE", "NO_OP"}, mode = EnumSource.Mode.EXCLUDE)
    void finishOfOtherOpsLeavesTheBufferAlone(ReduceOp op) {
        for (DataType type : DataType.values()) {
            if (!op.accepts(type)) continue;
            for (boolean vector : new boolean[] {false, true}) {
                byte[] data = new byte[64];
                new SplittableRandom(op.ordinal()).nextBytes(data);
                byte[] copy = data.clone();
                ReduceKernel kernel = Elements.kernel(type, op, vector);
                kernel.finish(MemorySegment.ofArray(data), 0, 64 / type.byteSize(), 3);
                // no divisor is used, so none is checked; read-only buffers are fine too
                kernel.finish(MemorySegment.ofArray(data).asReadOnly(), 0, 64 / type.byteSize(), 0);
                assertThat(data).as("%s", kernel).isEqualTo(copy);
            }
        }
    }
}
