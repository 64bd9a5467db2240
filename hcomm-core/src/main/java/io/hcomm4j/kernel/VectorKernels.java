package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import jdk.incubator.vector.IntVector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The vector kernels, one shared instance per (type, op), each made and checked on its first use. Loaded only through
 * {@link VectorProbe}, after it has seen the {@code jdk.incubator.vector} module: this class and the kernels it creates
 * link against it.
 */
final class VectorKernels {
    private static final Logger LOG = LoggerFactory.getLogger(ReduceKernel.class);

    /** Per (type, op): null until first asked for. Kernels are immutable, so a plain read of one made elsewhere is safe. */
    private static final ReduceKernel[] KERNELS = new ReduceKernel[DataType.values().length * ReduceOp.values().length];

    private VectorKernels() {
    }

    static ReduceKernel of(DataType type, ReduceOp op) {
        ReduceKernel k = KERNELS[ScalarKernels.index(type, op)];
        return k != null ? k : first(type, op);
    }

    /**
     * The first use of a (type, op): its kernel is made and its whole-vector part checked once against the scalar
     * twin; a kernel that fails or computes other bits is replaced by the scalar one, one that passes is wrapped in a
     * {@link WarmingKernel} (the scalar twin works while the JIT compiles it). Checking each kernel on first
     * use rather than all of them up front keeps the first collective of a JVM fast: the whole set, run interpreted,
     * took 300-400 ms here.
     */
    private static synchronized ReduceKernel first(DataType type, ReduceOp op) {
        int i = ScalarKernels.index(type, op);
        if (KERNELS[i] == null) {
            ReduceKernel k;
            try {
                k = create(type, op);
                ReduceKernel scalar = ScalarKernels.of(type, op);
                String wrong = differs(k, scalar);
                if (wrong != null) {
                    LOG.info("reduction kernel {} {} is scalar: {}", type, op, wrong);
                    k = scalar;
                } else if (k.getClass() != scalar.getClass()) {
                    k = new WarmingKernel((AbstractKernel) k, (AbstractKernel) scalar);
                }
            } catch (LinkageError | RuntimeException e) {
                LOG.info("reduction kernel {} {} is scalar: the Vector API failed on first use", type, op, e);
                k = ScalarKernels.of(type, op);
            }
            KERNELS[i] = k;
        }
        return KERNELS[i];
    }

    private static ReduceKernel create(DataType type, ReduceOp op) {
        return switch (type) {
            case INT8, UINT8 -> new VectorByteKernel(type, op);
            case INT16 -> new VectorShortKernel(op);
            case INT32 -> new VectorIntKernel(op);
            case INT64 -> new VectorLongKernel(op);
            case FLOAT16 -> fp16Vectorized() ? new VectorFp16Kernel(op) : new ScalarFp16Kernel(op);
            case BFLOAT16 -> new VectorBf16Kernel(op);
            case FLOAT32 -> new VectorFloatKernel(op);
            case FLOAT64 -> new VectorDoubleKernel(op);
            case BOOL -> new VectorBoolKernel(op);
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
     * Why the vector kernels should not be used here, or {@code null} if they can: without vectors of at least 128
     * bits the Vector API computes lane by lane in Java, far slower than the scalar loops. Touching the species is
     * the module's first use, where a linkage failure is caught ({@link VectorProbe}).
     */
    static String unusableReason() {
        int bits = IntVector.SPECIES_PREFERRED.vectorBitSize();
        return bits < 128 ? "the preferred vector size is " + bits + " bits" : null;
    }

    /**
     * Runs {@code vector} and {@code scalar} once on the same inputs, a few whole vectors and a ragged end at an odd
     * offset; returns why they differ, or null. Native memory: seen from the shared JDK code, heap segments in the
     * type profiles made 128-bit loops over native segments six times slower (JDK 25). Float NaN payloads may differ,
     * as the contract allows, so float32/float64 results are not compared bit for bit here (the parity tests do).
     */
    private static String differs(ReduceKernel vector, ReduceKernel scalar) {
        int size = 4 * 64 + 24;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = arena.allocate(size);
            MemorySegment y = arena.allocate(size);
            MemorySegment v = arena.allocate(size);
            MemorySegment s = arena.allocate(size);
            for (int i = 0; i < size; i++) {
                x.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 37 + 11));
                y.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 91 + 5));
            }
            DataType type = vector.type();
            long count = (size - 1) / type.byteSize();
            vector.combine(x, 1, y, 0, v, 0, count);
            scalar.combine(x, 1, y, 0, s, 0, count);
            boolean exact = type != DataType.FLOAT32 && type != DataType.FLOAT64;
            return exact && v.mismatch(s) >= 0 ? "the vector kernel computed other bits than the scalar one" : null;
        }
    }
}
