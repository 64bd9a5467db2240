package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * Test data for the kernels: elements as raw bits (a {@code long} holding the element's bits, zero-extended),
 * segments of every kind a user may pass, edge values and random values per type.
 */
final class Elements {
    private Elements() {
    }

    /** Where a segment's memory lives: native, or a heap array of each primitive carrier type. */
    enum Kind {
        NATIVE(1), BYTES(1), SHORTS(2), CHARS(2), INTS(4), FLOATS(4), LONGS(8), DOUBLES(8);

        final int unit;

        Kind(int unit) {
            this.unit = unit;
        }

        /** A zeroed segment of at least {@code bytes} bytes (heap arrays round up to whole carrier elements). */
        MemorySegment allocate(Arena arena, long bytes) {
            int n = (int) ((bytes + unit - 1) / unit);
            return switch (this) {
                case NATIVE -> arena.allocate(Math.max(bytes, 1), 1);
                case BYTES -> MemorySegment.ofArray(new byte[n]);
                case SHORTS -> MemorySegment.ofArray(new short[n]);
                case CHARS -> MemorySegment.ofArray(new char[n]);
                case INTS -> MemorySegment.ofArray(new int[n]);
                case FLOATS -> MemorySegment.ofArray(new float[n]);
                case LONGS -> MemorySegment.ofArray(new long[n]);
                case DOUBLES -> MemorySegment.ofArray(new double[n]);
            };
        }
    }

    /**
     * {@code ReduceKernel.of(type, op, vector)}, but with {@code vector} the vector kernel itself rather than its
     * {@link WarmingKernel}, which hands most of a call to the scalar kernel until the JIT has compiled the vector one:
     * the parity tests must run the vector code on every element.
     */
    static ReduceKernel kernel(DataType type, ReduceOp op, boolean vector) {
        ReduceKernel k = ReduceKernel.of(type, op, vector);
        return k instanceof WarmingKernel w ? w.vector() : k;
    }

    static long mask(DataType type) {
        return type.byteSize() == 8 ? -1L : (1L << (8 * type.byteSize())) - 1;
    }

    /** Element {@code index} of a sequence starting at byte {@code offset}, native order, as zero-extended bits. */
    static long get(DataType type, MemorySegment s, long offset, long index) {
        long at = offset + index * type.byteSize();
        return switch (type.byteSize()) {
            case 1 -> s.get(ValueLayout.JAVA_BYTE, at) & 0xFFL;
            case 2 -> s.get(ValueLayout.JAVA_SHORT_UNALIGNED, at) & 0xFFFFL;
            case 4 -> s.get(ValueLayout.JAVA_INT_UNALIGNED, at) & 0xFFFF_FFFFL;
            default -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
        };
    }

    static void set(DataType type, MemorySegment s, long offset, long index, long bits) {
        long at = offset + index * type.byteSize();
        switch (type.byteSize()) {
            case 1 -> s.set(ValueLayout.JAVA_BYTE, at, (byte) bits);
            case 2 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, (short) bits);
            case 4 -> s.set(ValueLayout.JAVA_INT_UNALIGNED, at, (int) bits);
            default -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, at, bits);
        }
    }

    /**
     * Whether two results are the same under the kernel contract: equal bits, except that for FLOAT32 and FLOAT64
     * any NaN equals any NaN (their NaN payloads are not specified; FLOAT16/BFLOAT16 NaNs are canonical).
     */
    static boolean same(DataType type, long x, long y) {
        if (x == y) {
            return true;
        }
        return switch (type) {
            case FLOAT32 -> Float.isNaN(Float.intBitsToFloat((int) x)) && Float.isNaN(Float.intBitsToFloat((int) y));
            case FLOAT64 -> Double.isNaN(Double.longBitsToDouble(x)) && Double.isNaN(Double.longBitsToDouble(y));
            default -> false;
        };
    }

    static String hex(DataType type, long bits) {
        return String.format("0x%0" + (2 * type.byteSize()) + "x", bits & mask(type));
    }

    /** Values where implementations tend to disagree: limits, signs, zeros, infinities, NaNs, subnormals, ties. */
    static long[] edges(DataType type) {
        return switch (type) {
            case INT8, UINT8 -> new long[] {0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFE, 0xFF, 0x40, 0x10};
            case BOOL -> new long[] {0x00, 0x00, 0x01, 0x02, 0x7F, 0x80, 0xFE, 0xFF};
            case INT16 -> new long[] {0, 1, 2, 0xFFFF, 0x7FFF, 0x8000, 0x8001, 0x00FF, 0xFF00, 182};
            case INT32 -> new long[] {0, 1, 2, 0xFFFF_FFFFL, 0x7FFF_FFFFL, 0x8000_0000L, 0x8000_0001L, 0x10000,
                    0xFFFF_0000L, 46341};
            case INT64 -> new long[] {0, 1, 2, -1, Long.MAX_VALUE, Long.MIN_VALUE, Long.MIN_VALUE + 1, 1L << 32,
                    -(1L << 32), 3037000500L};
            case FLOAT16 -> new long[] {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7D55, 0x0001, 0x8001,
                    0x0002, 0x03FF, 0x0400, 0x8400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x3C01, 0x3C02, 0x1000, 0x1001,
                    0x1400, 0x7800, 0x3800, 0x0200};
            case BFLOAT16 -> new long[] {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0x7FA5, 0x0001,
                    0x8001, 0x007F, 0x0080, 0x8080, 0x7F7F, 0xFF7F, 0x3F80, 0xBF80, 0x3F81, 0x3F82, 0x3B80, 0x3B81,
                    0x3C00, 0x7F00, 0x3F00, 0x0040};
            case FLOAT32 -> new long[] {0, 0x8000_0000L, 0x7F80_0000L, 0xFF80_0000L, 0x7FC0_0000L, 0xFFC0_0000L,
                    0x7FC0_0001L, 0x7F80_0001L, 1, 0x8000_0001L, 0x007F_FFFFL, 0x0080_0000L, 0x7F7F_FFFFL, 0xFF7F_FFFFL,
                    0x3F80_0000L, 0xBF80_0000L, 0x3F80_0001L, 0x3380_0000L, 0x3F00_0000L, 0x4B80_0000L};
            case FLOAT64 -> new long[] {0, 0x8000_0000_0000_0000L, 0x7FF0_0000_0000_0000L, 0xFFF0_0000_0000_0000L,
                    0x7FF8_0000_0000_0000L, 0xFFF8_0000_0000_0000L, 0x7FF8_0000_0000_0001L, 0x7FF0_0000_0000_0001L, 1,
                    0x8000_0000_0000_0001L, 0x000F_FFFF_FFFF_FFFFL, 0x0010_0000_0000_0000L, 0x7FEF_FFFF_FFFF_FFFFL,
                    0xFFEF_FFFF_FFFF_FFFFL, 0x3FF0_0000_0000_0000L, 0xBFF0_0000_0000_0000L, 0x3FF0_0000_0000_0001L,
                    0x3CA0_0000_0000_0000L, 0x3FE0_0000_0000_0000L};
        };
    }

    /**
     * A random element: a quarter edge values, a quarter uniformly random bits, the rest ordinary numbers in a narrow
     * range, so that float sums and products of neighbours round (and often tie) instead of being dominated by one
     * operand.
     */
    static long random(DataType type, SplittableRandom rnd) {
        int pick = rnd.nextInt(4);
        if (pick == 0) {
            long[] e = edges(type);
            return e[rnd.nextInt(e.length)];
        }
        if (pick == 1) {
            return rnd.nextLong() & mask(type);
        }
        return switch (type) {
            case INT8, UINT8 -> rnd.nextInt(-20, 21) & 0xFF;
            case BOOL -> rnd.nextBoolean() ? 0 : rnd.nextInt(1, 256);
            case INT16 -> rnd.nextInt(-1000, 1001) & 0xFFFF;
            case INT32 -> rnd.nextInt(-100_000, 100_001) & 0xFFFF_FFFFL;
            case INT64 -> rnd.nextLong(-10_000_000_000L, 10_000_000_001L);
            // exponents near 15 (1.0): sums of two such values need one or two more bits than the format has
            case FLOAT16 -> (rnd.nextBoolean() ? 0x8000 : 0) | ((long) rnd.nextInt(13, 18) << 10) | rnd.nextInt(1024);
            case BFLOAT16 -> (rnd.nextBoolean() ? 0x8000 : 0) | ((long) rnd.nextInt(124, 130) << 7) | rnd.nextInt(128);
            case FLOAT32 -> Float.floatToRawIntBits((float) rnd.nextDouble(-1000, 1000)) & 0xFFFF_FFFFL;
            case FLOAT64 -> Double.doubleToRawLongBits(rnd.nextDouble(-1000, 1000) * rnd.nextDouble());
        };
    }

    /** {@code count} random elements written at {@code offset}. */
    static void fill(DataType type, MemorySegment s, long offset, long count, SplittableRandom rnd) {
        for (long i = 0; i < count; i++) {
            set(type, s, offset, i, random(type, rnd));
        }
    }
}
