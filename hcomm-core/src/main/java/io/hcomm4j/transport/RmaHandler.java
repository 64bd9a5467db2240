package io.hcomm4j.transport;

import java.lang.foreign.MemorySegment;

/**
 * The one-sided layer's side of {@link Frame#RMA} frames (placeholder of the rma-hook branch: replaced on merge).
 */
public interface RmaHandler {
    MemorySegment payloadTarget(int peer, int flags, long windowId, int opId, long offset, long length);

    void onRma(int peer, int flags, long windowId, int opId, long offset, MemorySegment payload);
}
