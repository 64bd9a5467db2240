package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.IntVector;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The vector kernels, one shared instance per (type, op). Loaded only through {@link VectorProbe}, after it has seen
 * the {@code jdk.incubator.vector} module: this class and the kernels it creates link against it.
 */
final class VectorKernels {
    private static final ReduceKernel[] KERNELS = new ReduceKernel[DataType.values().length * ReduceOp.values().length];

    static {
        for (DataType type : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                KERNELS[ScalarKernels.index(type, op)] = create(type, op);
            }
        }
    }

    private VectorKernels() {
    }

    static ReduceKernel of(DataType type, ReduceOp op) {
        return KERNELS[ScalarKernels.index(type, op)];
    }

    private static ReduceKernel create(DataType type, ReduceOp op) {
        return switch (type) {
            case INT8, UINT8 -> new VectorByteKernel(type, op);
            case INT32 -> new VectorIntKernel(op);
            case INT64 -> new VectorLongKernel(op);
            case FLOAT16 -> new VectorFp16Kernel(op);
            case BFLOAT16 -> new VectorBf16Kernel(op);
            case FLOAT32 -> new VectorFloatKernel(op);
            case FLOAT64 -> new VectorDoubleKernel(op);
        };
    }

    /**
     * Why the vector kernels should not be used here, or {@code null} if they can. Without vectors of at least 128
     * bits the Vector API computes lane by lane in Java, far slower than the scalar loops. The smoke run makes the
     * first use (class loading, linking to the module) happen here, where a failure is caught, and checks every
     * kernel's whole-vector part against its scalar twin once.
     */
    static String unusableReason() {
        int bits = IntVector.SPECIES_PREFERRED.vectorBitSize();
        if (bits < 128) {
            return "the preferred vector size is " + bits + " bits";
        }
        byte[] x = new byte[4 * 64 + 24];
        byte[] y = new byte[x.length];
        for (int i = 0; i < x.length; i++) {
            x[i] = (byte) (i * 37 + 11);
            y[i] = (byte) (i * 91 + 5);
        }
        for (DataType type : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                long count = (x.length - 1) / type.byteSize();
                byte[] vector = new byte[x.length];
                byte[] scalar = new byte[x.length];
                of(type, op).combine(MemorySegment.ofArray(x), 1, MemorySegment.ofArray(y), 0,
                        MemorySegment.ofArray(vector), 0, count);
                ScalarKernels.of(type, op).combine(MemorySegment.ofArray(x), 1, MemorySegment.ofArray(y), 0,
                        MemorySegment.ofArray(scalar), 0, count);
                if (type != DataType.FLOAT32 && type != DataType.FLOAT64 && !Arrays.equals(vector, scalar)) {
                    return "the vector " + type + " " + op + " kernel computed other bits than the scalar one";
                }
            }
        }
        return null;
    }
}
