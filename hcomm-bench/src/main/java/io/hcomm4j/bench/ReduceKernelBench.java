package io.hcomm4j.bench;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.kernel.ReduceKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * {@code accumulate(acc, in)} over native segments of {@code size} bytes each, four ways: the vector kernel, the
 * scalar kernel, the plain loop a user would write ({@link PlainLoops}), and {@code MemorySegment.copy} of the same
 * bytes (memcpy, the memory-bandwidth yardstick). Each also counts the bytes of {@code in} it consumed in the
 * {@link Bytes} counter, which JMH reports per second: the {@code :bytes} rows are bytes/s of input, so GB/s is the
 * score divided by 10^9 (scripts/bench-kernels.sh prints that table).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class ReduceKernelBench {

    /** Element type. */
    @Param({"FLOAT32", "FLOAT64", "INT32", "INT64", "INT8", "BFLOAT16", "FLOAT16"})
    public DataType type;

    /** Operator. */
    @Param({"SUM", "MAX"})
    public ReduceOp op;

    /** Bytes per buffer: in cache (4KiB), in L2/L3 (1MiB), in DRAM (64MiB). */
    @Param({"4KiB", "1MiB", "64MiB"})
    public String size;

    private Arena arena;
    private MemorySegment acc;
    private MemorySegment in;
    private long bytes;
    private long count;
    private ReduceKernel vector;
    private ReduceKernel scalar;

    /**
     * Input bytes consumed, reported by JMH as a rate (the {@code :bytes} secondary result). Reset every iteration, as
     * JMH requires of auxiliary counters.
     */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Bytes {
        /** Input bytes consumed in this iteration. */
        public long bytes;

        /** Starts the iteration at zero. */
        @Setup(Level.Iteration)
        public void reset() {
            bytes = 0;
        }
    }

    /** Allocates and fills the buffers once per trial; refuses to measure "vector" without the Vector API. */
    @Setup(Level.Trial)
    public void setUp() {
        bytes = parseSize(size);
        count = bytes / type.byteSize();
        vector = ReduceKernel.of(type, op, true);
        scalar = ReduceKernel.of(type, op, false);
        if (!ReduceKernel.vectorAvailable()) {
            throw new IllegalStateException("the Vector API is not available: run with --add-modules jdk.incubator.vector");
        }
        arena = Arena.ofShared();
        acc = arena.allocate(bytes, 64);
        in = arena.allocate(bytes, 64);
        fill(type, acc, in, count, new SplittableRandom(42));
    }

    /** Frees the buffers. */
    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    /** The vector kernel ({@link ReduceKernel#of} with the Vector API). */
    @Benchmark
    public void vector(Bytes counter) {
        vector.accumulate(acc, 0, in, 0, count);
        counter.bytes += bytes;
    }

    /** The scalar kernel (what {@link ReduceKernel#of} returns without the Vector API). */
    @Benchmark
    public void scalar(Bytes counter) {
        scalar.accumulate(acc, 0, in, 0, count);
        counter.bytes += bytes;
    }

    /** A plain for-loop over the segments' elements, the baseline a user would write. */
    @Benchmark
    public void loop(Bytes counter) {
        PlainLoops.accumulate(type, op, acc, in, count);
        counter.bytes += bytes;
    }

    /** Copying the input bytes: the memory-bandwidth yardstick. */
    @Benchmark
    public void memcpy(Bytes counter) {
        MemorySegment.copy(in, 0, acc, 0, bytes);
        counter.bytes += bytes;
    }

    static long parseSize(String size) {
        String s = size.trim();
        long unit = 1;
        if (s.endsWith("KiB")) {
            unit = 1L << 10;
        } else if (s.endsWith("MiB")) {
            unit = 1L << 20;
        } else if (s.endsWith("GiB")) {
            unit = 1L << 30;
        }
        String digits = unit == 1 ? s : s.substring(0, s.length() - 3);
        return Long.parseLong(digits.trim()) * unit;
    }

    /**
     * Values that keep every iteration doing ordinary arithmetic: {@code acc} large and {@code in} small and positive,
     * so that accumulating millions of times neither overflows to infinity (which would send the 16-bit conversions
     * down their short special-value paths) nor reaches subnormals (slow on x86).
     */
    static void fill(DataType type, MemorySegment acc, MemorySegment in, long count, SplittableRandom rnd) {
        for (long i = 0; i < count; i++) {
            switch (type) {
                case INT8, UINT8 -> {
                    acc.setAtIndex(JAVA_BYTE, i, (byte) rnd.nextInt());
                    in.setAtIndex(JAVA_BYTE, i, (byte) rnd.nextInt());
                }
                case INT32 -> {
                    acc.setAtIndex(JAVA_INT, i, rnd.nextInt());
                    in.setAtIndex(JAVA_INT, i, rnd.nextInt());
                }
                case INT64 -> {
                    acc.setAtIndex(JAVA_LONG, i, rnd.nextLong());
                    in.setAtIndex(JAVA_LONG, i, rnd.nextLong());
                }
                case FLOAT32 -> {
                    acc.setAtIndex(JAVA_FLOAT, i, (float) rnd.nextDouble(512, 1024));
                    in.setAtIndex(JAVA_FLOAT, i, (float) rnd.nextDouble(0, 0.1));
                }
                case FLOAT64 -> {
                    acc.setAtIndex(JAVA_DOUBLE, i, rnd.nextDouble(512, 1024));
                    in.setAtIndex(JAVA_DOUBLE, i, rnd.nextDouble(0, 0.1));
                }
                case FLOAT16 -> {
                    acc.setAtIndex(JAVA_SHORT, i,
                            Float.floatToFloat16((float) rnd.nextDouble(512, 1024)));
                    in.setAtIndex(JAVA_SHORT, i,
                            Float.floatToFloat16((float) rnd.nextDouble(0, 0.1)));
                }
                case BFLOAT16 -> {
                    acc.setAtIndex(JAVA_SHORT, i,
                            (short) (Float.floatToRawIntBits((float) rnd.nextDouble(512, 1024)) >>> 16));
                    in.setAtIndex(JAVA_SHORT, i,
                            (short) (Float.floatToRawIntBits((float) rnd.nextDouble(0, 0.1)) >>> 16));
                }
            }
        }
    }
}
