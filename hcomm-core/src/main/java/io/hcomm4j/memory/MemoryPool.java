package io.hcomm4j.memory;

import io.hcomm4j.DataType;
import io.hcomm4j.HcommException;
import io.hcomm4j.Memory;
import io.hcomm4j.MemoryLimitException;
import io.hcomm4j.MemoryStats;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registered, shareable off-heap memory: {@link Buffer}s whose bytes lie in shared-memory files (in {@code /dev/shm}
 * by default) that other processes on the host can map, which is what lets same-host transports move data without
 * copies. One pool per {@link io.hcomm4j.Hcomm} session, shared by all its communicators ({@code comm.memory()}),
 * closed with the session.
 *
 * <pre>{@code
 * try (Buffer buf = comm.memory().allocate(DataType.FLOAT32, n)) {
 *     MemorySegment grads = buf.segment();
 *     ...                                  // fill it
 *     comm.allReduce(grads, grads, n, DataType.FLOAT32, ReduceOp.SUM);
 * }                                        // back to the pool, ready for the next allocate without a new mapping
 * }</pre>
 *
 * <p><b>Size classes.</b> A request is rounded up to its class: 4 KiB, then powers of two up to 256 KiB (carved out
 * of shared 2 MiB mappings), then four classes per power of two, each buffer its own mapping. A closed buffer goes to
 * its class's free list and is handed out again (most recently freed first) without a new mapping. New mappings are
 * pre-faulted (every page allocated and touched) when they are created, so no page fault is left for the first use.
 *
 * <p><b>Limit.</b> The pool maps at most {@link Options#maxBytes()} ({@code HCOMM_MEM_POOL_MAX}, default 4 GiB).
 * An allocation that needs a new mapping past it first unmaps free cached mappings of other classes; if that is not
 * enough it throws {@link MemoryLimitException} naming the request, the bytes in use and the limit.
 *
 * <p><b>Leaks.</b> A buffer that becomes unreachable without {@link Buffer#close()} is logged (WARN) and counted in
 * {@link MemoryStats#leaks()}, and its memory is reclaimed. By default that happens once neither the buffer nor its
 * segment (nor a slice of it) is reachable, so reclaiming is safe. With {@code HCOMM_MEM_DEBUG=1} the report names
 * the allocating thread and stack, a closed buffer's segment throws on use, and a leak is reported as soon as the
 * {@code Buffer} object is unreachable (its segment is invalidated, then reclaimed).
 *
 * <p><b>Files.</b> Every file is unlinked when the pool closes; files left by a killed process are removed when the
 * next pool opens in the same directory (see {@link #open}). Mappings whose buffers are all closed are unmapped at
 * close; a mapping with a buffer still open stays mapped until that buffer is closed or unreachable, so a buffer
 * may outlive its session without a crash.
 *
 * <p>Thread-safe. Allocating from a free list and closing take one lock per size class and allocate only the buffer,
 * its lease and its segment view (plus, by default, the automatic scope that tracks the view's reachability).
 */
public final class MemoryPool implements Memory, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MemoryPool.class);

    /**
     * How a pool is set up. {@code Hcomm.init} takes them from {@code HCOMM_SHM_DIR}, {@code HCOMM_MEM_POOL_MAX} and
     * {@code HCOMM_MEM_DEBUG}.
     *
     * @param directory where the shared-memory files go, e.g. {@code /dev/shm}
     * @param maxBytes  most bytes the pool maps, in [4096, 2^50]
     * @param debug     record allocation sites and invalidate the segments of closed buffers
     * @param adopt     move the caller's reused large off-heap buffers into shared memory in place
     *                  ({@link #adopted}, {@code HCOMM_MEM_ADOPT})
     */
    public record Options(Path directory, long maxBytes, boolean debug, boolean adopt) {
        /** Checks the arguments. */
        public Options {
            Objects.requireNonNull(directory, "directory");
            if (maxBytes < SizeClasses.PAGE || maxBytes > SizeClasses.MAX) {
                throw new IllegalArgumentException("maxBytes must be in [4096, 2^50], was " + maxBytes);
            }
        }

        /** Options that adopt nothing. */
        public Options(Path directory, long maxBytes, boolean debug) {
            this(directory, maxBytes, debug, false);
        }
    }

    /** Free slots of one size class: a stack (most recently freed on top). Guarded by its own monitor. */
    private static final class SizeClass {
        final int index;
        final long size;
        Slot[] free = new Slot[16];
        int top;

        SizeClass(int index) {
            this.index = index;
            this.size = SizeClasses.size(index);
        }

        void push(Slot s) {
            if (top == free.length) free = Arrays.copyOf(free, top * 2);
            free[top++] = s;
        }

        Slot pop() {
            Slot s = free[--top];
            free[top] = null;
            return s;
        }

        /** Drops the free slots of mappings chosen by a trim. */
        void removeVictims() {
            int j = 0;
            for (int i = 0; i < top; i++) {
                if (!free[i].mapping.victim) free[j++] = free[i];
            }
            Arrays.fill(free, j, top, null);
            top = j;
        }

        void clear() {
            Arrays.fill(free, 0, top, null);
            top = 0;
        }
    }

    private final Options options;
    private final SizeClass[] classes = new SizeClass[SizeClasses.COUNT];
    /** Under {@link #lock}. */
    private MappingListener listener;
    /** Guards creating, trimming, unmapping and closing; taken before a size class's lock, never after. */
    private final Object lock = new Object();
    /** Mapped files by address, for {@link #lookup}; replaced (never changed) under {@link #lock}. */
    private volatile Mapping[] mappings = new Mapping[0];
    private volatile long mappedBytes;
    private volatile boolean closed;
    private final AtomicLong inUse = new AtomicLong();
    private final AtomicLong buffersInUse = new AtomicLong();
    private final AtomicLong highWater = new AtomicLong();
    private final AtomicLong allocations = new AtomicLong();
    private final AtomicLong reuses = new AtomicLong();
    private final AtomicLong leaks = new AtomicLong();
    /** Tests: sees every leak report. */
    volatile Consumer<String> leakListener;

    /** Smallest buffer {@link #adopted} takes. */
    public static final long ADOPT_MIN_BYTES = Adoptions.MIN_BYTES;

    /** The caller's buffers moved into shared memory, or null if {@link Options#adopt()} is off. */
    private final Adoptions adoptions;

    private MemoryPool(Options options) {
        this.options = options;
        this.adoptions = options.adopt() ? new Adoptions(options.directory()) : null;
        for (int i = 0; i < classes.length; i++) classes[i] = new SizeClass(i);
    }

    /**
     * Opens a pool. First removes the pool files in the directory whose owner process is dead (a job that was
     * killed before it could unlink them); files of live processes are kept. Maps nothing yet.
     */
    public static MemoryPool open(Options options) {
        Objects.requireNonNull(options, "options");
        ShmFiles.removeStale(options.directory());
        MemoryPool pool = new MemoryPool(options);
        LOG.debug("memory pool in {}, limit {} bytes{}", options.directory(), options.maxBytes(), options.debug() ? ", debug" : "");
        return pool;
    }

    /** The settings of this pool. */
    public Options options() {
        return options;
    }

    /**
     * A buffer of exactly {@code bytes} bytes (page-aligned), reusing a closed buffer's memory of the same size class
     * if there is one, else mapping more (pre-faulted) shared memory.
     *
     * @throws IllegalArgumentException if {@code bytes <= 0}
     * @throws MemoryLimitException     if the pool would map more than its limit
     * @throws IllegalStateException    if the pool is closed
     * @throws HcommException           if the shared-memory file cannot be created (e.g. the file system is full)
     */
    public Buffer allocate(long bytes) {
        if (bytes <= 0) throw new IllegalArgumentException("bytes must be > 0, was " + bytes);
        if (closed) throw closedError();
        if (bytes > options.maxBytes()) {
            long used = inUse.get();
            throw new MemoryLimitException("memory pool: a request of " + bytes + " bytes is more than the limit of "
                    + options.maxBytes() + " bytes (HCOMM_MEM_POOL_MAX); " + used + " bytes are in use", bytes, used, options.maxBytes());
        }
        SizeClass sc = classes[SizeClasses.index(bytes)];
        Slot slot = take(sc);
        if (slot == null) slot = grow(sc, bytes);
        return lease(slot, bytes, sc.size);
    }

    /**
     * A buffer of {@code count} elements of {@code type}: {@code allocate(count * type.byteSize())}.
     *
     * @throws IllegalArgumentException if {@code count <= 0} or the size overflows
     */
    public Buffer allocate(DataType type, long count) {
        Objects.requireNonNull(type, "type");
        if (count <= 0) throw new IllegalArgumentException("count must be > 0, was " + count);
        long bytes;
        try {
            bytes = Math.multiplyExact(count, (long) type.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("count " + count + " of " + type + " is more than 2^63 bytes");
        }
        return allocate(bytes);
    }

    /** A new arena that allocates from this pool (see {@link Memory#arena()}). */
    @Override
    public Arena arena() {
        if (closed) throw closedError();
        return new PoolArena(this);
    }

    /** The pool's accounting now. */
    @Override
    public MemoryStats stats() {
        return new MemoryStats(inUse.get(), buffersInUse.get(), highWater.get(), mappedBytes, mappings.length, allocations.get(),
                reuses.get(), leaks.get(), options.maxBytes(), adoptions == null ? 0 : adoptions.adoptedBuffers(),
                adoptions == null ? 0 : adoptions.adoptedBytes());
    }

    /**
     * Where {@code segment} lies if it is inside this pool's memory (a buffer's segment or a slice of it): the file,
     * the offset in it and the length, for a peer to {@link Registration#map map}. Empty for any other segment and
     * once the pool is closed. Does not allocate unless it finds one.
     *
     * <p><b>Internal:</b> for same-host transports; applications need not call it.
     */
    public Optional<Registration> lookup(MemorySegment segment) {
        if (!segment.isNative() || closed) return Optional.empty();
        long address = segment.address();
        long length = segment.byteSize();
        Mapping m = mappingHolding(address, length);
        return m == null ? Optional.empty() : Optional.of(new Registration(m.file, address - m.address, length));
    }

    /**
     * Allocation-free form of {@link #lookup} for the first {@code length} bytes of {@code segment}: if they lie in this
     * pool's memory, stores the sequence number of their file (the part of its name after the owner's prefix, see
     * {@link SharedFiles#sequence}) in {@code out[0]} and their offset in the file in {@code out[1]}, and returns true;
     * else returns false and leaves {@code out} alone.
     *
     * <p><b>Internal:</b> for same-host collectives, which publish where a buffer lies on every op; applications need
     * not call it.
     *
     * @throws IllegalArgumentException if {@code length} is negative or more than the segment's size
     */
    public boolean locate(MemorySegment segment, long length, long[] out) {
        if (length < 0 || length > segment.byteSize()) {
            throw new IllegalArgumentException("length " + length + " is not within the segment's " + segment.byteSize() + " bytes");
        }
        if (!segment.isNative() || closed) return false;
        long address = segment.address();
        Mapping m = mappingHolding(address, length);
        if (m == null) return adoptions != null && adoptions.locate(address, length, out);
        if (m.sequence < 0) return false;
        out[0] = m.sequence;
        out[1] = address - m.address;
        return true;
    }

    /**
     * The first {@code bytes} of {@code segment}, a caller's buffer outside the pool, as registered memory that peers can
     * map ({@link #locate} finds it), or null if it is not adopted. A buffer is adopted at its second call (a native
     * segment of a closable arena, at least 256 KiB, in private anonymous memory; with {@link Options#adopt()} on): its
     * whole pages move, in place and with their contents, into a shared-memory file; the returned view maps the whole
     * file elsewhere, so its partial end pages (which stay private) must be copied with {@link #syncAdopted} before
     * and after each use. The caller's segment stays valid throughout and after the pool closes.
     *
     * <p><b>Internal:</b> for same-host collectives; applications need not call it.
     */
    public MemorySegment adopted(MemorySegment segment, long bytes) {
        return adopted(segment, 0, bytes);
    }

    /** As {@link #adopted(MemorySegment, long)}, for {@code bytes} of {@code segment} from {@code offset}. */
    public MemorySegment adopted(MemorySegment segment, long offset, long bytes) {
        return adoptions == null || closed ? null : adoptions.view(segment, offset, bytes);
    }

    /**
     * Copies the bytes of the first {@code bytes} of {@code user} that its view from {@link #adopted} does not share
     * (at most a page at either end) into the view ({@code toView}) or back into {@code user}.
     *
     * <p><b>Internal:</b> for same-host collectives.
     */
    public void syncAdopted(MemorySegment user, MemorySegment view, long bytes, boolean toView) {
        adoptions.syncEnds(user, 0, view, bytes, toView);
    }

    /** As {@link #syncAdopted(MemorySegment, MemorySegment, long, boolean)}, for {@code user}'s bytes from {@code userOff}. */
    public void syncAdopted(MemorySegment user, long userOff, MemorySegment view, long bytes, boolean toView) {
        adoptions.syncEnds(user, userOff, view, bytes, toView);
    }

    /** The mapping that holds {@code [address, address + length)}, or null (binary search of the sorted mappings). */
    private Mapping mappingHolding(long address, long length) {
        Mapping[] ms = mappings;
        int lo = 0;
        int hi = ms.length - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (ms[mid].address <= address) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found >= 0 && ms[found].contains(address, length) ? ms[found] : null;
    }

    /**
     * Told of every mapping of the pool, from when it is mapped until just before it is unmapped: a transport that
     * registers memory with its NIC ahead of use (UCX's {@code ucp_mem_map}). Calls come under the pool's lock.
     */
    public interface MappingListener {
        void mapped(MemorySegment mapping);

        void unmapping(MemorySegment mapping);
    }

    /** Sets the one {@link MappingListener} (null: none) and tells it of every mapping there is now. */
    public void setMappingListener(MappingListener l) {
        synchronized (lock) {
            listener = l;
            if (l != null) for (Mapping m : mappings) if (!m.unmapped) l.mapped(m.base);
        }
    }

    /** True once {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    /**
     * Unlinks every file, removes the files of dead processes in the directory (as {@link #open} does), and unmaps
     * every mapping that holds no open buffer; a mapping with open buffers is unmapped
     * when the last of them is closed or becomes unreachable (logged at WARN). Later allocations throw
     * {@link IllegalStateException}. Idempotent.
     */
    @Override
    public void close() {
        int kept = 0;
        synchronized (lock) {
            if (closed) return;
            closed = true;
            for (Mapping m : mappings) {
                deleteFile(m);
                SizeClass sc = classes[m.sizeClass];
                boolean idle;
                synchronized (sc) {
                    idle = m.open == 0;
                    sc.clear();
                }
                if (idle) unmap(m);
                else kept++;
            }
        }
        if (adoptions != null) adoptions.close();
        // files of processes that died while this one ran (a killed peer rank) go now, not only at the next init
        ShmFiles.removeStale(options.directory());
        if (kept > 0) {
            LOG.warn("memory pool closed with {} buffers ({} bytes) still open: {} mappings stay mapped until those buffers "
                    + "are closed or unreachable (their files are unlinked)", buffersInUse.get(), inUse.get(), kept);
        }
        LOG.debug("memory pool closed: {}", stats());
    }

    @Override
    public String toString() {
        return "MemoryPool{" + options.directory() + ", " + stats() + "}";
    }

    // ------------------------------------------------------------------------------------------ internals

    /** A free slot of {@code sc}, leased (counted open), or null if there is none. */
    private Slot take(SizeClass sc) {
        synchronized (sc) {
            if (closed) throw closedError();
            if (sc.top == 0) return null;
            Slot s = sc.pop();
            s.mapping.open++;
            s.leases++;
            return s;
        }
    }

    private Buffer lease(Slot slot, long bytes, long classSize) {
        long now = inUse.addAndGet(classSize);
        long hw;
        while ((hw = highWater.get()) < now && !highWater.compareAndSet(hw, now)) {
            Thread.onSpinWait();
        }
        buffersInUse.incrementAndGet();
        allocations.incrementAndGet();
        if (slot.leases > 1) reuses.incrementAndGet();
        if (!options.debug()) {
            Lease l = new Lease(this, slot, bytes, null, null);
            // the view's own automatic scope: when nothing reaches it any more, the lease's cleanup runs
            return new Buffer(l, slot.segment.reinterpret(bytes, Arena.ofAuto(), l), null);
        }
        Arena arena = Arena.ofShared();
        Lease l = new Lease(this, slot, bytes, new Lease.AllocationSite(), arena);
        // a tracker only the buffer holds: its cleanup (the JDK's cleaner) runs once the buffer is unreachable
        Arena tracker = Arena.ofAuto();
        MemorySegment.NULL.reinterpret(0, tracker, l);
        return new Buffer(l, slot.segment.reinterpret(bytes, arena, null), tracker);
    }

    /** A slot of {@code sc} from a new mapping (or one freed meanwhile), leased. */
    private Slot grow(SizeClass sc, long requested) {
        synchronized (lock) {
            Slot s = take(sc);
            if (s != null) return s;
            boolean small = SizeClasses.small(sc.index);
            long want = small ? SizeClasses.CHUNK : sc.size;
            long max = options.maxBytes();
            if (mappedBytes + want > max) trim(mappedBytes + want - max);
            if (mappedBytes + want > max) {
                long room = max - mappedBytes;
                if (small && room >= sc.size) want = room / sc.size * sc.size; // a smaller chunk still fits
                else throw limitReached(requested, sc.size);
            }
            Mapping m = map(sc, want);
            int n = (int) (want / sc.size);
            Slot[] slots = new Slot[n];
            for (int i = 0; i < n; i++) slots[i] = new Slot(m, i * sc.size, sc.size);
            synchronized (sc) {
                for (int i = n - 1; i >= 1; i--) sc.push(slots[i]); // lowest addresses handed out first
                m.open = 1;
                slots[0].leases = 1;
            }
            return slots[0];
        }
    }

    /** Creates, pre-faults and maps a new file of {@code size} bytes for class {@code sc}. Under {@link #lock}. */
    private Mapping map(SizeClass sc, long size) {
        Path file = options.directory().resolve(ShmFiles.newName());
        Arena arena = Arena.ofShared();
        long start = System.nanoTime();
        MemorySegment base;
        try {
            base = ShmFiles.create(file, size, arena);
        } catch (IOException e) {
            arena.close();
            throw new HcommException("memory pool: cannot create a shared-memory file of " + size + " bytes in "
                    + options.directory() + " (HCOMM_SHM_DIR): " + e, e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
        Mapping m = new Mapping(file, size, sc.index, arena, base);
        Mapping[] ms = Arrays.copyOf(mappings, mappings.length + 1);
        int i = ms.length - 1;
        while (i > 0 && ms[i - 1].address > m.address) {
            ms[i] = ms[i - 1];
            i--;
        }
        ms[i] = m;
        mappings = ms;
        mappedBytes += size;
        if (listener != null) listener.mapped(base);
        LOG.debug("memory pool: mapped {} for {}-byte buffers, pre-faulted in {} µs", m, sc.size, (System.nanoTime() - start) / 1000);
        return m;
    }

    /**
     * Unmaps mappings none of whose buffers is leased, largest classes first, until {@code need} bytes are free or
     * none is left. Under {@link #lock}.
     */
    private void trim(long need) {
        Mapping[] all = mappings;
        long found = 0;
        for (int c = classes.length - 1; c >= 0 && found < need; c--) {
            SizeClass sc = classes[c];
            synchronized (sc) {
                boolean any = false;
                for (Mapping m : all) {
                    if (found >= need) break;
                    if (m.sizeClass == c && m.open == 0) {
                        m.victim = true;
                        found += m.size;
                        any = true;
                    }
                }
                if (any) sc.removeVictims();
            }
        }
        for (Mapping m : all) {
            if (m.victim) {
                deleteFile(m);
                unmap(m);
            }
        }
        if (found > 0) LOG.debug("memory pool: unmapped {} bytes of free buffers to stay within the limit", found);
    }

    /** Under {@link #lock}. */
    private void unmap(Mapping m) {
        if (m.unmapped) return;
        m.unmapped = true;
        if (listener != null) listener.unmapping(m.base);
        try {
            m.arena.close();
        } catch (IllegalStateException e) {
            LOG.warn("memory pool: cannot unmap {}: {}", m, e.toString());
        }
        Mapping[] ms = mappings;
        Mapping[] rest = new Mapping[ms.length - 1];
        int j = 0;
        for (Mapping x : ms) if (x != m) rest[j++] = x;
        mappings = rest;
        mappedBytes -= m.size;
    }

    private void deleteFile(Mapping m) {
        try {
            Files.deleteIfExists(m.file);
        } catch (IOException e) {
            LOG.warn("memory pool: cannot remove {}: {}", m.file, e.toString());
        }
    }

    /** A lease ended (closed, or leaked and reclaimed): its slot goes back to its free list. */
    void release(Lease l) {
        Slot s = l.slot;
        Mapping m = s.mapping;
        SizeClass sc = classes[m.sizeClass];
        inUse.addAndGet(-sc.size); // before the slot can be taken again, so the high-water mark never counts it twice
        buffersInUse.decrementAndGet();
        boolean lastAfterClose;
        synchronized (sc) {
            m.open--;
            if (!closed) sc.push(s);
            lastAfterClose = closed && m.open == 0;
        }
        if (lastAfterClose) {
            synchronized (lock) {
                unmap(m);
            }
        }
    }

    /** A lease's buffer became unreachable without close. */
    void leaked(Lease l, boolean reclaimed) {
        if (reclaimed) release(l);
        leaks.incrementAndGet();
        String report = leakReport(l, reclaimed);
        LOG.warn(report);
        Consumer<String> listener = leakListener;
        if (listener != null) {
            try {
                listener.accept(report);
            } catch (RuntimeException e) {
                LOG.debug("leak listener failed", e);
            }
        }
    }

    private String leakReport(Lease l, boolean reclaimed) {
        StringBuilder sb = new StringBuilder("memory pool: a buffer of ").append(l.bytes).append(" bytes (")
                .append(l.slot.mapping.file.getFileName()).append(" at offset ").append(l.slot.offset)
                .append(") became unreachable without close()");
        if (l.site == null) {
            sb.append("; its memory went back to the pool. HCOMM_MEM_DEBUG=1 records where buffers are allocated.");
            return sb.toString();
        }
        sb.append(reclaimed ? "; its segment was invalidated and its memory went back to the pool"
                : "; an operation still uses its segment, so its memory stays out of the pool");
        sb.append(". It was ").append(l.site.getMessage()).append(" at:");
        boolean inPool = true;
        for (StackTraceElement e : l.site.getStackTrace()) {
            if (inPool && (ownFrame(e, MemoryPool.class) || ownFrame(e, Lease.class))) continue; // the pool's own frames
            inPool = false;
            sb.append("\n\tat ").append(e);
        }
        return sb.toString();
    }

    private static boolean ownFrame(StackTraceElement e, Class<?> c) {
        return e.getClassName().equals(c.getName()) || e.getClassName().startsWith(c.getName() + "$");
    }

    private static IllegalStateException closedError() {
        return new IllegalStateException("the memory pool is closed (its Hcomm session was closed)");
    }

    private MemoryLimitException limitReached(long requested, long classSize) {
        long used = inUse.get();
        long limit = options.maxBytes();
        return new MemoryLimitException("memory pool limit reached: a request of " + requested + " bytes (size class "
                + classSize + ") needs more shared memory, but " + used + " bytes are in use in "
                + buffersInUse.get() + " buffers and " + mappedBytes + " bytes are mapped, of a limit of " + limit
                + " bytes (HCOMM_MEM_POOL_MAX)", requested, used, limit);
    }
}
