package io.hcomm4j.cli;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** The readers of {@code hcomm perf}'s typed options: {@code --timing}, {@code --mem}, {@code --dtype}, {@code --op}. */
final class PerfConverters {
    private PerfConverters() {
    }

    /** Reads {@code --timing}: mean or median. */
    static final class TimingConverter implements ITypeConverter<CollectiveBench.Timing> {
        @Override
        public CollectiveBench.Timing convert(String value) {
            return switch (value.trim().toLowerCase(Locale.ROOT)) {
                case "mean" -> CollectiveBench.Timing.MEAN;
                case "median" -> CollectiveBench.Timing.MEDIAN;
                default -> throw new picocli.CommandLine.TypeConversionException(
                        "'" + value + "' is not a timing; choose mean or median");
            };
        }
    }

    /** Reads {@code --mem}: native, pool or heap. */
    static final class MemConverter implements ITypeConverter<CollectiveBench.Mem> {
        @Override
        public CollectiveBench.Mem convert(String value) {
            return switch (value.trim().toLowerCase(Locale.ROOT)) {
                case "native" -> CollectiveBench.Mem.NATIVE;
                case "pool" -> CollectiveBench.Mem.POOL;
                case "heap" -> CollectiveBench.Mem.HEAP;
                default -> throw new picocli.CommandLine.TypeConversionException(
                        "'" + value + "' is not a memory kind; choose native, pool or heap");
            };
        }
    }

    /** Reads {@code --dtype}: the lower-case type names, and nccl-tests' half, float, double, bf16 ... */
    static final class DataTypeConverter implements ITypeConverter<DataType> {
        static final String NAMES = Arrays.stream(DataType.values()).map(PerfCommand::typeName).collect(Collectors.joining(" "));

        @Override
        public DataType convert(String value) {
            String v = value.trim().toLowerCase(Locale.ROOT);
            String name = switch (v) {
                case "half", "fp16" -> "float16";
                case "bf16" -> "bfloat16";
                case "float", "fp32" -> "float32";
                case "double", "fp64" -> "float64";
                case "int" -> "int32";
                case "long" -> "int64";
                default -> v;
            };
            for (DataType t : DataType.values()) {
                if (PerfCommand.typeName(t).equals(name)) return t;
            }
            throw new TypeConversionException("'" + value + "' is not a data type: one of " + NAMES);
        }
    }

    /** Reads {@code --op}: sum, prod, min, max, avg. */
    static final class ReduceOpConverter implements ITypeConverter<ReduceOp> {
        private static final ReduceOp[] COLLECTIVE_OPS =
                java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
        static final String NAMES = Arrays.stream(COLLECTIVE_OPS).map(PerfCommand::opName).collect(Collectors.joining(" "));

        @Override
        public ReduceOp convert(String value) {
            String v = value.trim().toLowerCase(Locale.ROOT);
            for (ReduceOp o : COLLECTIVE_OPS) {
                if (PerfCommand.opName(o).equals(v)) return o;
            }
            throw new TypeConversionException("'" + value + "' is not a reduction: one of " + NAMES);
        }
    }
}
