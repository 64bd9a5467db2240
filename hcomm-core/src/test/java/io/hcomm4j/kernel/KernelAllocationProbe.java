package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Run in a JVM of its own by {@link SmallTypesKernelTest#compiledKernelsAllocateNothing}: calls the vector and the
 * scalar kernel of every pair {@link SmallTypesKernelTest#newPairs} lists on native memory, in windows until one
 * allocates nothing or a minute has passed (C2 may still be compiling a Vector API loop, which allocates its vectors
 * until it is compiled; a kernel that allocates allocates in every window), then prints the bytes per call of the
 * last window ({@link #RESULT}) and the kernels that allocated in it.
 */
public final class KernelAllocationProbe {
    /** Starts the line with the bytes per call. */
    static final String RESULT = "bytes per call:";

    private KernelAllocationProbe() {
    }

    public static void main(String[] args) {
        var mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().threadId();
        List<ReduceKernel> kernels = new ArrayList<>();
        SmallTypesKernelTest.newPairs().forEach(pair -> {
            for (boolean vector : new boolean[] {false, true}) {
                kernels.add(Elements.kernel((DataType) pair.get()[0], (ReduceOp) pair.get()[1], vector));
            }
        });
        int count = 301;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(8L * count + 8);
            MemorySegment b = arena.allocate(8L * count + 8);
            long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
            long bytes = -1;
            int calls = 0;
            while (bytes != 0 && System.nanoTime() - deadline < 0) {
                for (int i = 0; i < 500; i++) {
                    for (ReduceKernel k : kernels) k.accumulate(a, 1, b, 3, count);
                }
                long before = mx.getThreadAllocatedBytes(tid);
                calls = 0;
                for (int i = 0; i < 100; i++) {
                    for (ReduceKernel k : kernels) {
                        k.accumulate(a, 1, b, 3, count);
                        calls++;
                    }
                }
                bytes = mx.getThreadAllocatedBytes(tid) - before;
            }
            System.out.println(RESULT + " " + (double) bytes / calls);
            if (bytes != 0) { // name the kernels that allocate, for whoever reads the failure
                for (ReduceKernel k : kernels) {
                    long b0 = mx.getThreadAllocatedBytes(tid);
                    for (int i = 0; i < 100; i++) k.accumulate(a, 1, b, 3, count);
                    long per = (mx.getThreadAllocatedBytes(tid) - b0) / 100;
                    if (per > 0) System.out.println("  " + k + ": " + per + " bytes per call");
                }
            }
        }
    }
}
