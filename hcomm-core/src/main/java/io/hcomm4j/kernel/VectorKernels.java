package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.IntVector;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The vector kernels, one shared instance per (type, op). Loaded only through {@link VectorProbe}, after it has seen
 * the {@code jdk.incubator.vector} module: this class and the kernels it creates link against it.
 */
final class VectorKernels {
    private VectorKernels() {
    }

    /** Created on first use, after {@link #unusableReason} has looked at the vector size: species need it. */
    private static final class Cache {
        static final ReduceKernel[] KERNELS = new ReduceKernel[DataType.values().length * ReduceOp.values().length];

        static {
            for (DataType type : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    if (!op.collective()) continue; // REPLACE, NO_OP: one-sided, no kernel
                    KERNELS[ScalarKernels.index(type, op)] = create(type, op);
                }
            }
        }
    }

    static ReduceKernel of(DataType type, ReduceOp op) {
        return Cache.KERNELS[ScalarKernels.index(type, op)];
    }

    private static ReduceKernel create(DataType type, ReduceOp op) {
        return switch (type) {
            case INT8, UINT8 -> new VectorByteKernel(type, op);
            case INT32 -> new VectorIntKernel(op);
            case INT64 -> new VectorLongKernel(op);
            case FLOAT16 -> fp16Vectorized() ? new VectorFp16Kernel(op) : new ScalarFp16Kernel(op);
            case BFLOAT16 -> new VectorBf16Kernel(op);
            case FLOAT32 -> new VectorFloatKernel(op);
            case FLOAT64 -> new VectorDoubleKernel(op);
        };
    }

    /**
     * Whether FLOAT16 gets a vector kernel: it works on shorts in half the preferred vector size, and with 128-bit
     * vectors those are 64-bit vectors, which C2 on x86 did not compile into vector code (JDK 25, forced with
     * -XX:MaxVectorSize=16): the Java fallback then ran, and its type profiles slowed every other vector kernel in
     * the JVM ninefold. Such platforms keep the scalar FLOAT16 kernel, which computes the same bits.
     */
    static boolean fp16Vectorized() {
        return IntVector.SPECIES_PREFERRED.vectorBitSize() >= 256;
    }

    /**
     * Why the vector kernels should not be used here, or {@code null} if they can. Without vectors of at least 128
     * bits the Vector API computes lane by lane in Java, far slower than the scalar loops. The smoke run makes the
     * first use (class loading, linking to the module) happen here, where a failure is caught, and checks every
     * kernel's whole-vector part against its scalar twin once. It runs on native memory: seen from the shared JDK
     * code, heap segments in the type profiles made 128-bit loops over native segments six times slower (JDK 25).
     */
    static String unusableReason() {
        int bits = IntVector.SPECIES_PREFERRED.vectorBitSize();
        if (bits < 128) {
            return "the preferred vector size is " + bits + " bits";
        }
        int size = 4 * 64 + 24;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = arena.allocate(size);
            MemorySegment y = arena.allocate(size);
            MemorySegment vector = arena.allocate(size);
            MemorySegment scalar = arena.allocate(size);
            for (int i = 0; i < size; i++) {
                x.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 37 + 11));
                y.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 91 + 5));
            }
            for (DataType type : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    if (!op.collective()) continue; // REPLACE, NO_OP: one-sided, no kernel
                    long count = (size - 1) / type.byteSize();
                    of(type, op).combine(x, 1, y, 0, vector, 0, count);
                    ScalarKernels.of(type, op).combine(x, 1, y, 0, scalar, 0, count);
                    boolean exact = type != DataType.FLOAT32 && type != DataType.FLOAT64; // NaN payloads may differ
                    if (exact && vector.mismatch(scalar) >= 0) {
                        return "the vector " + type + " " + op + " kernel computed other bits than the scalar one";
                    }
                }
            }
        }
        return null;
    }
}
