package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * INT8 and UINT8 without the Vector API. The static loops are also the vector kernels' tails, which is what keeps the
 * two paths bit-identical. Sums and products wrap, and the bitwise ops act, identically for both signednesses; only MIN,
 * MAX and AVG's division read UINT8 as 0..255.
 */
final class ScalarByteKernel extends AbstractKernel {
    private final boolean unsigned;

    ScalarByteKernel(DataType type, ReduceOp op) {
        super(type, op);
        this.unsigned = type == DataType.UINT8;
    }

    @Override
    void combine0(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        switch (op) {
            case SUM, AVG -> sum(a, ao, b, bo, o, oo, n);
            case PROD -> prod(a, ao, b, bo, o, oo, n);
            case MIN -> {
                if (unsigned) {
                    minUnsigned(a, ao, b, bo, o, oo, n);
                } else {
                    min(a, ao, b, bo, o, oo, n);
                }
            }
            case MAX -> {
                if (unsigned) {
                    maxUnsigned(a, ao, b, bo, o, oo, n);
                } else {
                    max(a, ao, b, bo, o, oo, n);
                }
            }
            case BAND -> and(a, ao, b, bo, o, oo, n);
            case BOR -> or(a, ao, b, bo, o, oo, n);
            case BXOR -> xor(a, ao, b, bo, o, oo, n);
        }
    }

    @Override
    void divide(MemorySegment buf, long offset, long n, int divisor) {
        if (unsigned) {
            divideUnsigned(buf, offset, n, divisor);
        } else {
            divideSigned(buf, offset, n, divisor);
        }
    }

    @Override
    String implementation() {
        return "scalar";
    }

    static void sum(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) (a.get(JAVA_BYTE, ao + i) + b.get(JAVA_BYTE, bo + i)));
        }
    }

    static void prod(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) (a.get(JAVA_BYTE, ao + i) * b.get(JAVA_BYTE, bo + i)));
        }
    }

    static void min(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) Math.min(a.get(JAVA_BYTE, ao + i), b.get(JAVA_BYTE, bo + i)));
        }
    }

    static void max(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) Math.max(a.get(JAVA_BYTE, ao + i), b.get(JAVA_BYTE, bo + i)));
        }
    }

    static void minUnsigned(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            int x = Byte.toUnsignedInt(a.get(JAVA_BYTE, ao + i));
            int y = Byte.toUnsignedInt(b.get(JAVA_BYTE, bo + i));
            o.set(JAVA_BYTE, oo + i, (byte) Math.min(x, y));
        }
    }

    static void maxUnsigned(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            int x = Byte.toUnsignedInt(a.get(JAVA_BYTE, ao + i));
            int y = Byte.toUnsignedInt(b.get(JAVA_BYTE, bo + i));
            o.set(JAVA_BYTE, oo + i, (byte) Math.max(x, y));
        }
    }

    static void and(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) (a.get(JAVA_BYTE, ao + i) & b.get(JAVA_BYTE, bo + i)));
        }
    }

    static void or(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) (a.get(JAVA_BYTE, ao + i) | b.get(JAVA_BYTE, bo + i)));
        }
    }

    static void xor(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        for (long i = 0; i < n; i++) {
            o.set(JAVA_BYTE, oo + i, (byte) (a.get(JAVA_BYTE, ao + i) ^ b.get(JAVA_BYTE, bo + i)));
        }
    }

    static void divideSigned(MemorySegment buf, long off, long n, int divisor) {
        for (long i = 0; i < n; i++) {
            buf.set(JAVA_BYTE, off + i, (byte) (buf.get(JAVA_BYTE, off + i) / divisor));
        }
    }

    static void divideUnsigned(MemorySegment buf, long off, long n, int divisor) {
        for (long i = 0; i < n; i++) {
            buf.set(JAVA_BYTE, off + i, (byte) (Byte.toUnsignedInt(buf.get(JAVA_BYTE, off + i)) / divisor));
        }
    }
}
