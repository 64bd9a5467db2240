package io.hcomm4j.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.kernel.ReduceKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The benchmark measures what it claims: its plain loops compute what the kernels compute, and it runs once. */
class ReduceKernelBenchTest {

    @Test
    void sizesParse() {
        assertThat(ReduceKernelBench.parseSize("4KiB")).isEqualTo(4096);
        assertThat(ReduceKernelBench.parseSize("1MiB")).isEqualTo(1 << 20);
        assertThat(ReduceKernelBench.parseSize("64MiB")).isEqualTo(64L << 20);
        assertThat(ReduceKernelBench.parseSize("100")).isEqualTo(100);
    }

    @Test
    void plainLoopsComputeWhatTheKernelsCompute() {
        DataType[] types = {DataType.FLOAT32, DataType.FLOAT64, DataType.INT32, DataType.INT64, DataType.INT8,
                DataType.BFLOAT16, DataType.FLOAT16};
        for (DataType type : types) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX}) {
                try (Arena arena = Arena.ofConfined()) {
                    long count = 1000;
                    long bytes = count * type.byteSize();
                    MemorySegment acc = arena.allocate(bytes, 64);
                    MemorySegment in = arena.allocate(bytes, 64);
                    ReduceKernelBench.fill(type, acc, in, count, new SplittableRandom(7));
                    MemorySegment viaKernel = arena.allocate(bytes, 64).copyFrom(acc);
                    PlainLoops.accumulate(type, op, acc, in, count);
                    ReduceKernel.of(type, op).accumulate(viaKernel, 0, in, 0, count);
                    assertThat(acc.toArray(ValueLayout.JAVA_BYTE)).as("%s %s", type, op)
                            .isEqualTo(viaKernel.toArray(ValueLayout.JAVA_BYTE));
                }
            }
        }
    }

    @Test
    void everyBenchmarkMethodRuns() {
        ReduceKernelBench bench = new ReduceKernelBench();
        bench.type = DataType.BFLOAT16;
        bench.op = ReduceOp.SUM;
        bench.size = "4KiB";
        bench.setUp();
        try {
            ReduceKernelBench.Bytes counter = new ReduceKernelBench.Bytes();
            bench.vector(counter);
            bench.scalar(counter);
            bench.loop(counter);
            bench.memcpy(counter);
            assertThat(counter.bytes).isEqualTo(4 * 4096);
        } finally {
            bench.tearDown();
        }
    }
}
