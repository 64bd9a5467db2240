package io.hcomm4j.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** {@link ReduceKernel#of}, the kernels' identity, and argument checks that fail before anything is written. */
class ReduceKernelApiTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);

    @Test
    void ofReturnsOneSharedKernelPerTypeAndOp() {
        for (DataType type : DataType.values()) {
            for (ReduceOp op : COLLECTIVE_OPS) {
                if (!op.accepts(type)) continue; // no kernel: undefinedPairsHaveNoKernel
                for (boolean vector : new boolean[] {false, true}) {
                    ReduceKernel k = ReduceKernel.of(type, op, vector);
                    assertThat(k.type()).isEqualTo(type);
                    assertThat(k.op()).isEqualTo(op);
                    assertThat(ReduceKernel.of(type, op, vector)).isSameAs(k);
                    // (FLOAT16 stays scalar where vectors are only 128 bits: VectorKernels.fp16Vectorized)
                    boolean vectorized = vector && (type != DataType.FLOAT16 || VectorKernels.fp16Vectorized());
                    assertThat(k.toString()).contains(type.name(), op.name(), vectorized ? "vector" : "scalar");
                }
            }
        }
        assertThat(ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM))
                .isSameAs(ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM, true));
    }

    @Test
    void vectorKernelsAreAvailableWithTheModule() {
        assertThat(ModuleLayer.boot().findModule("jdk.incubator.vector")).isPresent();
        assertThat(ReduceKernel.vectorAvailable()).isTrue();
    }

    @Test
    void rangesOutsideTheSegmentFailBeforeAnyWrite() {
        for (boolean vector : new boolean[] {false, true}) {
            ReduceKernel k = ReduceKernel.of(DataType.INT32, ReduceOp.SUM, vector);
            int[] acc = {1, 2, 3, 4};
            int[] in = {10, 20, 30, 40};
            MemorySegment a = MemorySegment.ofArray(acc);
            MemorySegment b = MemorySegment.ofArray(in);
            assertThatThrownBy(() -> k.accumulate(a, 0, b, 4, 4)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> k.accumulate(a, 1, b, 0, 4)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> k.accumulate(a, -1, b, 0, 1)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> k.combine(a, 0, b, 0, MemorySegment.ofArray(new int[3]), 0, 4))
                    .isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> k.accumulate(a, 0, b, 0, Long.MAX_VALUE / 2))
                    .isInstanceOf(IndexOutOfBoundsException.class);
            assertThat(acc).containsExactly(1, 2, 3, 4);

            ReduceKernel avg = ReduceKernel.of(DataType.INT32, ReduceOp.AVG, vector);
            assertThatThrownBy(() -> avg.finish(a, 8, 3, 2)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThat(acc).containsExactly(1, 2, 3, 4);
        }
    }

    @Test
    void badArgumentsAreRejected() {
        for (boolean vector : new boolean[] {false, true}) {
            ReduceKernel k = ReduceKernel.of(DataType.FLOAT32, ReduceOp.AVG, vector);
            MemorySegment s = MemorySegment.ofArray(new float[8]);
            assertThatThrownBy(() -> k.accumulate(s, 0, s, 0, -1)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> k.combine(s, 0, s, 0, s.asReadOnly(), 0, 8))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("read-only");
            assertThatThrownBy(() -> k.accumulate(s.asReadOnly(), 0, s, 0, 8))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> k.finish(s, 0, 8, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("divisor");
            assertThatThrownBy(() -> k.accumulate(null, 0, s, 0, 8)).isInstanceOf(NullPointerException.class);
            // reading from a read-only input is fine
            k.accumulate(s, 0, s.asReadOnly(), 0, 8);
        }
        assertThatThrownBy(() -> ReduceKernel.of(null, ReduceOp.SUM)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void zeroElementsTouchNothingEvenOnEmptySegments() {
        for (boolean vector : new boolean[] {false, true}) {
            ReduceKernel k = ReduceKernel.of(DataType.INT64, ReduceOp.AVG, vector);
            k.accumulate(MemorySegment.NULL, 0, MemorySegment.NULL, 0, 0);
            k.combine(MemorySegment.NULL, 0, MemorySegment.NULL, 0, MemorySegment.NULL, 0, 0);
            k.finish(MemorySegment.NULL, 0, 0, 5);
        }
    }

    @Test
    void accumulateOntoItselfDoubles() {
        for (boolean vector : new boolean[] {false, true}) {
            float[] data = new float[100];
            for (int i = 0; i < data.length; i++) {
                data[i] = i;
            }
            MemorySegment s = MemorySegment.ofArray(data);
            ReduceKernel.of(DataType.FLOAT32, ReduceOp.SUM, vector).accumulate(s, 0, s, 0, data.length);
            for (int i = 0; i < data.length; i++) {
                assertThat(data[i]).isEqualTo(2f * i);
            }
        }
    }
}
