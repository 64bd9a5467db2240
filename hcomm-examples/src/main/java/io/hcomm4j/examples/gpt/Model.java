package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * A model whose parameters and gradients are flat float32 arrays in caller-provided {@link MemorySegment}s (native
 * byte order), the shape a data-parallel layer needs: it registers the two buffers once, all-reduces slices of the
 * gradient buffer as {@link #forwardBackward} reports them final, and hands both to an optimizer.
 *
 * <p>An instance is single-threaded: it owns the activations and workspaces of its batch shape, allocated once, so a
 * step allocates nothing. Two instances of the same configuration compute the same bits.
 */
public interface Model {
    /** Parameter tensors in FORWARD order (the order the forward pass first uses them). */
    List<Tensor> tensors();

    /** Sum of the tensors' counts = float32 elements of the flat parameter (and gradient) buffer. */
    long parameterCount();

    /** Writes the seeded initial parameters into params (parameterCount() floats from offset 0). */
    void init(long seed, MemorySegment params);

    /** A batch for this (step, rank) (deterministic from the model's seed/config). */
    Batch batch(long step, int rank);

    /**
     * Forward and backward of one batch: ADDS the gradient of the mean loss into grads (so calls accumulate, as in
     * PyTorch), and calls gradReady.accept(i) once for every tensor i as soon as its gradient for this call is final
     * (no later write to it in this call) — that happens in roughly REVERSE forward order during backward; a tied
     * weight used first in forward and again at the end is ready only when its last contribution is added. Every
     * tensor is reported exactly once per call. Returns the mean loss of the batch (computed in forward).
     */
    float forwardBackward(MemorySegment params, MemorySegment grads, Batch batch, IntConsumer gradReady);

    /** The mean loss of a batch, forward only. */
    float loss(MemorySegment params, Batch batch);

    /** A name like the script's model_name: "gpt-l4-d256-h4-c128-v256-b8" / "mlp-2048x4096x4096x2048-b16". */
    String name();
}
