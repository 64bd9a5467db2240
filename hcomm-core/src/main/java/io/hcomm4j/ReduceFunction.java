package io.hcomm4j;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A user-defined reduction (like {@code MPI_Op_create}): element-wise {@code out[i] = a[i] ⊕ b[i]} over {@code count}
 * elements of the type the collective was called with. Pass it instead of a {@link ReduceOp} to
 * {@link UserReductions#allReduce(MemorySegment, MemorySegment, long, DataType, ReduceFunction) allReduce},
 * {@link UserReductions#reduce(MemorySegment, MemorySegment, long, DataType, ReduceFunction, int) reduce} or
 * {@link UserReductions#reduceScatter(MemorySegment, MemorySegment, long, DataType, ReduceFunction) reduceScatter}.
 *
 * <p><b>What the library calls.</b> The collective's algorithms call {@link #combine} wherever a built-in kernel would
 * combine two partial results, on the same chunks and in the same fixed order, so every rank receives bit-identical
 * results as long as the function itself is deterministic: the same inputs give the same bits, on every rank and every
 * run. The order depends on the communicator size, the message size and the algorithm (the shared-memory path
 * combines the ranks' inputs in rank order; ring and tree algorithms in their own fixed orders), so the operator must
 * be associative, and should be commutative: for one that is not, every rank still gets the same bits, but which order
 * the operands met in is not specified (unlike MPI's non-commutative operators, which combine in rank order).
 *
 * <p><b>How to write one.</b> Offsets are in bytes, counts in elements. The segments may be native or heap memory and
 * are not necessarily aligned: read and write with unaligned layouts ({@code JAVA_INT_UNALIGNED} ...), in native byte
 * order. {@code out} is exactly {@code a}, exactly {@code b} (same memory, same offset) or disjoint from both: read
 * {@code a[i]} and {@code b[i]} before writing {@code out[i]}, and the element-wise loop is right in every case. For
 * example, the element of largest magnitude of INT32 vectors:
 * <pre>{@code
 * ReduceFunction maxAbs = ReduceFunction.named("maxAbs", (a, ao, b, bo, out, oo, count) -> {
 *     for (long i = 0; i < count; i++) {
 *         int x = a.get(JAVA_INT_UNALIGNED, ao + 4 * i);
 *         int y = b.get(JAVA_INT_UNALIGNED, bo + 4 * i);
 *         out.set(JAVA_INT_UNALIGNED, oo + 4 * i, Math.abs(y) > Math.abs(x) ? y : x);
 *     }
 * });
 * comm.allReduce(send, recv, count, DataType.INT32, maxAbs);
 * }</pre>
 *
 * <p><b>Rules.</b> Every rank passes the same function (the same code, in its own JVM): the library cannot compare
 * code across processes, so ranks that pass different functions get whatever the mixture computes. A
 * {@linkplain #named named} function's name goes into the collective's fingerprint: ranks that pass different names (or
 * a name where another passes a built-in op or an unnamed function) fail with {@link CollectiveMismatchException}
 * instead. The function may run on any of the library's threads, several calls at once (other collectives, other
 * communicators): keep it free of shared mutable state. It must not call the communicator, nor keep the segments
 * after it returns. It is called only for what the algorithms combine: a collective on one rank may not call it at
 * all, and {@code count} may be 0.
 *
 * <p><b>Failure.</b> If it throws, the collective fails on that rank with a {@link ReduceFunctionException} whose cause
 * is the function's exception, and every rank still waiting on that rank's part fails too instead of waiting for it
 * (with a {@code ReduceFunctionException} naming the rank over the transport, or an {@link HcommException} saying that
 * the rank failed in its part in shared memory). Ranks that no longer need that rank (a reduce's ranks below it in the
 * tree, for instance) may complete normally. The communicator stays usable.
 */
@FunctionalInterface
public interface ReduceFunction {
    /**
     * {@code out[i] = a[i] ⊕ b[i]} for {@code i} in {@code [0, count)}.
     *
     * @param a         first operand
     * @param aOffset   byte offset of element 0 in {@code a}
     * @param b         second operand
     * @param bOffset   byte offset of element 0 in {@code b}
     * @param out       result: exactly {@code a} at {@code aOffset}, exactly {@code b} at {@code bOffset}, or disjoint
     *                  from both
     * @param outOffset byte offset of element 0 in {@code out}
     * @param count     number of elements (of the collective's type), {@code >= 0}
     */
    void combine(MemorySegment a, long aOffset, MemorySegment b, long bOffset, MemorySegment out, long outOffset, long count);

    /**
     * The name that goes into the collective's fingerprint (see {@link #named}), or {@code null}: unnamed functions
     * are all alike to the mismatch check.
     *
     * @return the name, or null for a plain lambda
     */
    default String name() {
        return null;
    }

    /**
     * {@code function} under {@code name}: collectives whose ranks pass different names fail with a
     * {@link CollectiveMismatchException} instead of mixing functions.
     *
     * @param name     a name every rank spells the same ("maxAbs")
     * @param function the function
     * @return a function that combines as {@code function} does and reports {@code name}
     */
    static ReduceFunction named(String name, ReduceFunction function) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(function, "function");
        return new ReduceFunction() {
            @Override
            public void combine(MemorySegment a, long aOffset, MemorySegment b, long bOffset, MemorySegment out, long outOffset,
                                long count) {
                function.combine(a, aOffset, b, bOffset, out, outOffset, count);
            }

            @Override
            public String name() {
                return name;
            }

            @Override
            public String toString() {
                return "ReduceFunction[" + name + "]";
            }
        };
    }
}
