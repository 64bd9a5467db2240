package io.hcomm4j.examples.gpt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * What the data-parallel layer relies on, for both models: the tensor list (forward order, contiguous, PyTorch's
 * names and counts), gradReady (every tensor exactly once, in reverse forward order, the tied embedding last, and
 * each one final when reported), accumulation into grads, determinism, init and batches.
 */
class GptModelContractTest {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    static final GptConfig SMALL = new GptConfig(40, 12, 32, 4, 2, 3, true, 5);

    static List<String> names(Model m) {
        return m.tensors().stream().map(Tensor::name).toList();
    }

    @Test
    void gptTensorsAreInForwardOrderContiguousWithTorchNamesAndCounts() {
        for (boolean tied : new boolean[] {true, false}) {
            GptConfig c = new GptConfig(40, 12, 32, 4, 2, 3, tied, 5);
            Gpt m = new Gpt(c);
            List<String> expected = new ArrayList<>(List.of("tok.weight", "pos.weight"));
            for (int l = 0; l < 2; l++) {
                for (String s : List.of("ln1.weight", "ln1.bias", "qkv.weight", "qkv.bias", "proj.weight", "proj.bias",
                        "ln2.weight", "ln2.bias", "mlp.0.weight", "mlp.0.bias", "mlp.2.weight", "mlp.2.bias")) {
                    expected.add("blocks." + l + "." + s);
                }
            }
            expected.addAll(List.of("ln_f.weight", "ln_f.bias"));
            if (!tied) {
                expected.add("head.weight");
            }
            assertThat(names(m)).containsExactlyElementsOf(expected);
            long at = 0;
            for (Tensor t : m.tensors()) {
                assertThat(t.offset()).isEqualTo(at);
                at += t.count();
            }
            int d = 32;
            // nn.Module.parameters() of the script's GPT, the tied head counted once
            long torch = 40L * d + 12L * d + 2 * (4L * d + 3L * d * d + 3L * d + (long) d * d + d + 4L * d * d + 4L * d
                    + 4L * d * d + d) + 2L * d + (tied ? 0 : 40L * d);
            assertThat(m.parameterCount()).isEqualTo(at).isEqualTo(torch);
            assertThat(m.tensors().get(4).count()).as("qkv").isEqualTo(3L * d * d);
        }
    }

