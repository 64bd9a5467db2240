package io.hcomm4j.examples.gpt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Off-heap float buffers, and the callers' buffers, as views in the global scope (one per owner: a model or an
 * optimizer, which keeps its Memory, and with it its memory, reachable).
 *
 * <p>Why views: the Vector API's loads and stores check the segment's session, and C2 compiles that check for the
 * session types it has seen. When a caller's buffers came from another kind of arena than the model's own (confined
 * parameters, automatic activations), the kernels that touch both kept being deoptimized and recompiled (layerNorm
 * every step, "profile_predicate" traps): the GPT step took 200 ms instead of 167. In the global scope every segment
 * a kernel sees has the same session, which also has no liveness check to make. The price: a caller must keep its
 * buffers alive during a call (as it would anyway), and making a view is a restricted method
 * ({@code --enable-native-access=ALL-UNNAMED}, which the project's launchers and tests pass; without it, the JDK warns
 * once).
 */
final class Memory {
    private final Arena arena = Arena.ofAuto();

    /** n floats, zeroed, 64-byte aligned, alive as long as this Memory is reachable. */
    MemorySegment floats(long n) {
        return global(arena.allocate(Math.max(1, n) * Float.BYTES, 64));
    }

    /** The same native memory in the global scope; a heap segment as it is. */
    static MemorySegment global(MemorySegment s) {
        return s.isNative() ? MemorySegment.ofAddress(s.address()).reinterpret(s.byteSize()) : s;
    }

    /**
     * The global view of a caller's buffer, remembered for the next call with the same segment, so that a training
     * loop, which passes the same buffers every step, allocates nothing for it.
     */
    static final class View {
        private MemorySegment of;
        private MemorySegment view;

        MemorySegment of(MemorySegment s) {
            if (!s.scope().isAlive()) {
                throw new IllegalStateException("the buffer's arena is closed");
            }
            if (s != of) {
                view = global(s);
                of = s;
            }
            return view;
        }
    }
}
