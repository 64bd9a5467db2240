package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

/**
 * One element of a reduction, on raw bit patterns (the element's bytes, little-endian, in the low bits of a long):
 * the arithmetic of the {@link ReduceKernel}s (same rounding, same wrap-around, same NaN and signed-zero handling), for
 * callers that combine one element at a time inside a compare-and-set loop (one-sided accumulates and atomics).
 * {@link ReduceOp#REPLACE} yields the operand and {@link ReduceOp#NO_OP} the target, as they are (also for BOOL: a
 * put copies bytes); {@link ReduceOp#AVG} and the pairs an op does not define ({@link ReduceOp#accepts}) are refused.
 */
public final class ElementCombine {
    private ElementCombine() {
    }

    /**
     * {@code target op operand} for one element of {@code type}; both arguments and the result are bit patterns in
     * the low {@code type.byteSize() * 8} bits (higher bits of the result are zero).
     */
    public static long combine(DataType type, ReduceOp op, long target, long operand) {
        if (op == ReduceOp.REPLACE) return mask(type, operand);
        if (op == ReduceOp.NO_OP) return mask(type, target);
        if (!op.accepts(type)) throw new IllegalArgumentException("no element-wise " + op + " on " + type);
        return switch (type) {
            case INT8 -> 0xFFL & integer(op, (byte) target, (byte) operand);
            case UINT8 -> 0xFFL & integer(op, target & 0xFF, operand & 0xFF);
            case INT16 -> 0xFFFFL & integer(op, (short) target, (short) operand);
            case BOOL -> bool(op, (target & 0xFF) != 0, (operand & 0xFF) != 0) ? 1 : 0;
            case INT32 -> 0xFFFF_FFFFL & integer(op, (int) target, (int) operand);
            case INT64 -> integer(op, target, operand);
            case FLOAT16 -> 0xFFFFL & HalfFloats.toFp16(real(op, HalfFloats.fp16((short) target), HalfFloats.fp16((short) operand)));
            case BFLOAT16 -> 0xFFFFL & HalfFloats.toBf16(real(op, HalfFloats.bf16((short) target), HalfFloats.bf16((short) operand)));
            case FLOAT32 -> 0xFFFF_FFFFL & Float.floatToRawIntBits(
                    real(op, Float.intBitsToFloat((int) target), Float.intBitsToFloat((int) operand)));
            case FLOAT64 -> Double.doubleToRawLongBits(real(op, Double.longBitsToDouble(target), Double.longBitsToDouble(operand)));
        };
    }

    private static long mask(DataType type, long bits) {
        return type.byteSize() == 8 ? bits : bits & ((1L << (type.byteSize() * 8)) - 1);
    }

    private static long integer(ReduceOp op, long a, long b) {
        return switch (op) {
            case SUM -> a + b;
            case PROD -> a * b;
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
            case BAND -> a & b;
            case BOR -> a | b;
            case BXOR -> a ^ b;
            default -> throw new IllegalArgumentException("no element-wise " + op);
        };
    }

    /** BOOL: SUM, MAX, BOR are or; PROD, MIN, BAND and; BXOR exclusive or (the kernels' rules). */
    private static boolean bool(ReduceOp op, boolean a, boolean b) {
        return switch (op) {
            case SUM, MAX, BOR -> a | b;
            case PROD, MIN, BAND -> a & b;
            case BXOR -> a ^ b;
            default -> throw new IllegalArgumentException("no element-wise BOOL " + op);
        };
    }

    // float and double each their own copy, like the kernels' per-type repetition: one generic version would box
    private static float real(ReduceOp op, float a, float b) {
        return switch (op) {
            case SUM -> a + b;
            case PROD -> a * b;
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
            default -> throw new IllegalArgumentException("no element-wise " + op);
        };
    }

    private static double real(ReduceOp op, double a, double b) {
        return switch (op) {
            case SUM -> a + b;
            case PROD -> a * b;
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
            default -> throw new IllegalArgumentException("no element-wise " + op);
        };
    }
}
