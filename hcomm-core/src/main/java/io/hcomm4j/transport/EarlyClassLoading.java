package io.hcomm4j.transport;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CancellationException;

/**
 * Loads, before anything is compiled, the classes whose first loading later would throw compiled hot paths away. C2
 * compiles a call through an abstract type that has one loaded implementation as a direct, inlined call, and records
 * the assumption (class hierarchy analysis); loading a second implementation deoptimizes every method that made it.
 * Found with {@code -Xlog:deoptimization=debug,dependencies=info}: in {@code hcomm perf allreduce -n 4}, the first
 * eager message that arrived before its receive was posted (rank 0 collecting results) wrapped a {@code byte[]} in a
 * heap segment, the JVM's first {@code HeapMemorySegmentImpl$OfByte}, and that deoptimized 104 compiled methods of rank
 * 0 at once, the vector kernels among them, which then ran their Java fallback until recompiled: with 4 ranks on 2 cores
 * the next 275 all-reduces of 8 KiB took 1-5 ms each instead of 25 µs. The first receive, loading
 * {@link CancellationException} through its future, deoptimized smaller methods the same way. A user's own first heap
 * segment of a new array type would do it too, so every kind is loaded here.
 */
final class EarlyClassLoading {
    private EarlyClassLoading() {
    }

    static void run() {
        MemorySegment.ofArray(new byte[0]);
        MemorySegment.ofArray(new char[0]);
        MemorySegment.ofArray(new short[0]);
        MemorySegment.ofArray(new int[0]);
        MemorySegment.ofArray(new float[0]);
        MemorySegment.ofArray(new long[0]);
        MemorySegment.ofArray(new double[0]);
        MemorySegment.ofBuffer(java.nio.ByteBuffer.allocate(0));
        new CancellationException();
        // the request types, with whatever their futures load
        load(RecvRequest.class, SendRequest.class, ProbeRequest.class);
    }

    private static void load(Class<?>... types) {
        for (Class<?> t : types) {
            try {
                Class.forName(t.getName(), true, t.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new AssertionError(e); // loaded already: the literal above names it
            }
        }
    }
}