    @Test
    void namesAreTheScriptsModelNames() {
        assertThat(new GptConfig(256, 128, 256, 4, 4, 8, true, 0).name()).isEqualTo("gpt-l4-d256-h4-c128-v256-b8");
        assertThat(new GptConfig(256, 64, 128, 4, 4, 8, false, 0).name()).isEqualTo("gpt-l4-d128-h4-c64-v256-b8-untied");
        assertThat(new MlpConfig(new int[] {2048, 4096, 4096, 2048}, 16, 0).name()).isEqualTo("mlp-2048x4096x4096x2048-b16");
        assertThat(new Gpt(SMALL).name()).isEqualTo("gpt-l2-d32-h4-c12-v40-b3");
        assertThat(new Mlp(new MlpConfig(new int[] {7, 9, 3}, 2, 0)).name()).isEqualTo("mlp-7x9x3-b2");
        assertThat(names(new Mlp(new MlpConfig(new int[] {7, 9, 3}, 2, 0))))
                .containsExactly("net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias");
        assertThatThrownBy(() -> new GptConfig(256, 8, 30, 4, 1, 1, true, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void gradReadyReportsEveryTensorOnceInReverseForwardOrderTiedEmbeddingLast() {
        for (boolean tied : new boolean[] {true, false}) {
            Gpt m = new Gpt(new GptConfig(40, 12, 32, 4, 2, 3, tied, 5));
            List<Integer> order = readyOrder(m);
            List<Integer> expected = new ArrayList<>(IntStream.range(0, m.tensors().size()).boxed().toList().reversed());
            if (tied) {
                expected.remove(Integer.valueOf(0));
                expected.add(0);   // the embedding, used again by the head, is final only after the lookup's backward
            }
            assertThat(order).as("tied %s", tied).containsExactlyElementsOf(expected);
        }
        Mlp mlp = new Mlp(new MlpConfig(new int[] {7, 9, 11, 3}, 2, 0));
        assertThat(readyOrder(mlp)).containsExactly(5, 4, 3, 2, 1, 0);
    }

    /** Runs one step; returns the gradReady order, and asserts each tensor's gradient did not change after it. */
    private static List<Integer> readyOrder(Model m) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(m.parameterCount() * 4, 64), g = arena.allocate(m.parameterCount() * 4, 64);
            m.init(1, p);
            List<Integer> order = new ArrayList<>();
            float[][] atReady = new float[m.tensors().size()][];
            m.forwardBackward(p, g, m.batch(0, 0), i -> {
                order.add(i);
                Tensor t = m.tensors().get(i);
                atReady[i] = g.asSlice(t.byteOffset(), t.byteSize()).toArray(F);
            });
            for (int i = 0; i < atReady.length; i++) {
                Tensor t = m.tensors().get(i);
                assertThat(atReady[i]).as("%s when reported", t.name()).isNotNull();
                assertThat(g.asSlice(t.byteOffset(), t.byteSize()).toArray(F)).as("%s after the call", t.name())
                        .containsExactly(atReady[i]);
                float[] got = atReady[i];
                assertThat(IntStream.range(0, got.length).anyMatch(j -> got[j] != 0f)).as("%s has some gradient", t.name()).isTrue();
            }
            return order;
        }
    }

    @Test
    void gradientsAccumulateAndRepeatBitwise() {
        for (Model m : List.<Model>of(new Gpt(SMALL), new Mlp(new MlpConfig(new int[] {33, 40, 17}, 5, 3)))) {
            try (Arena arena = Arena.ofConfined()) {
                long n = m.parameterCount();
                MemorySegment p = arena.allocate(n * 4, 64);
                MemorySegment once = arena.allocate(n * 4, 64), again = arena.allocate(n * 4, 64);
                MemorySegment twice = arena.allocate(n * 4, 64);
                m.init(9, p);
                Batch b = m.batch(4, 1);
                float l1 = m.forwardBackward(p, once, b, i -> { });
                float l2 = m.forwardBackward(p, again, b, i -> { });
                float l3 = m.forwardBackward(p, twice, b, i -> { });
                float l4 = m.forwardBackward(p, twice, b, i -> { });
                assertThat(l2).isEqualTo(l1);
                assertThat(l3).isEqualTo(l1);
                assertThat(l4).isEqualTo(l1);
                assertThat(m.loss(p, b)).isEqualTo(l1);
                float[] g1 = once.toArray(F), g2 = twice.toArray(F);
                assertThat(again.toArray(F)).as("same step again, fresh buffer: the same bits").containsExactly(g1);
                int nonZero = 0;
                for (int i = 0; i < g1.length; i++) {
                    assertThat((double) g2[i]).as("element %d of %s", i, m.name())
                            .isCloseTo(2.0 * g1[i], Offset.offset(1e-5 * Math.abs(g1[i]) + 1e-9));
                    nonZero += g1[i] != 0 ? 1 : 0;
                }
                assertThat(nonZero).isGreaterThan(g1.length / 2);
            }
        }
    }

    @Test
    void twoInstancesComputeTheSameBits() {
        Gpt a = new Gpt(SMALL), b = new Gpt(SMALL);
        try (Arena arena = Arena.ofConfined()) {
            long n = a.parameterCount();
            MemorySegment p = arena.allocate(n * 4, 64), q = arena.allocate(n * 4, 64);
            MemorySegment ga = arena.allocate(n * 4, 64), gb = arena.allocate(n * 4, 64);
            a.init(77, p);
            b.init(77, q);
            assertThat(q.toArray(F)).containsExactly(p.toArray(F));
            assertThat(b.forwardBackward(q, gb, b.batch(2, 1), i -> { })).isEqualTo(a.forwardBackward(p, ga, a.batch(2, 1), i -> { }));
            assertThat(gb.toArray(F)).containsExactly(ga.toArray(F));
        }
    }

    @Test
    void gptInitIsTheScriptsAndSeeded() {
        Gpt m = new Gpt(new GptConfig(256, 64, 64, 4, 2, 1, false, 0));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(m.parameterCount() * 4, 64), q = arena.allocate(m.parameterCount() * 4, 64);
            m.init(42, p);
            m.init(42, q);
            assertThat(q.toArray(F)).containsExactly(p.toArray(F));
            m.init(43, q);
            assertThat(Arrays.equals(q.toArray(F), p.toArray(F))).isFalse();
            for (Tensor t : m.tensors()) {
                float[] v = p.asSlice(t.byteOffset(), t.byteSize()).toArray(F);
                if (t.name().startsWith("ln") || t.name().contains(".ln")) {
                    assertThat(v).as(t.name()).containsOnly(t.name().endsWith("weight") ? 1f : 0f);
                } else if (t.name().endsWith(".bias")) {
                    assertThat(v).as(t.name()).containsOnly(0f);
                } else {
                    double mean = 0, sq = 0;
                    for (float x : v) {
                        mean += x / v.length;
                        sq += (double) x * x / v.length;
                    }
                    assertThat(Math.abs(mean)).as(t.name()).isLessThan(0.002);
                    assertThat(Math.sqrt(sq - mean * mean)).as("std of %s", t.name()).isBetween(0.018, 0.022);
                }
            }
        }
    }

