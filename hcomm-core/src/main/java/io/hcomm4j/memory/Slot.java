package io.hcomm4j.memory;

import java.lang.foreign.MemorySegment;

/** One buffer's place in a mapping: a size class's worth of bytes at a fixed offset. Reused for every lease of it. */
final class Slot {
    final Mapping mapping;
    final long offset;
    /** The slot's bytes in the mapping's arena (never handed out: users get a view with their own scope). */
    final MemorySegment segment;
    /** How many times the slot was leased. Guarded by the size class's lock. */
    long leases;

    Slot(Mapping mapping, long offset, long size) {
        this.mapping = mapping;
        this.offset = offset;
        this.segment = mapping.base.asSlice(offset, size);
    }
}
