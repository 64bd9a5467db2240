package io.hcomm4j.examples.gpt;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * AdamW and SGD against scalar double-precision transcriptions of torch.optim's update rules, over a few steps with
 * fresh random gradients each, on a length that is not a multiple of the vector (so the scalar tail runs too).
 * Float32 state drifts from the double reference by rounding only: parameters within 1e-6 of it (relative to
 * max(1, |p|)), the moments within 1e-6 relative to the element's largest gradient (a moment can be a small
 * difference of larger terms), after 5 steps.
 */
class AdamWTest {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    static final int N = 1000 + 7;

    @Test
    void adamWFollowsTorchsUpdate() {
        float lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
        SplittableRandom r = new SplittableRandom(1);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(N * 4L, 64), g = arena.allocate(N * 4L, 64);
            double[] rp = new double[N], rm = new double[N], rv = new double[N], gmax = new double[N];
            for (int i = 0; i < N; i++) {
                p.setAtIndex(F, i, (float) r.nextGaussian());
                rp[i] = p.getAtIndex(F, i);
            }
            AdamW opt = new AdamW(N, lr, b1, b2, eps, wd);
            for (int step = 1; step <= 5; step++) {
                for (int i = 0; i < N; i++) {
                    // some gradients far smaller than others: eps and the bias corrections both matter
                    g.setAtIndex(F, i, (float) (r.nextGaussian() * (i % 3 == 0 ? 1e-6 : 1)));
                }
                opt.step(p, g);
                double bc1 = 1 - Math.pow(b1, step), bc2 = 1 - Math.pow(b2, step);
                for (int i = 0; i < N; i++) {
                    double gi = g.getAtIndex(F, i);
                    gmax[i] = Math.max(gmax[i], Math.abs(gi));
                    rp[i] *= 1 - (double) lr * wd;
                    rm[i] = b1 * rm[i] + (1 - (double) b1) * gi;
                    rv[i] = b2 * rv[i] + (1 - (double) b2) * gi * gi;
                    rp[i] -= lr / bc1 * rm[i] / (Math.sqrt(rv[i]) / Math.sqrt(bc2) + eps);
                }
                for (int i = 0; i < N; i++) {
                    assertThat((double) p.getAtIndex(F, i)).as("step %d element %d", step, i)
                            .isCloseTo(rp[i], Offset.offset(1e-6 * (1 + Math.abs(rp[i]))));
                    assertThat((double) opt.expAvg().getAtIndex(F, i)).isCloseTo(rm[i], Offset.offset(1e-6 * gmax[i]));
                    assertThat((double) opt.expAvgSq().getAtIndex(F, i)).isCloseTo(rv[i], Offset.offset(1e-6 * gmax[i] * gmax[i]));
                }
            }
            assertThat(opt.steps()).isEqualTo(5);
        }
    }

    @Test
    void adamWFirstStepMovesEachParameterByAboutLr() {
        // at step 1, m̂ = g and v̂ = g², so the update is lr·g/(|g| + eps) ≈ ±lr, plus the decay
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(N * 4L, 64), g = arena.allocate(N * 4L, 64);
            for (int i = 0; i < N; i++) {
                p.setAtIndex(F, i, 2f);
                g.setAtIndex(F, i, i % 2 == 0 ? 0.5f : -3f);
            }
            new AdamW(N, 1e-3f).step(p, g);
            for (int i = 0; i < N; i++) {
                double decayed = 2 * (1 - 1e-3 * 0.01);
                assertThat((double) p.getAtIndex(F, i)).isCloseTo(decayed + (i % 2 == 0 ? -1e-3 : 1e-3), Offset.offset(1e-6));
            }
        }
    }

    @Test
    void sgdWithMomentumFollowsTorchsUpdate() {
        SplittableRandom r = new SplittableRandom(2);
        float lr = 0.01f, mu = 0.9f;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(N * 4L, 64), g = arena.allocate(N * 4L, 64);
            double[] rp = new double[N], rb = new double[N];
            for (int i = 0; i < N; i++) {
                p.setAtIndex(F, i, (float) r.nextGaussian());
                rp[i] = p.getAtIndex(F, i);
            }
            Sgd opt = new Sgd(N, lr, mu);
            for (int step = 1; step <= 5; step++) {
                for (int i = 0; i < N; i++) {
                    g.setAtIndex(F, i, (float) r.nextGaussian());
                }
                opt.step(p, g);
                for (int i = 0; i < N; i++) {
                    rb[i] = step == 1 ? g.getAtIndex(F, i) : mu * rb[i] + g.getAtIndex(F, i);
                    rp[i] -= lr * rb[i];
                    assertThat((double) p.getAtIndex(F, i)).isCloseTo(rp[i], Offset.offset(1e-6 * (1 + Math.abs(rp[i]))));
                }
            }
        }
    }

    @Test
    void sameInputsGiveTheSameBits() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(N * 4L, 64), q = arena.allocate(N * 4L, 64), g = arena.allocate(N * 4L, 64);
            SplittableRandom r = new SplittableRandom(3);
            for (int i = 0; i < N; i++) {
                p.setAtIndex(F, i, (float) r.nextGaussian());
                g.setAtIndex(F, i, (float) r.nextGaussian());
            }
            q.copyFrom(p);
            AdamW a = new AdamW(N, 1e-3f), b = new AdamW(N, 1e-3f);
            for (int step = 0; step < 3; step++) {
                a.step(p, g);
                b.step(q, g);
            }
            assertThat(q.toArray(F)).containsExactly(p.toArray(F));
        }
    }
}
