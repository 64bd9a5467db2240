package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;

/**
 * torch.optim.AdamW over a flat float32 buffer, as torch's single-tensor implementation computes it: decoupled
 * weight decay {@code p −= lr·wd·p} on every parameter (the script gives AdamW all of them, biases and LayerNorms
 * included), {@code m = lerp(m, g, 1 − β1)}, {@code v = β2·v + (1 − β2)·g²}, then
 * {@code p −= lr/(1 − β1ᵗ) · m / (√v/√(1 − β2ᵗ) + eps)}.
 *
 * <p>The moments live in this optimizer's own off-heap memory (zero at the start, freed with it; see {@link Memory}
 * for why the buffers are global-scope views). Vectorised with
 * a scalar tail computing the same expression, so results depend on nothing but the inputs.
 */
public final class AdamW implements Optimizer {
    private final long count;
    private final float lr, beta1, beta2, eps, weightDecay;
    private final Memory memory = new Memory();
    private final Memory.View paramsView = new Memory.View(), gradsView = new Memory.View();
    private final MemorySegment m, v;
    private long steps;

    /** torch's defaults but the learning rate: betas (0.9, 0.999), eps 1e-8, weight decay 0.01. */
    public AdamW(long count, float lr) {
        this(count, lr, 0.9f, 0.999f, 1e-8f, 0.01f);
    }

    /** An optimizer for count floats. */
    public AdamW(long count, float lr, float beta1, float beta2, float eps, float weightDecay) {
        if (count < 0 || !(lr >= 0) || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) || !(eps >= 0)) {
            throw new IllegalArgumentException("bad AdamW settings");
        }
        this.count = count;
        this.lr = lr;
        this.beta1 = beta1;
        this.beta2 = beta2;
        this.eps = eps;
        this.weightDecay = weightDecay;
        m = memory.floats(count);
        v = memory.floats(count);
    }

    @Override
    public void step(MemorySegment params, MemorySegment grads) {
        check(params);
        check(grads);
        MemorySegment p = paramsView.of(params), g = gradsView.of(grads);
        steps++;
        float decay = 1 - lr * weightDecay;
        float stepSize = (float) (lr / (1 - StrictMath.pow(beta1, steps)));
        float bc2Sqrt = (float) Math.sqrt(1 - StrictMath.pow(beta2, steps));
        float a1 = 1 - beta1, a2 = 1 - beta2;
        long i = 0;
        long full = count - count % Ops.L;
        FloatVector a1v = FloatVector.broadcast(Ops.S, a1);
        for (; i < full; i += Ops.L) {
            FloatVector gi = Ops.ld(g, i);
            FloatVector mi = Ops.ld(m, i);
            mi = gi.sub(mi).fma(a1v, mi);
            FloatVector vi = gi.mul(gi).mul(a2).add(Ops.ld(v, i).mul(beta2));
            FloatVector denom = vi.sqrt().div(bc2Sqrt).add(eps);
            FloatVector pi = Ops.ld(p, i).mul(decay);
            Ops.st(pi.sub(mi.div(denom).mul(stepSize)), p, i);
            Ops.st(mi, m, i);
            Ops.st(vi, v, i);
        }
        for (; i < count; i++) {
            float gi = Ops.get(g, i);
            float mi = Ops.get(m, i);
            mi = Math.fma(gi - mi, a1, mi);
            float vi = gi * gi * a2 + Ops.get(v, i) * beta2;
            float denom = (float) Math.sqrt(vi) / bc2Sqrt + eps;
            float pi = Ops.get(p, i) * decay;
            Ops.set(p, i, pi - mi / denom * stepSize);
            Ops.set(m, i, mi);
            Ops.set(v, i, vi);
        }
    }

    private void check(MemorySegment s) {
        if (s.byteSize() < count * Float.BYTES) {
            throw new IllegalArgumentException("buffer of " + s.byteSize() + " bytes, need " + count * Float.BYTES);
        }
    }

    /** Steps taken. */
    public long steps() {
        return steps;
    }

    /** Sets the step count, as when restoring a saved state into {@link #expAvg()} and {@link #expAvgSq()}. */
    public void steps(long steps) {
        this.steps = steps;
    }

    /** The first moment (torch's exp_avg), count floats; valid while this optimizer is reachable. */
    public MemorySegment expAvg() {
        return m;
    }

    /** The second moment (torch's exp_avg_sq), count floats; valid while this optimizer is reachable. */
    public MemorySegment expAvgSq() {
        return v;
    }
}
