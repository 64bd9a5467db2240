package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceFunction;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Element-wise reduction of one {@link DataType} under one {@link ReduceOp} (or a user's {@link ReduceFunction}): the
 * arithmetic that every reducing collective (allreduce, reduce, reduce-scatter) runs on received chunks.
 *
 * <p>Segments may be native or heap (backed by any primitive array) and need not be aligned; elements are read and
 * written in native byte order, because the data is the user's memory. Offsets are in bytes, counts in elements.
 *
 * <p>Results are defined bit for bit, and every implementation {@link #of} returns for a (type, op) pair computes
 * exactly the same bits, so that ranks which reduce the same inputs in the same order hold identical results whether or
 * not their JVM has the Vector API:
 * <ul>
 *   <li>Integer {@link ReduceOp#SUM SUM} and {@link ReduceOp#PROD PROD} wrap as in Java; {@link DataType#UINT8 UINT8}
 *       compares (MIN, MAX) and divides (AVG) as 0..255. The bitwise ops ({@link ReduceOp#BAND BAND},
 *       {@link ReduceOp#BOR BOR}, {@link ReduceOp#BXOR BXOR}) act on the element's bits.</li>
 *   <li>{@link DataType#BOOL BOOL} reads 0 as false and any other byte as true and writes 0 or 1: SUM, MAX and BOR are
 *       a logical or, PROD, MIN and BAND a logical and, BXOR an exclusive or.</li>
 *   <li>Pairs the op does not define ({@link ReduceOp#accepts}: bitwise ops on floating types, AVG on BOOL) have no
 *       kernel.</li>
 *   <li>Floating MIN and MAX are {@link Math#min(float, float)} and {@link Math#max(float, float)}: a NaN operand wins
 *       and -0.0 is less than +0.0.</li>
 *   <li>{@link DataType#FLOAT16 FLOAT16} and {@link DataType#BFLOAT16 BFLOAT16}: both operands are widened to float32
 *       (exactly), combined in float32 and rounded once back to 16 bits, to nearest even. A NaN result is stored as the
 *       canonical quiet NaN ({@code 0x7E00}, {@code 0x7FC0}), so no hardware NaN-propagation rule can make ranks
 *       differ.</li>
 *   <li>{@link DataType#FLOAT32 FLOAT32} and {@link DataType#FLOAT64 FLOAT64} NaN results are NaN; which NaN (sign and
 *       payload) is not specified, as in Java arithmetic itself. Every other float32/float64 result is exact IEEE 754
 *       round-to-nearest-even arithmetic.</li>
 * </ul>
 *
 * <p>Kernels are thread-safe and compute the same bits every call. Once C2 has compiled them they allocate nothing per
 * call. Before that, Vector API code boxes its vectors and runs tens of times slower, so a vector kernel lets its
 * scalar twin do most of each call until a short timed head of every call shows it compiled.
 */
public interface ReduceKernel {

    /**
     * The element type this kernel reduces.
     *
     * @return the element type
     */
    DataType type();

    /**
     * The operator this kernel applies.
     *
     * @return the operator, or null for a kernel of a user's {@link ReduceFunction}
     */
    ReduceOp op();

    /**
     * {@code acc[i] = acc[i] OP in[i]} for {@code i} in {@code [0, count)}. For {@link ReduceOp#AVG AVG} this is the
     * sum step; {@link #finish} divides at the end.
     *
     * @param acc       accumulator, read and written; must not be read-only
     * @param accOffset byte offset of element 0 in {@code acc}
     * @param in        the other operand, only read; may be {@code acc} at {@code accOffset} itself, must not
     *                  overlap it otherwise
     * @param inOffset  byte offset of element 0 in {@code in}
     * @param count     number of elements
     * @throws IndexOutOfBoundsException if a range lies outside its segment (nothing is written then)
     * @throws IllegalArgumentException  if {@code count} is negative or {@code acc} is read-only
     */
    void accumulate(MemorySegment acc, long accOffset, MemorySegment in, long inOffset, long count);

    /**
     * {@code out[i] = a[i] OP b[i]} for {@code i} in {@code [0, count)}. {@code out} may be exactly {@code a} or
     * exactly {@code b} (same segment memory and offset); any other overlap between {@code out} and an input gives
     * unspecified results.
     *
     * @param a         first operand
     * @param aOffset   byte offset of element 0 in {@code a}
     * @param b         second operand
     * @param bOffset   byte offset of element 0 in {@code b}
     * @param out       result; must not be read-only
     * @param outOffset byte offset of element 0 in {@code out}
     * @param count     number of elements
     * @throws IndexOutOfBoundsException if a range lies outside its segment (nothing is written then)
     * @throws IllegalArgumentException  if {@code count} is negative or {@code out} is read-only
     */
    void combine(MemorySegment a, long aOffset, MemorySegment b, long bOffset,
                 MemorySegment out, long outOffset, long count);

    /**
     * {@link ReduceOp#AVG AVG}'s final step: {@code buf[i] = buf[i] / divisor}. Integers use Java integer division,
     * which truncates toward zero ({@link DataType#UINT8 UINT8} divides the value 0..255). Floats use IEEE division;
     * FLOAT16 and BFLOAT16 divide in float32 and round once. For every other operator this does nothing.
     *
     * @param buf     the buffer holding the sums; must not be read-only when the op is AVG
     * @param offset  byte offset of element 0 in {@code buf}
     * @param count   number of elements
     * @param divisor the number of contributions (the communicator size), at least 1
     * @throws IndexOutOfBoundsException if the range lies outside {@code buf} (nothing is written then)
     * @throws IllegalArgumentException  if the op is AVG and {@code divisor < 1}, {@code count} is negative or
     *                                   {@code buf} is read-only
     */
    void finish(MemorySegment buf, long offset, long count, int divisor);

    /**
     * The fastest available kernel for {@code (type, op)}: one built on the Vector API if the
     * {@code jdk.incubator.vector} module is usable in this JVM ({@link #vectorAvailable()}) and {@code allowVector},
     * else a scalar one. Both compute identical bits. Never fails for lack of the module: a JVM started without
     * {@code --add-modules jdk.incubator.vector} gets the scalar kernel.
     *
     * @param type        element type
     * @param op          operator
     * @param allowVector {@code false} forces the scalar kernel
     * @return a shared, thread-safe kernel
     * @throws IllegalArgumentException if {@code op} is one-sided only or not defined on {@code type}
     *                                  ({@link ReduceOp#accepts})
     */
    static ReduceKernel of(DataType type, ReduceOp op, boolean allowVector) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
        if (!op.collective()) throw new IllegalArgumentException("no reduction kernel for " + op + " (one-sided only)");
        if (!op.accepts(type)) throw new IllegalArgumentException("no reduction kernel for " + op + " on " + type + ": " + undefined(op));
        if (allowVector && VectorProbe.AVAILABLE) {
            return VectorProbe.kernel(type, op);
        }
        return ScalarKernels.of(type, op);
    }

    /** Why {@code op} is not defined on some type, for messages: which types it takes. */
    private static String undefined(ReduceOp op) {
        return op == ReduceOp.AVG ? "AVG has no meaning for BOOL (SUM is a logical or, PROD a logical and)"
                : "bitwise ops take the integer types (INT8, UINT8, INT16, INT32, INT64) and BOOL";
    }

    /**
     * A kernel that calls a user's {@code function} wherever a built-in kernel would combine, after the same argument
     * checks: {@code combine} and {@code accumulate} call {@link ReduceFunction#combine} (accumulate with {@code out}
     * being {@code a}), {@code finish} does nothing, {@link #op()} is null. What the function throws comes out as a
     * {@link io.hcomm4j.ReduceFunctionException} with its exception as the cause. The results are as deterministic as
     * the function is.
     *
     * @param type     element type (the function's business: only its size is used here)
     * @param function the function
     * @return a new kernel
     */
    static ReduceKernel of(DataType type, ReduceFunction function) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(function, "function");
        return new FunctionKernel(type, function);
    }

    /**
     * Same as {@code of(type, op, true)}.
     *
     * @param type element type
     * @param op   operator
     * @return a shared, thread-safe kernel
     * @throws IllegalArgumentException if {@code op} is one-sided only or not defined on {@code type}
     */
    static ReduceKernel of(DataType type, ReduceOp op) {
        return of(type, op, true);
    }

    /**
     * Whether the Vector API is usable in this JVM: the {@code jdk.incubator.vector} module is present (the JVM was
     * started with {@code --add-modules jdk.incubator.vector}), its first use raised no error, and the platform has
     * vectors of at least 128 bits. Decided once per JVM. Each vector kernel is also run once against its scalar twin
     * when {@link #of} first returns it; one that fails or computes other bits is replaced by the scalar kernel.
     *
     * @return whether {@link #of} returns vector kernels
     */
    static boolean vectorAvailable() {
        return VectorProbe.AVAILABLE;
    }
}
