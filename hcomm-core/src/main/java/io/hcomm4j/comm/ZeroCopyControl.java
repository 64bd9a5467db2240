package io.hcomm4j.comm;

import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.memory.SharedFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The file behind a {@link ZeroCopyEngine}'s control mapping ({@link ControlLayout}): rank 0 creates it (pre-faulted,
 * mode 0600, named like the pool's files) and publishes its name in the store, or "none" if it cannot; the others map
 * it from that name; rank 0 unlinks it once every rank has mapped it (or at close), and each rank unmaps it at close.
 */
final class ZeroCopyControl {
    private static final Logger LOG = LoggerFactory.getLogger(ZeroCopyControl.class);
    /** What rank 0 publishes instead of a name when it cannot create the file: every rank's engine stays off. */
    private static final String NONE = "!";

    private final Store store;
    private final String storeKey;
    private final Path dir;
    private final int rank;
    private final int n;
    private final long commId;
    private Arena arena;
    /** The file's name (rank 0, once created), or null. */
    private String name;
    private boolean unlinked;

    ZeroCopyControl(Store store, String storeKey, Path dir, int rank, int n, long commId) {
        this.store = store;
        this.storeKey = storeKey;
        this.dir = dir;
        this.rank = rank;
        this.n = n;
        this.commId = commId;
    }

    /** Rank 0: creates the file, writes its header and publishes its name; null (and "none" published) if it cannot. */
    MemorySegment create() {
        String fresh = SharedFiles.newName();
        long bytes = (ControlLayout.length(n) + 4095) / 4096 * 4096;
        Arena a = Arena.ofShared();
        try {
            MemorySegment seg = SharedFiles.create(dir, fresh, bytes, a);
            name = fresh;
            ControlLayout.writeHeader(seg, n, commId);
            store.set(storeKey, fresh.getBytes(StandardCharsets.US_ASCII));
            arena = a;
            return seg;
        } catch (IOException | RuntimeException ex) {
            LOG.warn("rank {}: cannot set up zero-copy collectives for communicator {} ({}); they go through the transport",
                    rank, commId, ex.toString());
            if (name != null) unlink();
            PeerFiles.closeQuietly(a);
            try {
                store.set(storeKey, NONE.getBytes(StandardCharsets.US_ASCII));
            } catch (RuntimeException ignored) {
                // the others then fail to attach and say so
            }
            return null;
        }
    }

    /**
     * The other ranks: maps the file rank 0 published (waiting up to {@code timeout} for its name) and checks its
     * header, or returns null if rank 0 published "none".
     */
    MemorySegment map(Duration timeout) throws IOException {
        String published = new String(store.get(storeKey, timeout), StandardCharsets.US_ASCII);
        if (published.equals(NONE)) return null;
        Arena a = Arena.ofShared();
        try {
            MemorySegment seg = SharedFiles.mapPeerFile(dir, published, a);
            ControlLayout.verifyHeader(seg, published, n, commId);
            arena = a;
            return seg;
        } catch (IOException | RuntimeException e) {
            PeerFiles.closeQuietly(a);
            throw e;
        }
    }

    /** Rank 0, once every rank has mapped the file (or at close): removes its name (the mappings stay); else nothing. */
    void unlink() {
        if (name == null || unlinked) return;
        unlinked = true;
        try {
            Files.deleteIfExists(dir.resolve(name));
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", name, e.toString());
        }
    }

    /** Unmaps the file (an op still running on another thread then fails, never crashes). */
    void close() {
        if (arena != null) PeerFiles.closeQuietly(arena);
    }
}
