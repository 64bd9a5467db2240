package io.hcomm4j.examples.gpt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Central finite differences of a model's loss against its analytic gradient, element by element.
 *
 * <p>The numeric derivative is the fourth-order stencil {@code (−f(+2h) + 8f(+h) − 8f(−h) + f(−2h)) / 12h}: its
 * truncation error (order h⁴) stays far below the float32 rounding of the loss even at h = 1e-2, which is what lets
 * a float model be checked to about 1e-3 relative.
 */
final class GradientCheck {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;

    /** One element that failed. */
    record Miss(String tensor, long index, double analytic, double numeric) {
    }

    /** What a check found. */
    record Result(long checked, List<Miss> misses, double worstRatio, int tensorsCovered, long large) {
        /** Share of the checked elements whose gradient is large, 20 × atol or more: where a check has teeth. */
        double largeShare() {
            return (double) large / checked;
        }
    }

    /** A model's loss, in as much precision as it has. */
    interface LossFunction {
        double loss(MemorySegment params, Batch batch);
    }

    private GradientCheck() {
    }

    static MemorySegment floats(Arena arena, long n) {
        return arena.allocate(n * Float.BYTES, 64);
    }

    /**
     * Checks every parameter element: a miss is {@code |a − n| > rtol·max(|a|, |n|) + atol}. worstRatio is the
     * largest {@code |a − n| / (rtol·max + atol)} seen (below 1 when all pass).
     */
    static Result check(Model model, LossFunction loss, MemorySegment params, Batch batch, double h, double rtol,
                        double atol) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment grads = floats(arena, model.parameterCount());
            model.forwardBackward(params, grads, batch, i -> { });
            List<Miss> misses = new ArrayList<>();
            double worst = 0;
            long checked = 0, large = 0;
            int covered = 0;
            for (Tensor t : model.tensors()) {
                for (long j = 0; j < t.count(); j++) {
                    long at = t.offset() + j;
                    double numeric = derivative(loss, params, batch, at, h);
                    double analytic = grads.getAtIndex(F, at);
                    checked++;
                    if (Math.abs(analytic) >= 20 * atol) {
                        large++;
                    }
                    double allowed = rtol * Math.max(Math.abs(analytic), Math.abs(numeric)) + atol;
                    double err = Math.abs(analytic - numeric);
                    worst = Math.max(worst, err / allowed);
                    if (err > allowed) {
                        misses.add(new Miss(t.name(), j, analytic, numeric));
                    }
                }
                covered++;
            }
            return new Result(checked, misses, worst, covered, large);
        }
    }

    /** The fourth-order central difference quotient of the loss in element at, step h; leaves the element as it was. */
    private static double derivative(LossFunction loss, MemorySegment params, Batch batch, long at, double h) {
        float p = params.getAtIndex(F, at);
        double fp2 = lossAt(loss, params, batch, at, p + 2 * h);
        double fp1 = lossAt(loss, params, batch, at, p + h);
        double fm1 = lossAt(loss, params, batch, at, p - h);
        double fm2 = lossAt(loss, params, batch, at, p - 2 * h);
        params.setAtIndex(F, at, p);
        return (-fp2 + 8 * fp1 - 8 * fm1 + fm2) / (12 * h);
    }

    /** The loss with element at set to value (the perturbation is what float can hold: value is rounded once). */
    private static double lossAt(LossFunction loss, MemorySegment params, Batch batch, long at, double value) {
        params.setAtIndex(F, at, (float) value);
        return loss.loss(params, batch);
    }

    /**
     * Fills params with a random point far from the init (std 0.02 would leave most gradients near 0, where a wrong
     * term hides under the absolute tolerance): weights normal(0, std), biases normal(0, std/2), LayerNorm weights
     * 1 + normal(0, 0.3).
     */
    static void randomPoint(Model model, MemorySegment params, long seed, double std) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        for (Tensor t : model.tensors()) {
            boolean ln = t.name().contains("ln");
            boolean bias = t.name().endsWith(".bias");
            for (long j = 0; j < t.count(); j++) {
                double g = r.nextGaussian();
                float v = (float) (ln && !bias ? 1 + 0.3 * g : bias ? std / 2 * g : std * g);
                params.setAtIndex(F, t.offset() + j, v);
            }
        }
    }
}
