package io.hcomm4j.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * An {@link Arena} whose segments are registered memory from a {@link MemoryPool}: code that allocates through an
 * arena gets the pool's zero-copy paths without knowing about buffers. Requests of at least {@link #OWN_BUFFER} bytes
 * get a pool buffer each; smaller ones are cut from shared chunks of {@link #CHUNK} bytes, so many small segments do
 * not cost a page each. Every segment has this arena's scope (a shared arena of its own): after {@link #close()} a use
 * of any of them throws {@link IllegalStateException}, as with {@link Arena#ofShared()}, and only then do the buffers
 * go back to the pool. Allocation and close are thread-safe; the segments are usable from any thread.
 */
final class PoolArena implements Arena {
    /** Requests from this size up get a pool buffer of their own. */
    static final long OWN_BUFFER = 64 << 10;
    /** The pool buffers small requests are cut from. */
    static final long CHUNK = 256 << 10;
    /** Pool buffers are page-aligned: alignments up to this need no padding. */
    private static final long PAGE = 4096;

    private final MemoryPool pool;
    private final Arena lifetime = Arena.ofShared();
    private final List<Buffer> buffers = new ArrayList<>();
    private MemorySegment chunk;
    private long chunkUsed;
    private boolean closed;

    PoolArena(MemoryPool pool) {
        this.pool = pool;
    }

    @Override
    public synchronized MemorySegment allocate(long byteSize, long byteAlignment) {
        if (byteSize < 0) throw new IllegalArgumentException("byteSize must be >= 0, was " + byteSize);
        if (byteAlignment <= 0 || Long.bitCount(byteAlignment) != 1) {
            throw new IllegalArgumentException("byteAlignment must be a power of two, was " + byteAlignment);
        }
        if (closed) throw new IllegalStateException("the pool arena is closed");
        MemorySegment raw;
        if (byteSize < OWN_BUFFER && byteAlignment <= PAGE) {
            raw = fromChunk(byteSize, byteAlignment);
        } else {
            long padding = byteAlignment > PAGE ? byteAlignment - PAGE : 0;
            Buffer b = pool.allocate(Math.max(1, Math.addExact(byteSize, padding)));
            buffers.add(b);
            MemorySegment s = b.segment();
            long skip = (byteAlignment - s.address() % byteAlignment) % byteAlignment;
            raw = s.asSlice(skip, byteSize);
        }
        // the arena's own scope: invalid once it is closed, before the memory goes back to the pool
        return raw.reinterpret(lifetime, null).fill((byte) 0);
    }

    private MemorySegment fromChunk(long byteSize, long byteAlignment) {
        long start = chunk == null ? 0 : (chunkUsed + byteAlignment - 1) & -byteAlignment;
        if (chunk == null || start + byteSize > CHUNK) {
            Buffer b = pool.allocate(CHUNK);
            buffers.add(b);
            chunk = b.segment();
            start = 0;
        }
        chunkUsed = start + byteSize;
        return chunk.asSlice(start, byteSize);
    }

    @Override
    public MemorySegment.Scope scope() {
        return lifetime.scope();
    }

    /** Invalidates every segment of this arena, then gives their memory back to the pool. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        lifetime.close();
        chunk = null;
        RuntimeException first = null;
        for (Buffer b : buffers) {
            try {
                b.close();
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            }
        }
        buffers.clear();
        if (first != null) throw first;
    }

    @Override
    public synchronized String toString() {
        return "PoolArena[" + buffers.size() + " pool buffers" + (closed ? ", closed" : "") + "]";
    }
}
