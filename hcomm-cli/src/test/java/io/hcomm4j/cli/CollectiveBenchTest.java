package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.cli.CollectiveBench.Coll;
import io.hcomm4j.cli.CollectiveBench.Shape;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The arithmetic of {@code hcomm perf}'s collectives without ranks: nccl-tests' buffer shapes and bus factors,
 * and the check's reference results, which must equal what the library's reduction kernels compute bit for bit.
 */
class CollectiveBenchTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
    @Test
    void busFactorsAreNcclTests() {
        for (int n : new int[] {1, 2, 3, 4, 8}) {
            double ring = (double) (n - 1) / n;
            assertThat(Coll.ALLREDUCE.busFactor(n)).isEqualTo(2 * ring);
            for (Coll c : new Coll[] {Coll.ALLGATHER, Coll.REDUCESCATTER, Coll.ALLTOALL, Coll.GATHER, Coll.SCATTER}) {
                assertThat(c.busFactor(n)).as("%s on %d", c, n).isEqualTo(ring);
            }
            for (Coll c : new Coll[] {Coll.BROADCAST, Coll.REDUCE, Coll.SENDRECV}) {
                assertThat(c.busFactor(n)).as("%s on %d", c, n).isEqualTo(1.0);
            }
        }
        assertThat(Coll.ALLREDUCE.busFactor(4)).isCloseTo(1.5, within(1e-12));
    }

    @Test
    void wholeBufferOpsCountElementsOfTheSize() {
        for (Coll c : new Coll[] {Coll.ALLREDUCE, Coll.BROADCAST, Coll.REDUCE, Coll.SENDRECV}) {
            assertThat(CollectiveBench.shape(c, 1 << 20, 3, DataType.FLOAT32)).as("%s", c)
                    .isEqualTo(new Shape(1 << 18, 1 << 20, 1 << 20, 1 << 20));
            // rounded down to whole elements, at least one
            assertThat(CollectiveBench.shape(c, 1003, 3, DataType.INT64)).isEqualTo(new Shape(125, 1000, 1000, 1000));
            assertThat(CollectiveBench.shape(c, 3, 3, DataType.INT64)).isEqualTo(new Shape(1, 8, 8, 8));
        }
    }

    @Test
    void blockedOpsCountElementsPerBlockOfTheWholeBuffer() {
        // 1000 bytes of float32 on 3 ranks: blocks of 83 elements (332 B), 996 B in all
        assertThat(CollectiveBench.shape(Coll.ALLGATHER, 1000, 3, DataType.FLOAT32)).isEqualTo(new Shape(83, 996, 332, 996));
        assertThat(CollectiveBench.shape(Coll.GATHER, 1000, 3, DataType.FLOAT32)).isEqualTo(new Shape(83, 996, 332, 996));
        assertThat(CollectiveBench.shape(Coll.REDUCESCATTER, 1000, 3, DataType.FLOAT32)).isEqualTo(new Shape(83, 996, 996, 332));
        assertThat(CollectiveBench.shape(Coll.SCATTER, 1000, 3, DataType.FLOAT32)).isEqualTo(new Shape(83, 996, 996, 332));
        assertThat(CollectiveBench.shape(Coll.ALLTOALL, 1000, 3, DataType.FLOAT32)).isEqualTo(new Shape(83, 996, 996, 996));
        assertThat(CollectiveBench.shape(Coll.ALLGATHER, 1 << 20, 4, DataType.BFLOAT16)).isEqualTo(new Shape(1 << 17, 1 << 20, 1 << 18, 1 << 20));
        assertThat(CollectiveBench.shape(Coll.ALLTOALL, 5, 4, DataType.INT32)).isEqualTo(new Shape(1, 16, 16, 16));
    }

    @Test
    void namesAreTheCommandLines() {
        assertThat(Coll.of("reducescatter")).contains(Coll.REDUCESCATTER);
        assertThat(Coll.of("allgatherv")).contains(Coll.ALLGATHERV);
        assertThat(Coll.ALLGATHERV.base()).isEqualTo(Coll.ALLGATHER);
        assertThat(Coll.of("allreducev")).isEmpty();
        for (Coll c : Coll.values()) assertThat(PerfCommand.OPS).contains(c.cliName());
    }

    /** The reference of every (type, op) on 1..5 ranks is what the kernels compute from the same inputs, in rank order. */
    @Test
    void referenceIsWhatTheKernelsCompute() {
        int count = 600;
        try (Arena arena = Arena.ofShared()) {
            for (DataType type : DataType.values()) {
                int es = type.byteSize();
                MemorySegment acc = arena.allocate((long) count * es, 8);
                MemorySegment in = arena.allocate((long) count * es, 8);
                for (ReduceOp op : COLLECTIVE_OPS) {
                    if (!op.accepts(type)) continue; // bitwise ops on floats, AVG on BOOL: no kernel
                    ReduceKernel k = ReduceKernel.of(type, op);
                    for (int n = 1; n <= 5; n++) {
                        for (int i = 0; i < count; i++) {
                            CheckValues.setBits(acc, es, i, CheckValues.encode(type, CheckValues.input(op, type, n, 0, i)));
                        }
                        for (int r = 1; r < n; r++) {
                            for (int i = 0; i < count; i++) {
                                CheckValues.setBits(in, es, i, CheckValues.encode(type, CheckValues.input(op, type, n, r, i)));
                            }
                            k.accumulate(acc, 0, in, 0, count);
                        }
                        k.finish(acc, 0, count, n);
                        for (int i = 0; i < count; i++) {
                            assertThat(CheckValues.getBits(acc, es, i)).as("%s %s on %d ranks, element %d", type, op, n, i)
                                    .isEqualTo(CheckValues.reference(op, type, n, i));
                        }
                    }
                }
            }
        }
    }

    @Test
    void referenceResultsAreTheIntendedNumbers() {
        // 3 ranks, element 0: inputs floorMod(0*5 + r*3 + 1, 7) - 3 = -2, 1, -3
        assertThat(CheckValues.input(ReduceOp.SUM, DataType.FLOAT32, 3, 0, 0)).isEqualTo(-2);
        assertThat(CheckValues.input(ReduceOp.SUM, DataType.FLOAT32, 3, 1, 0)).isEqualTo(1);
        assertThat(CheckValues.input(ReduceOp.SUM, DataType.FLOAT32, 3, 2, 0)).isEqualTo(-3);
        assertThat(Float.intBitsToFloat((int) CheckValues.reference(ReduceOp.SUM, DataType.FLOAT32, 3, 0))).isEqualTo(-4f);
        assertThat(Float.intBitsToFloat((int) CheckValues.reference(ReduceOp.AVG, DataType.FLOAT32, 3, 0))).isEqualTo(-4f / 3);
        assertThat(CheckValues.reference(ReduceOp.AVG, DataType.INT32, 3, 0)).isEqualTo(0xFFFF_FFFFL); // -4 / 3 truncates to -1
        assertThat(CheckValues.reference(ReduceOp.MAX, DataType.UINT8, 3, 0)).isEqualTo(254); // -2 is 254 as 0..255
        assertThat(CheckValues.reference(ReduceOp.MAX, DataType.INT8, 3, 0)).isEqualTo(1);
        assertThat(CheckValues.reference(ReduceOp.MIN, DataType.INT64, 3, 0)).isEqualTo(-3);
        // the inputs stay exact for the 16-bit floats on many ranks
        assertThat(CheckValues.amplitude(DataType.BFLOAT16, 100)).isEqualTo(2);
        assertThat(CheckValues.amplitude(DataType.FLOAT16, 1000)).isEqualTo(2);
        assertThat(CheckValues.amplitude(DataType.FLOAT32, 1000)).isEqualTo(3);
    }

    @Test
    void patternsDifferBySourceAndElement() {
        Set<Long> seen = new HashSet<>();
        for (long salt = 0; salt < 8; salt++) {
            for (long i = 0; i < 64; i++) seen.add(CheckValues.pattern(salt, i, 8));
        }
        assertThat(seen).hasSize(8 * 64);
        assertThat(CheckValues.pattern(3, 5, 2)).isBetween(0L, 0xFFFFL);
        assertThat(CheckValues.pattern(3, 5, 1)).isEqualTo(CheckValues.pattern(3, 5, 8) & 0xFF);
    }
}
