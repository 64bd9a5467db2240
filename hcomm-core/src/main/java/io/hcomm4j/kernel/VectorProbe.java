package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides once whether the vector kernels can be used. This class must not mention any {@code jdk.incubator.vector}
 * type: it is loaded in every JVM, also in those started without {@code --add-modules jdk.incubator.vector}, where
 * loading {@link VectorKernels} would fail. Only after the module is known to be present is {@link VectorKernels}
 * touched, and any linkage error on its first use turns into "scalar kernels" instead of a failed collective.
 */
final class VectorProbe {
    private static final Logger LOG = LoggerFactory.getLogger(ReduceKernel.class);
    static final String MODULE = "jdk.incubator.vector";

    static final boolean AVAILABLE = probe();

    private VectorProbe() {
    }

    static ReduceKernel kernel(DataType type, ReduceOp op) {
        return VectorKernels.of(type, op);
    }

    private static boolean probe() {
        if (ModuleLayer.boot().findModule(MODULE).isEmpty()) {
            LOG.debug("reduction kernels are scalar: the JVM runs without --add-modules {}", MODULE);
            return false;
        }
        try {
            String unusable = VectorKernels.unusableReason();
            if (unusable != null) {
                LOG.info("reduction kernels are scalar: {}", unusable);
                return false;
            }
            return true;
        } catch (LinkageError | RuntimeException e) {
            LOG.info("reduction kernels are scalar: the Vector API failed on first use", e);
            return false;
        }
    }
}
