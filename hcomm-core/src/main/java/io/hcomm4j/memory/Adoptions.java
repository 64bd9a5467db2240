package io.hcomm4j.memory;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The caller's own large off-heap buffers, adopted by a {@link MemoryPool}: moved, in place, into shared-memory files
 * of the pool's directory, so that peers on the host can map them and read and write them where they lie, as they do
 * registered buffers, instead of every op copying them through registered staging memory.
 *
 * <p><b>How.</b> A buffer's whole pages are remapped ({@code mmap MAP_FIXED}) onto a new file at the same addresses,
 * after its bytes were copied into the file: the caller's segment stays valid and keeps its contents, its pages are
 * just shared now. The partial pages at either end may hold other data of the caller's, so they stay private: an op
 * works on a second mapping of the whole file here (the <i>view</i>), into which it copies the send buffer's end
 * pieces first and out of which it copies the receive buffer's after (at most 8 KiB an op).
 *
 * <p><b>Which buffers.</b> Only native segments of an arena that can close (never global-scope segments, whose
 * memory may be freed without this pool knowing), of at least {@link #MIN_BYTES}, lying in private anonymous memory
 * ({@code /proc/self/maps}: no file mappings, nothing shared), and only at their second op: a buffer used once is not
 * worth a file. An adopted buffer is dropped (its file unlinked, the view unmapped) once its arena is closed or
 * unreachable, when a new adoption overlaps it, and when the pool closes. At most {@link #MAX} are kept: past that a
 * new buffer is copied as before, never a live adoption dropped for it (a loop over more buffers than that would
 * otherwise adopt anew at every op, each time at the cost of allocating the buffer);
 * the caller's pages stay mapped to the unlinked file until the caller frees them, so nothing it holds goes invalid.
 *
 * <p>Thread-safe (one lock; an op takes it twice, for its buffers and for the end pieces). In steady state an op
 * allocates nothing: the view slice of the last op on a buffer is kept.
 */
final class Adoptions {
    private static final Logger LOG = LoggerFactory.getLogger(Adoptions.class);

    /**
     * Smallest buffer adopted: from here up a staged all-reduce ran 2.9-4.7x slower than a registered one (2 ranks,
     * 256 KiB-1 MiB), and adopting (64 pages and more, a millisecond or so) pays for itself within a few hundred ops.
     */
    static final long MIN_BYTES = 256L << 10;
    /** Adopted buffers kept at most (each a file that every peer maps: {@code PeerFiles} keeps 64 per peer). */
    static final int MAX = 32;
    /** Buffers seen once, waiting for their second op. */
    private static final int WATCH = 16;
    private static final long PAGE = SizeClasses.PAGE;
    private static final MemorySegment.Scope GLOBAL = MemorySegment.NULL.scope();

    /** An adopted buffer: caller's bytes {@code [start, end)}, file pages {@code [first, first + span)} of them. */
    private static final class Adopted {
        final WeakReference<MemorySegment.Scope> scope;
        final long start;
        final long end;
        final long first;
        final long span;
        final Path file;
        final long sequence;
        final long viewAddress;
        final MemorySegment view;
        /** Unmaps {@link #view} when closed. */
        Arena arena;
        /** The view slice of the last op, kept so a repeated op allocates nothing. */
        long sliceAt = -1;
        long sliceBytes;
        MemorySegment slice;

        Adopted(MemorySegment.Scope scope, long start, long end, Path file, long viewAddress, MemorySegment view) {
            this.scope = new WeakReference<>(scope);
            this.start = start;
            this.end = end;
            this.first = start & -PAGE;
            this.span = ((end + PAGE - 1) & -PAGE) - first;
            this.file = file;
            this.sequence = SharedFiles.sequence(file.getFileName().toString());
            this.viewAddress = viewAddress;
            this.view = view;
        }

        boolean alive() {
            MemorySegment.Scope s = scope.get();
            return s != null && s.isAlive();
        }
    }

    /** A buffer seen at one op. */
    private record Seen(WeakReference<MemorySegment.Scope> scope, long address, long bytes, boolean refused) {
        boolean is(MemorySegment.Scope s, long a, long b) {
            return scope.get() == s && address == a && bytes == b;
        }
    }

    private final Path dir;
    private final Adopted[] adopted = new Adopted[MAX];
    private int count;
    private final Seen[] seen = new Seen[WATCH];
    private int nextSeen;
    private long adoptedBytes;
    private boolean closed;
    /** Set after a failure to create or map a file (a full file system, no native access): no more tries. */
    private boolean off;

    Adoptions(Path dir) {
        this.dir = dir;
        this.off = !Libc.AVAILABLE;
    }

    /**
     * The view of {@code bytes} of {@code seg} from {@code offset} if they are adopted, adopting them now if this is
     * their second op; else null (the caller copies as before).
     */
    synchronized MemorySegment view(MemorySegment seg, long offset, long bytes) {
        if (off || closed || bytes < MIN_BYTES || !seg.isNative() || seg.isMapped() || offset < 0 || offset > seg.byteSize() - bytes) return null;
        MemorySegment.Scope scope = seg.scope();
        if (scope == GLOBAL) return null;
        long a = seg.address() + offset;
        dropDead();
        for (int i = 0; i < count; i++) {
            Adopted x = adopted[i];
            if (x.start <= a && a + bytes <= x.end && x.scope.get() == scope) return slice(x, a, bytes);
        }
        for (int i = 0; i < WATCH; i++) {
            Seen s = seen[i];
            if (s == null || !s.is(scope, a, bytes)) continue;
            if (s.refused() || count == MAX && !overlapsAdopted(a, a + bytes)) return null;
            seen[i] = null;
            Adopted x = adopt(scope, a, bytes);
            if (x == null) {
                seen[i] = new Seen(s.scope(), a, bytes, true);
                return null;
            }
            return slice(x, a, bytes);
        }
        seen[nextSeen] = new Seen(new WeakReference<>(scope), a, bytes, false);
        nextSeen = (nextSeen + 1) % WATCH;
        return null;
    }

    /** As {@link MemoryPool#locate}, for the views: true (and {@code out} set) if the bytes lie in one. */
    synchronized boolean locate(long address, long length, long[] out) {
        for (int i = 0; i < count; i++) {
            Adopted x = adopted[i];
            if (address >= x.viewAddress && length >= 0 && address - x.viewAddress <= x.span - length) {
                out[0] = x.sequence;
                out[1] = address - x.viewAddress;
                return true;
            }
        }
        return false;
    }

    /**
     * Copies the bytes of {@code user}'s {@code bytes} from {@code userOff} that their adopted view does not share (the partial pages
     * at the ends of the adopted buffer) into {@code view} ({@code toView}) or back.
     */
    synchronized void syncEnds(MemorySegment user, long userOff, MemorySegment view, long bytes, boolean toView) {
        long v = view.address();
        for (int i = 0; i < count; i++) {
            Adopted x = adopted[i];
            if (v < x.viewAddress || v - x.viewAddress > x.span - bytes) continue;
            long a = x.first + (v - x.viewAddress); // the caller's address of the view's first byte
            long shared0 = (x.start + PAGE - 1) & -PAGE;
            long shared1 = x.end & -PAGE;
            copy(user, userOff, view, 0, Math.min(bytes, shared0 - a), toView);
            long from = Math.max(0, shared1 - a);
            copy(user, userOff, view, from, bytes - from, toView);
            return;
        }
        throw new IllegalStateException("no adopted buffer holds the view at 0x" + Long.toHexString(v));
    }

    private static void copy(MemorySegment user, long userOff, MemorySegment view, long at, long len, boolean toView) {
        if (len <= 0) return;
        if (toView) MemorySegment.copy(user, userOff + at, view, at, len);
        else MemorySegment.copy(view, at, user, userOff + at, len);
    }

    /** Buffers adopted now (those of closed arenas dropped first). */
    synchronized int adoptedBuffers() {
        dropDead();
        return count;
    }

    synchronized long adoptedBytes() {
        dropDead();
        return adoptedBytes;
    }

    /** Drops every adopted buffer (the caller's memory stays valid) and adopts no more. */
    synchronized void close() {
        closed = true;
        while (count > 0) drop(count - 1);
    }

    // ------------------------------------------------------------------------------------------ internals

    private MemorySegment slice(Adopted x, long a, long bytes) {
        long at = a - x.first;
        if (x.sliceAt != at || x.sliceBytes != bytes) {
            x.slice = x.view.asSlice(at, bytes);
            x.sliceAt = at;
            x.sliceBytes = bytes;
        }
        return x.slice;
    }

    private boolean overlapsAdopted(long start, long end) {
        for (int i = 0; i < count; i++) if (adopted[i].start < end && start < adopted[i].end) return true;
        return false;
    }

    private void dropDead() {
        for (int i = count - 1; i >= 0; i--) if (!adopted[i].alive()) drop(i);
        for (int i = 0; i < WATCH; i++) if (seen[i] != null && seen[i].scope().get() == null) seen[i] = null;
    }

    /** Moves {@code [a, a + bytes)} of the caller's into a new file; null if it may not or cannot be. */
    private Adopted adopt(MemorySegment.Scope scope, long a, long bytes) {
        long end = a + bytes;
        long shared0 = (a + PAGE - 1) & -PAGE;
        long shared1 = end & -PAGE;
        // an adopted buffer this one overlaps goes first (its file unlinked, so its pages may move again)
        for (int i = count - 1; i >= 0; i--) if (adopted[i].start < end && a < adopted[i].end) drop(i);
        String why = privateAnonymous(shared0, shared1);
        if (why != null) {
            LOG.debug("not adopting the buffer at 0x{} ({} bytes): {}", Long.toHexString(a), bytes, why);
            return null;
        }
        long first = a & -PAGE;
        long span = ((end + PAGE - 1) & -PAGE) - first;
        Path file = dir.resolve(ShmFiles.newName());
        long start = System.nanoTime();
        int fd = -1;
        long viewAddress = 0;
        try {
            fd = Libc.create(file, span);
            viewAddress = Libc.map(fd, 0, span, 0);
            Arena arena = Arena.ofShared();
            long unmapAt = viewAddress;
            MemorySegment view = MemorySegment.ofAddress(viewAddress).reinterpret(span, arena, ignored -> Libc.unmap(unmapAt, span));
            MemorySegment mine = MemorySegment.ofAddress(a).reinterpret(bytes);
            MemorySegment.copy(mine, 0, view, a - first, bytes);
            // from here the caller's whole pages are the file's: same addresses, same bytes
            Libc.map(fd, shared0 - first, shared1 - shared0, shared0);
            Adopted x = new Adopted(scope, a, end, file, viewAddress, view);
            x.arena = arena;
            adopted[count++] = x;
            adoptedBytes += span;
            LOG.debug("adopted the buffer at 0x{} ({} bytes) as {} in {} µs", Long.toHexString(a), bytes, file.getFileName(),
                    (System.nanoTime() - start) / 1000);
            return x;
        } catch (IOException | RuntimeException e) {
            off = true;
            if (viewAddress != 0) Libc.unmap(viewAddress, span);
            deleteQuietly(file);
            LOG.info("memory pool: cannot move a buffer of {} bytes into shared memory in {} ({}); large collectives on "
                    + "unregistered memory copy it instead (HCOMM_MEM_ADOPT)", bytes, dir, e.getMessage());
            return null;
        } finally {
            if (fd >= 0) Libc.close(fd);
        }
    }

    private void drop(int i) {
        Adopted x = adopted[i];
        System.arraycopy(adopted, i + 1, adopted, i, count - i - 1);
        adopted[--count] = null;
        adoptedBytes -= x.span;
        deleteQuietly(x.file);
        try {
            x.arena.close();
        } catch (IllegalStateException e) {
            LOG.debug("cannot unmap the view of {}: {}", x.file.getFileName(), e.toString());
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.warn("memory pool: cannot remove {}: {}", file, e.toString());
        }
    }

    private static long maxMapCount() {
        try {
            // readAllLines: readString stops after a byte on this procfs file (its size reads as 0)
            return Long.parseLong(Files.readAllLines(Path.of("/proc/sys/vm/max_map_count")).get(0).trim());
        } catch (IOException | RuntimeException e) {
            return 65_530; // the kernel's default
        }
    }

    /**
     * True for a file of this process's that was unlinked while still mapped: the pages of a buffer adopted and dropped
     * since (or of a pool closed with buffers open), which the caller's allocator may have handed out again. Nothing
     * relies on them being shared any more, so they may move again. A file still linked may be another pool's live
     * adoption of the same buffer, and moving its pages would cut that pool's peers off: never.
     */
    private static boolean formerlyAdopted(String path) {
        String deleted = " (deleted)";
        if (!path.endsWith(deleted)) return false;
        String name = path.substring(path.lastIndexOf('/') + 1, path.length() - deleted.length());
        return name.startsWith(SharedFiles.ownPrefix());
    }

    /**
     * Null if every page of {@code [from, to)} lies in private anonymous memory (malloc's, an arena's), else why not:
     * a file mapping or shared memory must never be remapped under its owner (pages of this process's unlinked files
     * excepted, {@link #formerlyAdopted}).
     */
    static String privateAnonymous(long from, long to) {
        if (to <= from) return "no whole page";
        List<String> lines;
        try {
            lines = Files.readAllLines(Path.of("/proc/self/maps"));
        } catch (IOException e) {
            return "cannot read /proc/self/maps: " + e.getMessage();
        }
        // a MAP_FIXED that fails on an older kernel may leave the range unmapped: never near the mapping limit
        if (lines.size() + 8 > maxMapCount()) return lines.size() + " mappings, near vm.max_map_count";
        long covered = from;
        for (String line : lines) {
            int dash = line.indexOf('-');
            int sp = line.indexOf(' ');
            if (dash < 0 || sp < dash) continue;
            long lo = Long.parseUnsignedLong(line, 0, dash, 16);
            long hi = Long.parseUnsignedLong(line, dash + 1, sp, 16);
            if (hi <= covered || lo >= to) continue;
            if (lo > covered) return "a gap in the mappings at 0x" + Long.toHexString(covered);
            String[] f = line.trim().split("\\s+", 6);
            String path = f.length > 5 ? f[5] : "";
            boolean anonymous = f[1].equals("rw-p") && f[4].equals("0") && (path.isEmpty() || path.equals("[heap]") || path.startsWith("[anon:"));
            if (!anonymous && !(f[1].equals("rw-s") && formerlyAdopted(path))) {
                return "mapping " + line.trim() + " is not private anonymous memory";
            }
            covered = hi;
            if (covered >= to) return null;
        }
        return "not mapped";
    }
}
