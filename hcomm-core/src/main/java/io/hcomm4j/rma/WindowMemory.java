package io.hcomm4j.rma;

import io.hcomm4j.memory.Buffer;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.memory.SharedFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A window's memory on one rank: its block (a pool buffer, or the caller's segment) and its control block (a pool
 * buffer, so same-host members can map it), the descriptor that tells the others where both lie, and the mappings
 * of the same-host members' files. Without a pool (shared memory off) both are plain off-heap memory, reached through
 * the progress engine only.
 *
 * <pre>
 * descriptor (56 bytes): i64 block bytes, i64 block file sequence (-1: not in a shared file), i64 block offset in it,
 *                        i64 control file sequence (-1: none), i64 control offset, i64 control bytes,
 *                        i64 bytes the atomics may touch (the block rounded up to whole words where the memory allows)
 * </pre>
 */
final class WindowMemory implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WindowMemory.class);
    static final int DESCRIPTOR = 56;

    private final MemorySegment data;
    /** {@link #data} extended to a whole 8-byte word where the memory allows (1- and 2-byte atomics CAS whole words). */
    private final MemorySegment dataView;
    private final MemorySegment ctrl;
    private final Buffer dataBuffer;
    private final Buffer ctrlBuffer;
    /** The same-host members' files, mapped here. */
    private final Arena mapped = Arena.ofShared();
    /** This rank's own memory when there is no pool. */
    private Arena fallback;
    private final long[] dataAt = {-1, 0};
    private final long[] ctrlAt = {-1, 0};

    private WindowMemory(MemorySegment data, MemorySegment dataView, Buffer dataBuffer, MemorySegment ctrl, Buffer ctrlBuffer) {
        this.data = data;
        this.dataView = dataView;
        this.dataBuffer = dataBuffer;
        this.ctrl = ctrl;
        this.ctrlBuffer = ctrlBuffer;
    }

    /** This rank's memory for a window: {@code segment}, or {@code bytes} new zeroed bytes if it is null. */
    static WindowMemory own(WindowGroup group, MemorySegment segment, long bytes, String op) {
        int rank = group.rank();
        if (segment != null) {
            if (!segment.isNative()) {
                throw new IllegalArgumentException("rank " + rank + ": " + op + ": segment must be off-heap (an Arena's or "
                        + "comm.memory()'s): the target applies atomics to it; heap arrays work as origin buffers");
            }
            if (segment.address() % 8 != 0) {
                throw new IllegalArgumentException("rank " + rank + ": " + op + ": segment address 0x"
                        + Long.toHexString(segment.address()) + " is not 8-byte aligned (atomics need it)");
            }
            if (!group.transport().usableFromAnyThread(segment)) {
                throw new IllegalArgumentException("rank " + rank + ": " + op + ": segment is confined to one thread; the "
                        + "progress engine must reach it (use a shared or global arena)");
            }
        } else if (bytes < 0) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": bytes " + bytes + " is negative");
        }
        MemoryPool pool = group.pool();
        Buffer dataBuffer = null;
        Buffer ctrlBuffer = null;
        Arena fallback = null;
        try {
            MemorySegment data = segment;
            MemorySegment view = segment;
            if (data == null) {
                if (pool != null) {
                    dataBuffer = pool.allocate(wholeWords(bytes));
                    view = dataBuffer.segment();
                } else {
                    fallback = Arena.ofShared();
                    view = fallback.allocate(wholeWords(bytes), 4096);
                }
                view.fill((byte) 0);
                data = view.asSlice(0, bytes);
            }
            long ctrlBytes = ControlBlock.bytes(group.size());
            MemorySegment ctrl;
            if (pool != null) {
                ctrlBuffer = pool.allocate(ctrlBytes);
                ctrl = ctrlBuffer.segment();
            } else {
                if (fallback == null) fallback = Arena.ofShared();
                ctrl = fallback.allocate(ctrlBytes, 4096);
            }
            ctrl.fill((byte) 0);
            WindowMemory m = new WindowMemory(data, view, dataBuffer, ctrl, ctrlBuffer);
            m.fallback = fallback;
            if (pool != null) {
                if (bytes > 0) pool.locate(data, bytes, m.dataAt);
                pool.locate(ctrl, ctrlBytes, m.ctrlAt);
            }
            return m;
        } catch (RuntimeException e) {
            if (dataBuffer != null) dataBuffer.close();
            if (ctrlBuffer != null) ctrlBuffer.close();
            if (fallback != null) fallback.close();
            throw e;
        }
    }

    /** Bytes rounded up to whole 8-byte words (at least one). */
    static long wholeWords(long bytes) {
        return Math.max(8, (bytes + 7) & ~7L);
    }

    MemorySegment data() {
        return data;
    }

    MemorySegment dataView() {
        return dataView;
    }

    MemorySegment ctrl() {
        return ctrl;
    }

    byte[] descriptor() {
        ByteBuffer b = ByteBuffer.allocate(DESCRIPTOR).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(data.byteSize()).putLong(dataAt[0]).putLong(dataAt[1]).putLong(ctrlAt[0]).putLong(ctrlAt[1]).putLong(ctrl.byteSize())
                .putLong(dataView.byteSize());
        return b.array();
    }

    static long bytesOf(byte[] descriptor) {
        return field(descriptor, 0);
    }

    static long viewBytesOf(byte[] descriptor) {
        return field(descriptor, 6);
    }

    private static long field(byte[] d, int i) {
        return MemorySegment.ofArray(d).get(ValueLayout.JAVA_LONG_UNALIGNED, i * 8L);
    }

    /** Member {@code r}'s block mapped here, or null if it is not in a shared file (or cannot be mapped). */
    MemorySegment mapData(WindowGroup group, int r, byte[] d) {
        // a block in the pool is a buffer of whole words: map those, for the word-wide atomics on its last bytes
        return map(group, r, field(d, 1), field(d, 2), wholeWords(field(d, 0)), "block");
    }

    /** Member {@code r}'s control block mapped here, or null. */
    MemorySegment mapCtrl(WindowGroup group, int r, byte[] d) {
        return map(group, r, field(d, 3), field(d, 4), field(d, 5), "control block");
    }

    private MemorySegment map(WindowGroup group, int r, long seq, long offset, long bytes, String what) {
        if (seq < 0 || group.shmDir() == null) return null;
        String name = null;
        try {
            // the pair's shared-memory link names the peer's files (collectives may have run without it)
            group.transport().connect(group.worldRank(r), System.nanoTime() + group.timeoutNanos());
            String prefix = group.transport().peerFilePrefix(group.worldRank(r));
            if (prefix == null) return null;
            name = prefix + seq;
            MemorySegment file = SharedFiles.mapPeerFile(group.shmDir(), name, mapped);
            MemorySegment slice = file.asSlice(offset, bytes);
            SharedFiles.prefault(slice); // at creation, not in the first ops' time
            return slice;
        } catch (IOException | RuntimeException e) {
            // the progress engine of rank r still reaches it: slower, not wrong
            LOG.warn("rank {}: cannot map the window {} of rank {} ({}): {}; reaching it through its progress engine",
                    group.rank(), what, r, name, e.toString());
            return null;
        }
    }

    @Override
    public void close() {
        closeQuietly(mapped);
        if (dataBuffer != null) dataBuffer.close();
        if (ctrlBuffer != null) ctrlBuffer.close();
        if (fallback != null) closeQuietly(fallback);
    }

    private static void closeQuietly(Arena a) {
        try {
            a.close();
        } catch (IllegalStateException ignored) {
            // already closed
        }
    }
}
