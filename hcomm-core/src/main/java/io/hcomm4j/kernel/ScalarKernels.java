package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

/** The scalar kernels, one shared instance per (type, op) the op defines ({@link ReduceOp#accepts}): kernels are stateless. */
final class ScalarKernels {
    private static final ReduceKernel[] KERNELS = new ReduceKernel[DataType.values().length * ReduceOp.values().length];

    static {
        for (DataType type : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                // REPLACE, NO_OP: one-sided, no kernel; nor for what the op does not define (BAND on FLOAT32, AVG on BOOL)
                if (!op.collective() || !op.accepts(type)) continue;
                KERNELS[index(type, op)] = create(type, op);
            }
        }
    }

    private ScalarKernels() {
    }

    static ReduceKernel of(DataType type, ReduceOp op) {
        return KERNELS[index(type, op)];
    }

    static int index(DataType type, ReduceOp op) {
        return type.ordinal() * ReduceOp.values().length + op.ordinal();
    }

    private static ReduceKernel create(DataType type, ReduceOp op) {
        return switch (type) {
            case INT8, UINT8 -> new ScalarByteKernel(type, op);
            case INT16 -> new ScalarShortKernel(op);
            case INT32 -> new ScalarIntKernel(op);
            case INT64 -> new ScalarLongKernel(op);
            case FLOAT16 -> new ScalarFp16Kernel(op);
            case BFLOAT16 -> new ScalarBf16Kernel(op);
            case FLOAT32 -> new ScalarFloatKernel(op);
            case FLOAT64 -> new ScalarDoubleKernel(op);
            case BOOL -> new ScalarBoolKernel(op);
        };
    }
}
