package io.hcomm4j.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceFunction;
import io.hcomm4j.ReduceFunctionException;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The kernels of the small types and the bitwise ops (INT16 and BOOL with every op they take; BAND, BOR, BXOR on every
 * integer type): the vector kernel, the scalar kernel and the kernel {@link ReduceKernel#of} hands out (a
 * {@link WarmingKernel} that splits calls between the two) all compute what a plain element-by-element loop written
 * here computes, on seeded random data of odd lengths (so every vector loop ends in a scalar tail) at odd offsets, for
 * accumulate and for combine into a third buffer and into {@code b}; BOOL results are 0 or 1 whatever non-zero bytes
 * came in. Then: the pairs an op does not define have no kernel, a user function's kernel, and no allocation per call.
 */
class SmallTypesKernelTest {
    private static final long SEED = Long.getLong("hcomm.test.seed", 0x5EED_2025L) ^ 0x16B0_01L;
    /** Odd lengths around every vector width (16 to 64 lanes of bytes, 8 to 32 of shorts, 2 to 16 of ints and longs). */
    private static final int[] LENGTHS = {1, 3, 7, 15, 17, 31, 33, 63, 65, 127, 129, 255, 257, 1023, 4099};
    private static final ReduceOp[] COLLECTIVE_OPS =
            Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);

    @BeforeAll
    static void vectorApiIsHere() {
        assertThat(ReduceKernel.vectorAvailable())
                .as("the tests run with --add-modules jdk.incubator.vector (hcomm.test.jvmArgs)").isTrue();
    }

    /** Every (type, op) this change brought: INT16 and BOOL with what they take, the bitwise ops on every type that takes them. */
    static Stream<Arguments> newPairs() {
        List<Arguments> pairs = new ArrayList<>();
        for (DataType type : DataType.values()) {
            for (ReduceOp op : COLLECTIVE_OPS) {
                boolean isNew = type == DataType.INT16 || type == DataType.BOOL || op.bitwise();
                if (isNew && op.accepts(type)) pairs.add(Arguments.of(type, op));
            }
        }
        return pairs.stream();
    }

    /** {@code x op y} on raw element bits, spelled out per type with Java's own operators; AVG is the sum. */
    static long plain(DataType type, ReduceOp op, long x, long y) {
        if (type == DataType.BOOL) {
            boolean a = (x & 0xFF) != 0;
            boolean b = (y & 0xFF) != 0;
            boolean r = switch (op) {
                case SUM, MAX, BOR -> a || b;
                case PROD, MIN, BAND -> a && b;
                case BXOR -> a != b;
                default -> throw new AssertionError(op);
            };
            return r ? 1 : 0;
        }
        // signed values of the element width; UINT8 compares unsigned
        long a = switch (type) {
            case INT8 -> (byte) x;
            case UINT8 -> x & 0xFF;
            case INT16 -> (short) x;
            case INT32 -> (int) x;
            default -> x;
        };
        long b = switch (type) {
            case INT8 -> (byte) y;
            case UINT8 -> y & 0xFF;
            case INT16 -> (short) y;
            case INT32 -> (int) y;
            default -> y;
        };
        long r = switch (op) {
            case SUM, AVG -> a + b;
            case PROD -> a * b;
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
            case BAND -> a & b;
            case BOR -> a | b;
            case BXOR -> a ^ b;
            default -> throw new AssertionError(op);
        };
        return r & Elements.mask(type);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("newPairs")
    void vectorScalarAndHandedOutKernelsEqualThePlainLoop(DataType type, ReduceOp op) {
        ReduceKernel vector = Elements.kernel(type, op, true);
        ReduceKernel scalar = ReduceKernel.of(type, op, false);
        ReduceKernel handedOut = ReduceKernel.of(type, op);
        assertThat(vector.toString()).contains("vector");
        assertThat(scalar.toString()).contains("scalar");
        int es = type.byteSize();
        long seed = SEED * 31 + type.ordinal() * 16L + op.ordinal();
        SplittableRandom rnd = new SplittableRandom(seed);
        try (Arena arena = Arena.ofConfined()) {
            for (int length : LENGTHS) {
                long ao = 1 + rnd.nextInt(7);
                long bo = 1 + rnd.nextInt(7);
                long oo = 1 + rnd.nextInt(7);
                long bytes = (long) length * es;
                MemorySegment a = arena.allocate(ao + bytes);
                MemorySegment b = arena.allocate(bo + bytes);
                Elements.fill(type, a, ao, length, rnd);
                Elements.fill(type, b, bo, length, rnd);
                long[] want = new long[length];
                for (int i = 0; i < length; i++) want[i] = plain(type, op, Elements.get(type, a, ao, i), Elements.get(type, b, bo, i));
                String context = String.format("seed %d, %d elements, offsets %d %d %d", seed, length, ao, bo, oo);
                for (ReduceKernel k : new ReduceKernel[] {vector, scalar, handedOut}) {
                    // combine into a third buffer
                    MemorySegment out = arena.allocate(oo + bytes);
                    k.combine(a, ao, b, bo, out, oo, length);
                    compare(type, op, want, out, oo, k + " combine, " + context);
                    // accumulate: out is a
                    MemorySegment acc = arena.allocate(ao + bytes);
                    acc.copyFrom(a);
                    k.accumulate(acc, ao, b, bo, length);
                    compare(type, op, want, acc, ao, k + " accumulate, " + context);
                    // out is b: the operand order stays a, b (the ring's "own contribution first")
                    MemorySegment intoB = arena.allocate(bo + bytes);
                    intoB.copyFrom(b);
                    k.combine(a, ao, intoB, bo, intoB, bo, length);
                    compare(type, op, want, intoB, bo, k + " combine into b, " + context);
                }
            }
        }
    }

    private static void compare(DataType type, ReduceOp op, long[] want, MemorySegment got, long offset, String context) {
        StringBuilder wrong = new StringBuilder();
        int bad = 0;
        for (int i = 0; i < want.length; i++) {
            long g = Elements.get(type, got, offset, i);
            if (g != want[i] && bad++ < 8) {
                wrong.append(String.format("%n  [%d] expected %s, got %s", i, Elements.hex(type, want[i]), Elements.hex(type, g)));
            }
            if (type == DataType.BOOL && g != 0 && g != 1) fail("%s %s (%s): BOOL element %d is %s, not 0 or 1", type, op, context, i, g);
        }
        if (bad > 0) fail("%s %s (%s): %d of %d elements differ from the plain loop:%s", type, op, context, bad, want.length, wrong);
    }

    @Test
    void boolReadsEveryNonZeroByteAsTrue() {
        // every pair of byte values, so that no non-zero byte is read as false by any path
        int n = 256 * 256;
        MemorySegment a = MemorySegment.ofArray(new byte[n]);
        MemorySegment b = MemorySegment.ofArray(new byte[n]);
        for (int i = 0; i < n; i++) {
            a.set(ValueLayout.JAVA_BYTE, i, (byte) (i >>> 8));
            b.set(ValueLayout.JAVA_BYTE, i, (byte) i);
        }
        for (ReduceOp op : COLLECTIVE_OPS) {
            if (!op.accepts(DataType.BOOL)) continue;
            for (boolean vector : new boolean[] {false, true}) {
                ReduceKernel k = Elements.kernel(DataType.BOOL, op, vector);
                MemorySegment out = MemorySegment.ofArray(new byte[n]);
                k.combine(a, 0, b, 0, out, 0, n);
                for (int i = 0; i < n; i++) {
                    long want = plain(DataType.BOOL, op, i >>> 8, i & 0xFF);
                    assertThat((long) out.get(ValueLayout.JAVA_BYTE, i)).as("%s on %d and %d", k, i >>> 8, i & 0xFF).isEqualTo(want);
                }
            }
        }
    }

    @Test
    void undefinedPairsHaveNoKernel() {
        for (DataType type : DataType.values()) {
            for (ReduceOp op : COLLECTIVE_OPS) {
                if (op.accepts(type)) continue;
                for (boolean vector : new boolean[] {false, true}) {
                    assertThatThrownBy(() -> ReduceKernel.of(type, op, vector)).isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining(op.name()).hasMessageContaining(type.name());
                }
            }
        }
        assertThat(ReduceOp.BAND.accepts(DataType.FLOAT32)).isFalse();
        assertThat(ReduceOp.BXOR.accepts(DataType.BFLOAT16)).isFalse();
        assertThat(ReduceOp.AVG.accepts(DataType.BOOL)).isFalse();
        assertThat(ReduceOp.BOR.accepts(DataType.BOOL)).isTrue();
        assertThat(ReduceOp.BAND.accepts(DataType.UINT8)).isTrue();
        assertThat(ReduceOp.AVG.accepts(DataType.INT16)).isTrue();
        assertThat(ReduceOp.REPLACE.accepts(DataType.FLOAT64)).isTrue();
    }

    @Test
    void elementCombineAgreesWithTheKernels() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        newPairs().forEach(args -> {
            DataType type = (DataType) args.get()[0];
            ReduceOp op = (ReduceOp) args.get()[1];
            if (op == ReduceOp.AVG) return; // one-sided ops have no AVG
            for (int i = 0; i < 200; i++) {
                long x = Elements.random(type, rnd);
                long y = Elements.random(type, rnd);
                assertThat(ElementCombine.combine(type, op, x, y)).as("%s %s %s %s", type, op, Elements.hex(type, x), Elements.hex(type, y))
                        .isEqualTo(plain(type, op, x, y));
            }
        });
        assertThatThrownBy(() -> ElementCombine.combine(DataType.FLOAT64, ReduceOp.BOR, 1, 2)).isInstanceOf(IllegalArgumentException.class);
        // REPLACE is a put: a BOOL byte is stored as it is
        assertThat(ElementCombine.combine(DataType.BOOL, ReduceOp.REPLACE, 0, 7)).isEqualTo(7);
    }

    @Test
    void aFunctionKernelCallsTheFunctionAndWrapsWhatItThrows() {
        ReduceFunction bitwiseOr = (a, ao, b, bo, out, oo, count) -> {
            for (long i = 0; i < count; i++) {
                short x = a.get(ValueLayout.JAVA_SHORT_UNALIGNED, ao + 2 * i);
                short y = b.get(ValueLayout.JAVA_SHORT_UNALIGNED, bo + 2 * i);
                out.set(ValueLayout.JAVA_SHORT_UNALIGNED, oo + 2 * i, (short) (x | y));
            }
        };
        ReduceKernel k = ReduceKernel.of(DataType.INT16, ReduceFunction.named("or16", bitwiseOr));
        assertThat(k.type()).isEqualTo(DataType.INT16);
        assertThat(k.op()).isNull();
        assertThat(k.toString()).contains("INT16", "'or16'", "user function");
        short[] acc = {1, 2, 4, 8, 16};
        short[] in = {16, 8, 4, 2, 1};
        k.accumulate(MemorySegment.ofArray(acc), 2, MemorySegment.ofArray(in), 0, 4);
        assertThat(acc).containsExactly(1, 18, 12, 12, 18);
        k.finish(MemorySegment.ofArray(acc), 0, 5, 7); // no AVG for functions: nothing happens
        assertThat(acc).containsExactly(1, 18, 12, 12, 18);
        // the same range checks as every kernel, before the function runs
        assertThatThrownBy(() -> k.accumulate(MemorySegment.ofArray(acc), 0, MemorySegment.ofArray(in), 0, 6))
                .isInstanceOf(IndexOutOfBoundsException.class);

        IllegalStateException boom = new IllegalStateException("boom");
        ReduceKernel failing = ReduceKernel.of(DataType.INT32, (a, ao, b, bo, out, oo, count) -> {
            throw boom;
        });
        assertThatThrownBy(() -> failing.accumulate(MemorySegment.ofArray(new int[4]), 0, MemorySegment.ofArray(new int[4]), 0, 4))
                .isInstanceOf(ReduceFunctionException.class).hasCause(boom).hasMessageContaining("(unnamed)").hasMessageContaining("boom");
        assertThatThrownBy(() -> ReduceKernel.of(DataType.INT32, (ReduceFunction) null)).isInstanceOf(NullPointerException.class);
    }

    /**
     * Once compiled, the new kernels allocate nothing per call, vector and scalar alike. Measured in a JVM of its own
     * ({@link KernelAllocationProbe}): in this one, other tests' heap segments in the kernels' type profiles can keep C2
     * from compiling a vector loop into vector code (docs/architecture.md, "Reduction kernels"), and then it boxes.
     */
    @Test
    void compiledKernelsAllocateNothing() throws Exception {
        List<String> cmd = io.hcomm4j.testing.Ranks.javaCommand(KernelAllocationProbe.class);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out;
        try (var in = p.getInputStream()) {
            out = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        assertThat(p.waitFor(3, java.util.concurrent.TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as("the probe's output:%n%s", out).isZero();
        String line = out.lines().filter(l -> l.startsWith(KernelAllocationProbe.RESULT)).findFirst().orElseThrow();
        double perCall = Double.parseDouble(line.substring(KernelAllocationProbe.RESULT.length()).trim());
        assertThat(perCall).as("bytes allocated per kernel call; the probe's output:%n%s", out).isLessThan(1.0);
    }
}
