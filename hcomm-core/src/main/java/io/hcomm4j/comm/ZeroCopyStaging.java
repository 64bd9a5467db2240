package io.hcomm4j.comm;

import io.hcomm4j.algo.ZeroCopyCollectives;
import io.hcomm4j.memory.Buffer;
import io.hcomm4j.memory.MemoryPool;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The private memory a {@link ZeroCopyEngine}'s ops go through besides the ranks' buffers: the registered staging
 * buffer unregistered memory is copied through (so peers can map it), and the large scratch of streaming slices. Both
 * are made on first need and kept for the next ops (ops run one at a time), so the steady state allocates nothing.
 */
final class ZeroCopyStaging {
    private static final Logger LOG = LoggerFactory.getLogger(ZeroCopyStaging.class);

    /** Smallest staging buffer (a few small ops do not each grow it). */
    static final long STAGE_MIN = 64 * 1024;

    private final MemoryPool pool;
    private final int rank;
    /** Registered memory that unregistered buffers of an op are copied through. */
    private Buffer stage;
    private boolean stageRefused;
    /** Scratch for large slices (chunks of {@link ZeroCopyCollectives#STREAMING_COPY_MIN} bytes or more). */
    private MemorySegment big;

    ZeroCopyStaging(MemoryPool pool, int rank) {
        this.pool = pool;
        this.rank = rank;
    }

    /**
     * This rank's registered staging buffer, at least {@code bytes} long (grown by powers of two, kept for the next
     * ops), or null if the pool cannot give one (its limit; then the op goes through the transport).
     */
    MemorySegment staging(long bytes) {
        if (bytes == 0) return null;
        if (stage != null && stage.byteSize() >= bytes) return stage.segment();
        long size = Math.max(STAGE_MIN, Long.highestOneBit(bytes - 1) << 1);
        Buffer next;
        try {
            next = pool.allocate(size);
        } catch (RuntimeException e) {
            if (!stageRefused) LOG.info("rank {}: no staging buffer of {} bytes for zero-copy collectives on unregistered "
                    + "memory ({}); those go through the transport", rank, size, e.getMessage());
            stageRefused = true;
            return null;
        }
        if (stage != null) stage.close();
        stage = next;
        return stage.segment();
    }

    /**
     * Slot {@code parity} (0 or 1) of this rank's small all-reduce inputs ({@link ZeroCopyReductions}),
     * {@link #SLOT_MAX} bytes, or null if the pool cannot give them. Their own registered buffer, never the
     * staging buffer: an op copies into the staging buffer before it arrives, while a peer may still read a slot.
     */
    MemorySegment slot(int parity) {
        if (slots == null) {
            if (slotsRefused) return null;
            try {
                slots = pool.allocate(2 * SLOT_MAX);
                slot[0] = slots.segment().asSlice(0, SLOT_MAX);
                slot[1] = slots.segment().asSlice(SLOT_MAX, SLOT_MAX);
            } catch (RuntimeException e) {
                LOG.info("rank {}: no buffer of {} bytes for small zero-copy all-reduces ({}); they take two steps",
                        rank, 2 * SLOT_MAX, e.getMessage());
                slotsRefused = true;
                return null;
            }
        }
        return slot[parity];
    }

    /** Bytes of one small all-reduce input slot: the largest one-step all-reduce ({@link ZeroCopyReductions#ONE_STEP_MAX}). */
    static final long SLOT_MAX = 16 * 1024;
    private Buffer slots;
    /** The two slots as segments, made once: an op allocates nothing. */
    private final MemorySegment[] slot = new MemorySegment[2];
    private boolean slotsRefused;

    /** The large scratch if a slice of {@code sliceBytes} is cut into streaming chunks, else null. */
    MemorySegment bigScratch(long sliceBytes) {
        long min = ZeroCopyCollectives.STREAMING_COPY_MIN + 4096;
        if (sliceBytes < 2 * min) return null;
        // chunks are at most twice the minimum (equal pieces of a slice of at least two minimums)
        if (big == null) big = Arena.ofAuto().allocate(2 * min + 4096, 4096);
        return big;
    }

    /** Returns the staging buffer and the slots to the pool. */
    void close() {
        for (Buffer b : new Buffer[] {stage, slots}) {
            if (b == null) continue;
            try {
                b.close();
            } catch (RuntimeException e) {
                LOG.debug("rank {}: {} not returned to the pool: {}", rank, b == stage ? "staging buffer" : "one-step slots",
                        e.toString());
            }
        }
    }
}
