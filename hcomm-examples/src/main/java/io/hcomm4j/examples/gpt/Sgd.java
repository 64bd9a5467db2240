package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;

/**
 * torch.optim.SGD with momentum, no dampening, no weight decay (the script's --optim sgd):
 * {@code b = μ·b + g} (b = g at the first step, which is the same from b = 0), {@code p −= lr·b}.
 */
public final class Sgd implements Optimizer {
    private final long count;
    private final float lr, momentum;
    private final Memory memory = new Memory();
    private final Memory.View paramsView = new Memory.View(), gradsView = new Memory.View();
    private final MemorySegment buf;

    /** The script's SGD: momentum 0.9. */
    public Sgd(long count, float lr) {
        this(count, lr, 0.9f);
    }

    /** An optimizer for count floats. */
    public Sgd(long count, float lr, float momentum) {
        this.count = count;
        this.lr = lr;
        this.momentum = momentum;
        buf = memory.floats(count);
    }

    @Override
    public void step(MemorySegment params, MemorySegment grads) {
        if (params.byteSize() < count * Float.BYTES || grads.byteSize() < count * Float.BYTES) {
            throw new IllegalArgumentException("buffers smaller than " + count + " floats");
        }
        MemorySegment p = paramsView.of(params), g = gradsView.of(grads);
        long i = 0;
        long full = count - count % Ops.L;
        FloatVector mu = FloatVector.broadcast(Ops.S, momentum), step = FloatVector.broadcast(Ops.S, -lr);
        for (; i < full; i += Ops.L) {
            FloatVector b = Ops.ld(buf, i).fma(mu, Ops.ld(g, i));
            Ops.st(b, buf, i);
            Ops.st(b.fma(step, Ops.ld(p, i)), p, i);
        }
        for (; i < count; i++) {
            float b = Math.fma(Ops.get(buf, i), momentum, Ops.get(g, i));
            Ops.set(buf, i, b);
            Ops.set(p, i, Math.fma(b, -lr, Ops.get(p, i)));
        }
    }

    /** The momentum buffer, count floats. */
    public MemorySegment momentumBuffer() {
        return buf;
    }
}
