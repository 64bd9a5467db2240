package io.hcomm4j.examples.gpt;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * The MLP's forward against a double-precision reference, and its backward against finite differences of its
 * forward for every parameter element, on a tiny MLP of odd widths (5, 20, 17, 3: whole vectors and tails), batch 4.
 *
 * <p>ReLU has a kink at 0, and a difference quotient whose ±2h steps move a unit across it measures a mix of two
 * slopes (at h = 1e-2 and weights of 0.5, about 5 % of the elements did). So the point is first moved away from the
 * kinks: a hidden unit's bias is nudged until every pre-activation of the batch is at least {@link #MARGIN} from 0,
 * more than any ±2h step moves it. Tolerance as the GPT's: {@code |a − n| ≤ 2e-3·max(|a|, |n|) + 5e-5} at h = 1e-2.
 */
class MlpGradientCheckTest {
    static final double MARGIN = 0.15;

    @Test
    void tinyMlpMatchesReferenceAndFiniteDifferences() {
        Mlp model = new Mlp(new MlpConfig(new int[] {5, 20, 17, 3}, 4, 21));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = GradientCheck.floats(arena, model.parameterCount());
            GradientCheck.randomPoint(model, params, 303, 0.3);
            RowBatch batch = model.batch(2, 0);
            awayFromKinks(model, params, batch);
            Reference.MlpForward ref = Reference.mlp(model, params, batch);
            assertThat(ref.nearestKink()).isGreaterThanOrEqualTo(MARGIN);
            assertThat((double) model.loss(params, batch)).isCloseTo(ref.loss(), Offset.offset(1e-6 * ref.loss()));

            GradientCheck.Result r = GradientCheck.check(model, model::lossDouble, params, batch, 1e-2, 2e-3, 5e-5);
            System.out.printf("%s: loss %.6f (reference %.6f), %d elements, %d misses, worst |a-n|/allowed %.3f, "
                            + "%.1f%% of gradients >= 20 atol%n", model.name(), model.loss(params, batch), ref.loss(),
                    r.checked(), r.misses().size(), r.worstRatio(), 100 * r.largeShare());
            assertThat(r.checked()).isEqualTo(model.parameterCount()).isEqualTo(5 * 20 + 20 + 20 * 17 + 17 + 17 * 3 + 3);
            assertThat(r.tensorsCovered()).isEqualTo(6);
            assertThat(r.largeShare()).isGreaterThan(0.5);
            assertThat(r.misses()).as("elements whose analytic and numeric gradients differ").isEmpty();
        }
    }

    /** Shifts hidden biases, layer by layer, until no pre-activation of the batch lies within MARGIN of 0. */
    private static void awayFromKinks(Mlp model, MemorySegment params, RowBatch batch) {
        int[] w = model.config().widths();
        for (int l = 0; l < w.length - 2; l++) {
            Tensor bias = model.tensors().get(2 * l + 1);
            for (int unit = 0; unit < w[l + 1]; unit++) {
                // upwards only, so a unit ends on one side for every row (2·MARGIN at a time: past a near row)
                for (int round = 0; round < 100 && Reference.mlp(model, params, batch).nearest(l, unit) < MARGIN; round++) {
                    long at = bias.offset() + unit;
                    params.setAtIndex(GradientCheck.F, at, params.getAtIndex(GradientCheck.F, at) + (float) (2 * MARGIN));
                }
            }
        }
    }
}
