package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;

/** An optimizer over a model's flat float32 parameter and gradient buffers (native order). */
public interface Optimizer {
    /** One update of params from grads (both at least the optimizer's count of floats, from offset 0). */
    void step(MemorySegment params, MemorySegment grads);
}
