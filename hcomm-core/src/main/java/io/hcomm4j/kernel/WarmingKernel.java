package io.hcomm4j.kernel;

import java.lang.foreign.MemorySegment;

/**
 * A vector kernel that lets its scalar twin do the work until the JIT has compiled it.
 *
 * <p><b>Why.</b> Until C2 compiles a Vector API loop, every vector operation is a boxed object in Java code: tens to
 * hundreds of times slower than the scalar loop, which the interpreter and C1 run tolerably and which C2 compiles after
 * a few long calls. A fresh JVM's first collectives spent milliseconds per call in uncompiled vector code
 * (docs/performance.md, "From the first call"). So each call first gives a short head of {@link #PROBE} elements to
 * the vector kernel, timed, and the rest to the scalar one; once the head has come back fast {@link #FAST_IN_A_ROW}
 * times in a row the vector kernel is compiled, and from then on it does everything. The heads are what gets it
 * compiled (its invocations and loop iterations count), and they are short enough to cost little while it is not.
 *
 * <p>Both kernels compute the same bits (checked when the vector kernel is made, {@link VectorKernels}), so where the
 * split falls changes nothing in the results. Arguments are checked once, here, before either writes.
 */
final class WarmingKernel extends AbstractKernel {
    /**
     * Elements of the vector head: whole vectors and a ragged end, so the tail code gets compiled too. A call of at
     * most this many elements goes to the scalar kernel whole.
     */
    static final long PROBE = 259;
    /** A head that took less is compiled code (uncompiled, it takes tens of microseconds). */
    private static final long FAST_NANOS = 2_000;
    /** Fast heads in a row before the vector kernel takes over (one fast head may be luck of the clock). */
    static final int FAST_IN_A_ROW = 16;

    private final AbstractKernel vector;
    private final AbstractKernel scalar;
    /** Set once, never cleared; a racing reader that still sees false only runs one more scalar call. */
    private volatile boolean warm;
    /** Fast heads in a row so far (racy counting between threads is harmless: at worst it takes a little longer). */
    private int fastHeads;

    WarmingKernel(AbstractKernel vector, AbstractKernel scalar) {
        super(vector.type, vector.op);
        this.vector = vector;
        this.scalar = scalar;
    }

    /** Whether the vector kernel does all the work now. */
    boolean warm() {
        return warm;
    }

    /** The vector kernel itself (tests check its bits against the scalar ones). */
    ReduceKernel vector() {
        return vector;
    }

    @Override
    void combine0(MemorySegment a, long ao, MemorySegment b, long bo, MemorySegment o, long oo, long n) {
        if (warm) {
            vector.combine0(a, ao, b, bo, o, oo, n);
        } else if (n <= PROBE) {
            scalar.combine0(a, ao, b, bo, o, oo, n); // too short to time a head: the scalar loop does it all
        } else {
            long t0 = System.nanoTime();
            vector.combine0(a, ao, b, bo, o, oo, PROBE);
            timed(System.nanoTime() - t0);
            long d = PROBE << shift;
            scalar.combine0(a, ao + d, b, bo + d, o, oo + d, n - PROBE);
        }
    }

    @Override
    void divide(MemorySegment buf, long offset, long n, int divisor) {
        if (warm) {
            vector.divide(buf, offset, n, divisor);
        } else if (n <= PROBE) {
            scalar.divide(buf, offset, n, divisor);
        } else {
            vector.divide(buf, offset, PROBE, divisor);
            scalar.divide(buf, offset + (PROBE << shift), n - PROBE, divisor);
        }
    }

    /** Counts a head that came back fast; a slow one starts the count again. */
    private void timed(long nanos) {
        if (nanos >= FAST_NANOS) {
            fastHeads = 0;
        } else if (++fastHeads >= FAST_IN_A_ROW) {
            warm = true;
        }
    }

    @Override
    String implementation() {
        return vector.implementation() + (warm ? "" : ", scalar while it warms up");
    }
}
