package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceFunction;
import io.hcomm4j.ReduceFunctionException;

import java.lang.foreign.MemorySegment;

/**
 * A user's {@link ReduceFunction} as a kernel: the algorithms call it where they would call a built-in kernel, on the
 * same ranges, after the same argument checks ({@link AbstractKernel}). Its {@link #op()} is null. Whatever the
 * function throws comes out as a {@link ReduceFunctionException} with the function's exception as its cause, so the
 * collective can tell a failed function from its own failures and tell the other ranks.
 */
final class FunctionKernel extends AbstractKernel {
    private final ReduceFunction function;

    FunctionKernel(DataType type, ReduceFunction function) {
        super(type, null);
        this.function = function;
    }

    @Override
    void combine0(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        try {
            function.combine(a, ao, b, bo, o, oo, n);
        } catch (VirtualMachineError e) {
            throw e; // out of memory, stack overflow: not the function's answer, and wrapping them may fail again
        } catch (RuntimeException | Error e) {
            throw new ReduceFunctionException("the reduce function " + label() + " threw " + e, e);
        }
    }

    @Override
    void divide(MemorySegment buf, long offset, long n, int divisor) {
        // never called: finish() divides only for AVG, and a user function has no average
    }

    @Override
    String implementation() {
        return "user function";
    }

    private String label() {
        String name = function.name();
        return name == null ? "(unnamed)" : "'" + name + "'";
    }

    @Override
    public String toString() {
        return "ReduceKernel[" + type + " " + label() + ", " + implementation() + "]";
    }
}
