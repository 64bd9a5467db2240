package io.hcomm4j.rma;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.kernel.ElementCombine;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Element-atomic read-modify-write on window memory (the target's own, or a same-host member's mapping): the one place
 * where accumulates and atomics touch it, from the origin (direct path) and from the target's progress engine (for
 * origins on other hosts) alike, so both kinds are atomic with respect to each other. 8- and 4-byte elements are
 * VarHandle atomics on the element (SUM and the bitwise ops of INT32 and INT64 a single get-and-add or
 * get-and-bitwise-and/or/xor); 2- and 1-byte elements a compare-and-set of the aligned 4-byte word that holds them.
 * Offsets must be multiples of the element size (window memory is 8-byte aligned).
 */
final class ElementAtomics {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private ElementAtomics() {
    }

    /**
     * {@code t[off] = t[off] op operand} for one element; returns the old element's bits (low bits, zero above).
     */
    static long apply(MemorySegment t, long off, DataType type, ReduceOp op, long operand) {
        switch (type.byteSize()) {
            case 8 -> {
                if (op == ReduceOp.NO_OP) return (long) LONG.getVolatile(t, off);
                if (op == ReduceOp.REPLACE) return (long) LONG.getAndSet(t, off, operand);
                if (type == DataType.INT64 && op == ReduceOp.SUM) return (long) LONG.getAndAdd(t, off, operand);
                // bitwise ops are defined on INT64 only among the 8-byte types (checked before)
                if (op == ReduceOp.BAND) return (long) LONG.getAndBitwiseAnd(t, off, operand);
                if (op == ReduceOp.BOR) return (long) LONG.getAndBitwiseOr(t, off, operand);
                if (op == ReduceOp.BXOR) return (long) LONG.getAndBitwiseXor(t, off, operand);
                while (true) {
                    long old = (long) LONG.getVolatile(t, off);
                    long now = ElementCombine.combine(type, op, old, operand);
                    if (now == old || LONG.compareAndSet(t, off, old, now)) return old;
                }
            }
            case 4 -> {
                if (op == ReduceOp.NO_OP) return 0xFFFF_FFFFL & (int) INT.getVolatile(t, off);
                if (op == ReduceOp.REPLACE) return 0xFFFF_FFFFL & (int) INT.getAndSet(t, off, (int) operand);
                if (type == DataType.INT32 && op == ReduceOp.SUM) return 0xFFFF_FFFFL & (int) INT.getAndAdd(t, off, (int) operand);
                // and on INT32 only among the 4-byte ones
                if (op == ReduceOp.BAND) return 0xFFFF_FFFFL & (int) INT.getAndBitwiseAnd(t, off, (int) operand);
                if (op == ReduceOp.BOR) return 0xFFFF_FFFFL & (int) INT.getAndBitwiseOr(t, off, (int) operand);
                if (op == ReduceOp.BXOR) return 0xFFFF_FFFFL & (int) INT.getAndBitwiseXor(t, off, (int) operand);
                while (true) {
                    int old = (int) INT.getVolatile(t, off);
                    int now = (int) ElementCombine.combine(type, op, 0xFFFF_FFFFL & old, operand);
                    if (now == old || INT.compareAndSet(t, off, old, now)) return 0xFFFF_FFFFL & old;
                }
            }
            default -> {
                long word = off & ~3L;
                int shift = (int) (off - word) * 8;
                long elemMask = type.byteSize() == 1 ? 0xFFL : 0xFFFFL;
                int mask = (int) (elemMask << shift);
                while (true) {
                    int w = (int) INT.getVolatile(t, word);
                    long old = (w >>> shift) & elemMask;
                    long now = ElementCombine.combine(type, op, old, operand);
                    int nw = (w & ~mask) | ((int) now << shift);
                    if (nw == w || INT.compareAndSet(t, word, w, nw)) return old;
                }
            }
        }
    }

    /** If the element equals {@code expected} it becomes {@code desired}; returns the element found (4 or 8 bytes). */
    static long compareAndSwap(MemorySegment t, long off, DataType type, long expected, long desired) {
        if (type.byteSize() == 8) return (long) LONG.compareAndExchange(t, off, expected, desired);
        return 0xFFFF_FFFFL & (int) INT.compareAndExchange(t, off, (int) expected, (int) desired);
    }

    /**
     * Element by element: {@code t[off + i] = t[off + i] op o[i]} for {@code count} elements of {@code origin} from
     * {@code originOff}; if {@code old} is not null, the target's elements as they were go there, from {@code oldOff}.
     */
    static void accumulate(MemorySegment t, long off, MemorySegment origin, long originOff, long count, DataType type,
                           ReduceOp op, MemorySegment old, long oldOff) {
        int size = type.byteSize();
        for (long i = 0; i < count; i++) {
            long d = i * size;
            long prev = apply(t, off + d, type, op, read(origin, originOff + d, size));
            if (old != null) write(old, oldOff + d, size, prev);
        }
    }

    static long read(MemorySegment s, long off, int size) {
        return switch (size) {
            case 1 -> 0xFFL & s.get(ValueLayout.JAVA_BYTE, off);
            case 2 -> 0xFFFFL & s.get(ValueLayout.JAVA_SHORT_UNALIGNED, off);
            case 4 -> 0xFFFF_FFFFL & s.get(ValueLayout.JAVA_INT_UNALIGNED, off);
            default -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, off);
        };
    }

    static void write(MemorySegment s, long off, int size, long bits) {
        switch (size) {
            case 1 -> s.set(ValueLayout.JAVA_BYTE, off, (byte) bits);
            case 2 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, off, (short) bits);
            case 4 -> s.set(ValueLayout.JAVA_INT_UNALIGNED, off, (int) bits);
            default -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, off, bits);
        }
    }
}
