package io.hcomm4j.examples.gpt;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * The GPT's forward against a double-precision reference written from the script, and its hand-written backward
 * against finite differences of its forward, for every parameter element of two tiny models: the brief's (vocab 16,
 * context 6, dim 8, 2 heads, 2 layers, batch 2, tied), whose widths are all below one vector and so run the kernels'
 * tails, and an untied one of width 24 and vocab 20 (head dim 12, MLP 96, qkv 72), which runs whole vectors and tails.
 *
 * <p>The point is random, weights normal(0, 0.2) (see {@link GradientCheck#randomPoint}), and the loss taken before its
 * rounding to float ({@code lossDouble}). Tolerance {@code |a − n| ≤ 2e-3·max(|a|, |n|) + 5e-5}, at h = 1e-2 with a
 * fourth-order stencil: the numeric side carries float32 noise of a few 1e-5 (at h = 3e-3 that noise alone failed
 * hundreds of elements; at h = 6e-2 the truncation error did), and the worst element used about half of the
 * tolerance when written. Over 90 % of the gradients are 20 × atol or more, where the check has teeth: with one
 * backward term dropped (tried, one at a time: LayerNorm's {@code hat·mean(g·hat)}, softmax's {@code Σ p·dp}, GELU's
 * {@code x·φ(x)}, the attention's dK product, the softmax backward's 1/√headDim) thousands of elements failed, by
 * factors of hundreds.
 */
class GptGradientCheckTest {
    static final double H = 1e-2, RTOL = 2e-3, ATOL = 5e-5, STD = 0.2;

    @Test
    void tinyTiedGptMatchesFiniteDifferences() {
        checkAll(new GptConfig(16, 6, 8, 2, 2, 2, true, 11), 101);
    }

    @Test
    void tinyUntiedGptOfWholeVectorsMatchesFiniteDifferences() {
        checkAll(new GptConfig(20, 5, 24, 2, 2, 2, false, 12), 202);
    }

    private static void checkAll(GptConfig config, long seed) {
        Gpt model = new Gpt(config);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = GradientCheck.floats(arena, model.parameterCount());
            GradientCheck.randomPoint(model, params, seed, STD);
            TokenBatch batch = model.batch(3, 1);
            double reference = Reference.gptLoss(config, model.tensors(), params, batch);
            assertThat(model.lossDouble(params, batch)).as("loss against the double reference")
                    .isCloseTo(reference, Offset.offset(2e-6 * reference));
            GradientCheck.Result r = GradientCheck.check(model, model::lossDouble, params, batch, H, RTOL, ATOL);
            System.out.printf("%s: loss %.6f (reference %.6f), %d elements, %d misses, worst |a-n|/allowed %.3f, %.1f%% of gradients >= 20 atol%n",
                    model.name(), model.loss(params, batch), reference, r.checked(), r.misses().size(), r.worstRatio(), 100 * r.largeShare());
            assertThat(r.checked()).isEqualTo(model.parameterCount());
            assertThat(r.tensorsCovered()).isEqualTo(model.tensors().size());
            assertThat(r.misses()).as("elements whose analytic and numeric gradients differ").isEmpty();
        }
    }
}
