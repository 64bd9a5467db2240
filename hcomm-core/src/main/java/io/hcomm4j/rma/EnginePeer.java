package io.hcomm4j.rma;

import io.hcomm4j.RemoteEngine;
import io.hcomm4j.SegmentDescriptor;
import io.hcomm4j.memory.SharedFiles;
import io.hcomm4j.transport.PeerTransport;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A remote engine this engine is connected to: its handle, the descriptors of its segments seen so far (from the store
 * or out of band), and, on one host, its pool files mapped here, so that transfers to segments in its pool are plain
 * copies. A mapping stays until this engine closes (the memory stays valid even if the remote dies meanwhile).
 */
final class EnginePeer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EnginePeer.class);

    final RemoteEngine handle;
    /** Whether transfers to its pool segments may map them (same host, shared memory on). */
    private final boolean sameHost;
    private final ConcurrentHashMap<String, SegmentDescriptor> segments = new ConcurrentHashMap<>();
    /** Its pool files mapped here, by sequence number. */
    private final ConcurrentHashMap<Long, MemorySegment> files = new ConcurrentHashMap<>();
    /** Files that could not be mapped (not tried again: the progress engine serves their segments). */
    private final java.util.Set<Long> unmappable = ConcurrentHashMap.newKeySet();
    private final Arena mapped = Arena.ofShared();
    private volatile boolean closed;

    EnginePeer(RemoteEngine handle, boolean sameHost) {
        this.handle = handle;
        this.sameHost = sameHost;
    }

    int slot() {
        return handle.id();
    }

    /** The descriptor of its segment {@code name} seen last, or null. */
    SegmentDescriptor cached(String name) {
        return segments.get(name);
    }

    void remember(SegmentDescriptor d) {
        segments.put(d.segment(), d);
    }

    /** A descriptor that proved stale (the remote refused an op on it): the next transfer looks the name up again. */
    void forget(String name) {
        segments.remove(name);
    }

    /**
     * The segment of {@code d} mapped here, or null if it must go through the remote's progress engine: another host,
     * TCP only, not in the remote's pool, or the pair is not connected through shared memory.
     */
    MemorySegment direct(SegmentDescriptor d, PeerTransport transport) {
        if (!sameHost || d.fileSequence() < 0 || d.byteSize() == 0 || closed) return null;
        MemorySegment file = files.get(d.fileSequence());
        if (file == null && !unmappable.contains(d.fileSequence())) file = map(d, transport);
        if (file == null || d.fileOffset() > file.byteSize() - d.byteSize()) return null;
        return file.asSlice(d.fileOffset(), d.byteSize());
    }

    private synchronized MemorySegment map(SegmentDescriptor d, PeerTransport transport) {
        MemorySegment file = files.get(d.fileSequence());
        if (file != null || closed) return file;
        // the pair's shared-memory link names the remote's files (learnt in its authenticated hello)
        String prefix = transport.peerFilePrefix(slot());
        Path dir = transport.shmDir();
        if (prefix == null || dir == null) {
            unmappable.add(d.fileSequence());
            return null;
        }
        String name = prefix + d.fileSequence();
        try {
            file = SharedFiles.mapPeerFile(dir, name, mapped);
            SharedFiles.prefault(file); // once here, not in the first transfers' time
        } catch (IOException | RuntimeException e) {
            // its progress engine still serves the segment: slower, not wrong
            LOG.warn("cannot map segment '{}' of engine '{}' ({}): {}; reaching it through its progress engine",
                    d.segment(), handle.name(), name, e.toString());
            unmappable.add(d.fileSequence());
            return null;
        }
        files.put(d.fileSequence(), file);
        return file;
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        files.clear();
        try {
            mapped.close();
        } catch (IllegalStateException ignored) {
            // closed already
        }
    }
}
