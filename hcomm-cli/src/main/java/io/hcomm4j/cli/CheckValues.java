package io.hcomm4j.cli;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemorySegment;

/**
 * The inputs of {@code hcomm perf --check} and the results they must give: small integers every type holds exactly
 * (so float sums are exact in any order), encoded per element type, and the expected result of each reduction.
 */
final class CheckValues {
    private CheckValues() {
    }

    /**
     * Largest magnitude of the SUM/AVG/MIN/MAX inputs on {@code n} ranks: 3, less when a sum of {@code n} of them
     * could leave the integers the type holds exactly (float16: 2048, bfloat16: 256, float32: 2^24).
     */
    static int amplitude(DataType type, int n) {
        long exact = switch (type) {
            case FLOAT16 -> 2048;
            case BFLOAT16 -> 256;
            case FLOAT32 -> 1 << 24;
            default -> Long.MAX_VALUE;
        };
        return (int) Math.min(3, exact / n);
    }

    /**
     * The value rank {@code r} of {@code n} contributes at element {@code i}: for PROD 2, -1 or 1 (so products are
     * powers of two, exact in every type or overflowing the same way in any order); otherwise an integer in
     * [-a, a], {@code a = }{@link #amplitude}. Integer types hold it wrapped (UINT8: -1 is 255).
     */
    static long input(ReduceOp op, DataType type, int n, int r, long i) {
        if (op == ReduceOp.PROD) {
            if ((i + r) % 3 == 0) return 2;
            return (i + 2L * r) % 5 == 0 ? -1 : 1;
        }
        int a = amplitude(type, n);
        return Math.floorMod(i * 5 + r * 3L + 1, 2 * a + 1) - a;
    }

    /** The bits of the integer {@code v} as an element of {@code type}. */
    static long encode(DataType type, long v) {
        return switch (type) {
            case INT8, UINT8 -> v & 0xFF;
            case BOOL -> v == 0 ? 0 : 1;
            case INT16 -> v & 0xFFFF;
            case INT32 -> v & 0xFFFF_FFFFL;
            case INT64 -> v;
            case FLOAT16 -> Float.floatToFloat16((float) v) & 0xFFFF;
            case BFLOAT16 -> toBf16((float) v);
            case FLOAT32 -> Float.floatToRawIntBits((float) v) & 0xFFFF_FFFFL;
            case FLOAT64 -> Double.doubleToRawLongBits(v);
        };
    }

    /**
     * The exact result at element {@code i} of reducing every rank's {@link #input} with {@code op}, as bits of
     * {@code type}. Integers wrap as in Java (UINT8 compares and divides as 0..255); AVG divides the wrapped sum
     * with Java integer division, and for floats divides the (exact) sum in the type's arithmetic, float16 and
     * bfloat16 in float32 rounded once, as the library's kernels do. BOOL is 0 or 1: SUM, MAX, BOR or; PROD, MIN, BAND
     * and; BXOR exclusive or.
     */
    static long reference(ReduceOp op, DataType type, int n, long i) {
        switch (type) {
            case BOOL -> {
                boolean acc = input(op, type, n, 0, i) != 0;
                for (int q = 1; q < n; q++) {
                    boolean x = input(op, type, n, q, i) != 0;
                    acc = switch (op) {
                        case SUM, MAX, BOR -> acc | x;
                        case PROD, MIN, BAND -> acc & x;
                        case BXOR -> acc ^ x;
                        default -> throw new IllegalArgumentException(op + " is not a BOOL reduction");
                    };
                }
                return acc ? 1 : 0;
            }
            case INT8, UINT8, INT16, INT32, INT64 -> {
                long acc = logical(type, input(op, type, n, 0, i));
                for (int q = 1; q < n; q++) {
                    long x = logical(type, input(op, type, n, q, i));
                    acc = switch (op) {
                        case SUM, AVG -> acc + x;
                        case PROD -> acc * x;
                        case MIN -> Math.min(acc, x);
                        case MAX -> Math.max(acc, x);
                        case BAND -> acc & x;
                        case BOR -> acc | x;
                        case BXOR -> acc ^ x;
                        case REPLACE, NO_OP -> throw new IllegalArgumentException(op + " is not a reduction");
                    };
                }
                if (op == ReduceOp.AVG) acc = logical(type, acc) / n;
                return encode(type, acc);
            }
            default -> {
                double acc = input(op, type, n, 0, i);
                for (int q = 1; q < n; q++) {
                    double x = input(op, type, n, q, i);
                    acc = switch (op) {
                        case SUM, AVG -> acc + x;
                        case PROD -> acc * x;
                        case MIN -> Math.min(acc, x);
                        case MAX -> Math.max(acc, x);
                        default -> throw new IllegalArgumentException(op + " is not a floating-point reduction");
                    };
                }
                boolean avg = op == ReduceOp.AVG;
                if (type == DataType.FLOAT64) return Double.doubleToRawLongBits(avg ? acc / n : acc);
                float f = (float) acc;
                if (avg) f = f / n;
                return switch (type) {
                    case FLOAT16 -> Float.floatToFloat16(f) & 0xFFFF;
                    case BFLOAT16 -> toBf16(f);
                    default -> Float.floatToRawIntBits(f) & 0xFFFF_FFFFL;
                };
            }
        }
    }

    /** The integer an element of an integer {@code type} holding {@code v} (wrapped) stands for. */
    private static long logical(DataType type, long v) {
        return switch (type) {
            case INT8 -> (byte) v;
            case UINT8 -> v & 0xFF;
            case INT16 -> (short) v;
            case INT32 -> (int) v;
            default -> v;
        };
    }

    /** float32 to bfloat16 bits, rounding to nearest even (no NaN arises here). */
    static long toBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        return ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16) & 0xFFFF;
    }

    /** The bits a data-movement source with {@code salt} writes at element {@code index}: a hash, so displaced data shows. */
    static long pattern(long salt, long index, int elementSize) {
        long z = salt * 0x9E3779B97F4A7C15L + index + 1;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return (z ^ (z >>> 31)) & mask(elementSize);
    }

    static long mask(int elementSize) {
        return elementSize == 8 ? -1L : (1L << (8 * elementSize)) - 1;
    }

    /** Element {@code i} of {@code seg} (elements of {@code es} bytes, native order) as unsigned bits. */
    static long getBits(MemorySegment seg, int es, long i) {
        return switch (es) {
            case 1 -> seg.get(JAVA_BYTE, i) & 0xFFL;
            case 2 -> seg.get(JAVA_SHORT, i * 2) & 0xFFFFL;
            case 4 -> seg.get(JAVA_INT, i * 4) & 0xFFFF_FFFFL;
            default -> seg.get(JAVA_LONG, i * 8);
        };
    }

    static void setBits(MemorySegment seg, int es, long i, long bits) {
        switch (es) {
            case 1 -> seg.set(JAVA_BYTE, i, (byte) bits);
            case 2 -> seg.set(JAVA_SHORT, i * 2, (short) bits);
            case 4 -> seg.set(JAVA_INT, i * 4, (int) bits);
            default -> seg.set(JAVA_LONG, i * 8, bits);
        }
    }
}
