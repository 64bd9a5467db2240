package io.hcomm4j.comm;

import io.hcomm4j.HcommException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import io.hcomm4j.memory.SharedFiles;
import java.nio.file.Path;

/**
 * The peers' memory-pool files that a zero-copy engine has mapped: up to {@value #FILES_PER_PEER} per peer, each
 * mapped once (pre-faulted) and kept, least recently used evicted first (never one the current op uses), so steady
 * state maps nothing and takes no page fault. Files their owner has unlinked are unmapped when a new one is mapped.
 */
final class PeerFiles {
    static final int FILES_PER_PEER = 64;

    private final Path dir;
    private final int rank;
    /** Per comm rank: the name prefix of its pool files (set when the engine attaches). */
    final String[] prefix;
    private final long[][] fileSeq;
    private final Arena[][] fileArena;
    private final MemorySegment[][] fileSeg;
    private final long[][] fileUsed;
    private long opStamp;

    PeerFiles(Path dir, int rank, int n) {
        this.dir = dir;
        this.rank = rank;
        this.prefix = new String[n];
        this.fileSeq = new long[n][FILES_PER_PEER];
        this.fileArena = new Arena[n][FILES_PER_PEER];
        this.fileSeg = new MemorySegment[n][FILES_PER_PEER];
        this.fileUsed = new long[n][FILES_PER_PEER];
    }

    /** A new op begins: the files it maps are not evicted before it ends. */
    void nextOp() {
        opStamp++;
    }

    /** Peer {@code q}'s pool file {@code seq}, mapped here once (pre-faulted) and kept. */
    MemorySegment map(int q, long seq) {
        long[] seqs = fileSeq[q];
        MemorySegment[] segs = fileSeg[q];
        long[] used = fileUsed[q];
        int victim = -1;
        for (int i = 0; i < FILES_PER_PEER; i++) {
            if (segs[i] == null) {
                if (victim < 0 || segs[victim] != null) victim = i;
                continue;
            }
            if (seqs[i] == seq) {
                used[i] = opStamp;
                return segs[i];
            }
            if (used[i] != opStamp && (victim < 0 || (segs[victim] != null && used[i] < used[victim]))) victim = i;
        }
        if (victim < 0) throw new HcommException("rank " + rank + ": no room to map rank " + q + "'s buffer");
        dropUnlinked(q);
        Arena a = Arena.ofShared();
        MemorySegment seg;
        try {
            seg = SharedFiles.mapPeerFile(dir, prefix[q] + seq, a);
            prefault(seg);
        } catch (IOException | RuntimeException e) {
            closeQuietly(a);
            throw new HcommException("rank " + rank + ": cannot map the registered buffer of rank " + q + " (" + prefix[q] + seq
                    + " in " + dir + "): " + e.getMessage(), e);
        }
        if (segs[victim] != null) closeQuietly(fileArena[q][victim]);
        seqs[victim] = seq;
        fileArena[q][victim] = a;
        segs[victim] = seg;
        used[victim] = opStamp;
        return seg;
    }

    /**
     * Unmaps peer {@code q}'s files that it has unlinked since (a dropped adopted buffer, a trimmed pool mapping): it
     * will not name them again, and a mapping kept would hold their memory. Checked only when a new file is mapped.
     */
    private void dropUnlinked(int q) {
        for (int i = 0; i < FILES_PER_PEER; i++) {
            if (fileSeg[q][i] == null || fileUsed[q][i] == opStamp) continue;
            if (!java.nio.file.Files.exists(dir.resolve(prefix[q] + fileSeq[q][i]))) {
                closeQuietly(fileArena[q][i]);
                fileArena[q][i] = null;
                fileSeg[q][i] = null;
            }
        }
    }

    /** Touches every page of a fresh mapping so no op pays page faults later ({@link SharedFiles#prefault}). */
    private static void prefault(MemorySegment seg) {
        SharedFiles.prefault(seg);
    }

    /** Unmaps every file (an op still running on another thread then fails, never crashes). */
    void close() {
        for (Arena[] arenas : fileArena) {
            for (Arena a : arenas) if (a != null) closeQuietly(a);
        }
    }

    static void closeQuietly(Arena a) {
        try {
            a.close();
        } catch (IllegalStateException ignored) {
            // already closed, or in use by a thread that then fails
        }
    }
}