    @Test
    void mlpInitIsTorchLinearsDefault() {
        Mlp m = new Mlp(new MlpConfig(new int[] {100, 400, 25}, 4, 0));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(m.parameterCount() * 4, 64);
            m.init(1, p);
            for (Tensor t : m.tensors()) {
                double bound = 1 / Math.sqrt(t.name().startsWith("net.0") ? 100 : 400);
                float[] v = p.asSlice(t.byteOffset(), t.byteSize()).toArray(F);
                double max = 0, sq = 0;
                for (float x : v) {
                    max = Math.max(max, Math.abs(x));
                    sq += (double) x * x / v.length;
                }
                assertThat(max).as(t.name()).isLessThanOrEqualTo(bound).isGreaterThan(0.9 * bound);
                // uniform on ±bound: variance bound²/3
                assertThat(Math.sqrt(sq)).as(t.name()).isCloseTo(bound / Math.sqrt(3), Offset.offset(0.1 * bound));
            }
        }
    }

    @Test
    void mlpTeacherAndBatchesAreTheScripts() {
        Mlp m = new Mlp(new MlpConfig(new int[] {64, 8, 32}, 16, 3));
        // y = tanh(x·W), W normal/√64: targets strictly inside ±1, of a spread near tanh of a unit normal's
        double sq = 0;
        for (int i = 0; i < Mlp.EXAMPLES; i++) {
            for (int j = 0; j < 32; j++) {
                assertThat(Math.abs(m.target(i, j))).isLessThan(1f);
                sq += m.target(i, j) * m.target(i, j) / (Mlp.EXAMPLES * 32.0);
            }
        }
        assertThat(sq).isBetween(0.3, 0.5);    // E tanh(z)² = 0.394 for z ~ N(0, 1)
        RowBatch b = m.batch(7, 1);
        assertThat(b.rows()).hasSize(16);
        assertThat(Arrays.stream(b.rows()).allMatch(r -> r >= 0 && r < 64)).isTrue();
        assertThat(m.batch(7, 1).rows()).containsExactly(b.rows());
        assertThat(Arrays.equals(m.batch(7, 0).rows(), b.rows())).isFalse();
        assertThat(Arrays.equals(m.batch(8, 1).rows(), b.rows())).isFalse();
    }

    @Test
    void wrongBatchesAndBuffersAreRefused() {
        Gpt m = new Gpt(SMALL);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(m.parameterCount() * 4, 64);
            MemorySegment small = arena.allocate(m.parameterCount() * 4 - 4, 64);
            assertThatThrownBy(() -> m.loss(small, m.batch(0, 0))).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> m.loss(p, new TokenBatch(2, 12, new int[26]))).isInstanceOf(IllegalArgumentException.class);
            int[] bad = new int[3 * 13];
            bad[5] = 40;
            assertThatThrownBy(() -> m.loss(p, new TokenBatch(3, 12, bad))).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> m.loss(p, new RowBatch(new int[3]))).isInstanceOf(IllegalArgumentException.class);
        }
    }
}
