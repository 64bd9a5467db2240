package io.hcomm4j.bench;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The baseline: {@code acc[i] = acc[i] OP in[i]} as a user would write it over two aligned native segments, one
 * straightforward loop per (type, op), left to C2 to optimize (and, where it can, auto-vectorize). The 16-bit loops
 * round the usual way but do not canonicalize NaNs.
 */
final class PlainLoops {
    private PlainLoops() {
    }

    static void accumulate(DataType type, ReduceOp op, MemorySegment acc, MemorySegment in, long n) {
        boolean max = op == ReduceOp.MAX;
        if (op != ReduceOp.SUM && !max) {
            throw new IllegalArgumentException("the plain loops cover SUM and MAX, not " + op);
        }
        switch (type) {
            case FLOAT32 -> {
                if (max) {
                    maxFloat(acc, in, n);
                } else {
                    sumFloat(acc, in, n);
                }
            }
            case FLOAT64 -> {
                if (max) {
                    maxDouble(acc, in, n);
                } else {
                    sumDouble(acc, in, n);
                }
            }
            case INT32 -> {
                if (max) {
                    maxInt(acc, in, n);
                } else {
                    sumInt(acc, in, n);
                }
            }
            case INT64 -> {
                if (max) {
                    maxLong(acc, in, n);
                } else {
                    sumLong(acc, in, n);
                }
            }
            case INT8 -> {
                if (max) {
                    maxByte(acc, in, n);
                } else {
                    sumByte(acc, in, n);
                }
            }
            case BFLOAT16 -> {
                if (max) {
                    maxBf16(acc, in, n);
                } else {
                    sumBf16(acc, in, n);
                }
            }
            case FLOAT16 -> {
                if (max) {
                    maxFp16(acc, in, n);
                } else {
                    sumFp16(acc, in, n);
                }
            }
            default -> throw new IllegalArgumentException("no plain loop for " + type);
        }
    }

    static void sumFloat(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_FLOAT, i, acc.getAtIndex(JAVA_FLOAT, i) + in.getAtIndex(JAVA_FLOAT, i));
        }
    }

    static void maxFloat(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_FLOAT, i, Math.max(acc.getAtIndex(JAVA_FLOAT, i), in.getAtIndex(JAVA_FLOAT, i)));
        }
    }

    static void sumDouble(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_DOUBLE, i, acc.getAtIndex(JAVA_DOUBLE, i) + in.getAtIndex(JAVA_DOUBLE, i));
        }
    }

    static void maxDouble(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_DOUBLE, i, Math.max(acc.getAtIndex(JAVA_DOUBLE, i), in.getAtIndex(JAVA_DOUBLE, i)));
        }
    }

    static void sumInt(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_INT, i, acc.getAtIndex(JAVA_INT, i) + in.getAtIndex(JAVA_INT, i));
        }
    }

    static void maxInt(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_INT, i, Math.max(acc.getAtIndex(JAVA_INT, i), in.getAtIndex(JAVA_INT, i)));
        }
    }

    static void sumLong(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_LONG, i, acc.getAtIndex(JAVA_LONG, i) + in.getAtIndex(JAVA_LONG, i));
        }
    }

    static void maxLong(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_LONG, i, Math.max(acc.getAtIndex(JAVA_LONG, i), in.getAtIndex(JAVA_LONG, i)));
        }
    }

    static void sumByte(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.set(JAVA_BYTE, i, (byte) (acc.get(JAVA_BYTE, i) + in.get(JAVA_BYTE, i)));
        }
    }

    static void maxByte(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.set(JAVA_BYTE, i, (byte) Math.max(acc.get(JAVA_BYTE, i), in.get(JAVA_BYTE, i)));
        }
    }

    static float bf16(short h) {
        return Float.intBitsToFloat(h << 16);
    }

    static short toBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    static void sumBf16(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_SHORT, i, toBf16(bf16(acc.getAtIndex(JAVA_SHORT, i)) + bf16(in.getAtIndex(JAVA_SHORT, i))));
        }
    }

    static void maxBf16(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            acc.setAtIndex(JAVA_SHORT, i,
                    toBf16(Math.max(bf16(acc.getAtIndex(JAVA_SHORT, i)), bf16(in.getAtIndex(JAVA_SHORT, i)))));
        }
    }

    static void sumFp16(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            float sum = Float.float16ToFloat(acc.getAtIndex(JAVA_SHORT, i)) + Float.float16ToFloat(in.getAtIndex(JAVA_SHORT, i));
            acc.setAtIndex(JAVA_SHORT, i, Float.floatToFloat16(sum));
        }
    }

    static void maxFp16(MemorySegment acc, MemorySegment in, long n) {
        for (long i = 0; i < n; i++) {
            float max = Math.max(Float.float16ToFloat(acc.getAtIndex(JAVA_SHORT, i)),
                    Float.float16ToFloat(in.getAtIndex(JAVA_SHORT, i)));
            acc.setAtIndex(JAVA_SHORT, i, Float.floatToFloat16(max));
        }
    }
}
