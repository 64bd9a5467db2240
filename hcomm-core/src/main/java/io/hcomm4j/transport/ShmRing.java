package io.hcomm4j.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * One direction of a same-host pipe: a single-producer/single-consumer byte ring in a shared mapping.
 *
 * <pre>
 * control block (4 KiB), each field on its own 128-byte line (two cache lines: the adjacent-line prefetcher)
 *    0  i64 tail            bytes ever written; the producer publishes it with a release store
 *  128  i64 head            bytes ever read; the consumer publishes it with a release store
 *  256  i32 readerSleeping  1: the consumer is about to block; the producer that sees it clears it and rings
 *  384  i32 writerWaiting   1: the producer waits for room; the consumer that sees it clears it and rings
 * data (capacity bytes, a power of two), byte i of the stream at data[i &amp; (capacity - 1)]
 * </pre>
 *
 * The producer copies, then publishes {@code tail} (setRelease); the consumer reads {@code tail} with getAcquire, so it
 * sees the bytes before the index, and frees room the same way with {@code head}. Each side caches the other's index
 * and reads it again only when the cached value says "empty" or "full". The sleeping flags form a Dekker pair with the
 * indices (a full fence between one's own store and the other's load on both sides), so a wake-up is never lost:
 * either the sleeper sees the new index when it re-checks after setting its flag, or the other side sees the flag.
 * Only the producer's thread calls the producer methods and only the consumer's the consumer methods (each under its
 * own lock: the link's tx lock, the progress token).
 *
 * <p><b>The other side's index is not trusted.</b> It lives in a mapping the peer process can write anything into, so
 * each load of it is checked before it decides a copy: the producer's view of {@code head} never goes backwards nor
 * beyond its own {@code tail}, the consumer's view of {@code tail} never goes backwards nor more than {@code capacity}
 * ahead of its {@code head}. A violation marks the ring corrupt: the readiness checks say "ready" so the link's own
 * thread comes to {@link #read} or {@link #write}, which throw {@link CorruptIndexException}; the copies themselves
 * only ever see checked values (never an index beyond the data area, never a negative length).
 */
final class ShmRing {
    /** Bytes of the control block before the data. */
    static final long CONTROL = 4096;
    private static final long TAIL = 0;
    private static final long HEAD = 128;
    private static final long READER_SLEEPING = 256;
    private static final long WRITER_WAITING = 384;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private final MemorySegment ctrl;
    /** The data area as a buffer: absolute bulk puts copy without allocating. */
    private final ByteBuffer data;
    private final int capacity;
    private final int mask;
    // producer side
    private long tail;
    private long headSeen;
    // consumer side
    private long head;
    private long tailSeen;
    /** Why the peer's index cannot be believed (set once, by the side that loaded it), or null. */
    private String corrupt;

    /** The peer wrote an index no correct peer writes: the link over this ring must fail. */
    static final class CorruptIndexException extends java.io.IOException {
        private static final long serialVersionUID = 1L;

        CorruptIndexException(String message) {
            super(message);
        }
    }

    /**
     * A ring over {@code region}: the control block, then {@code capacity} bytes of data.
     *
     * @throws CorruptIndexException if the indices found there are not those of a ring ({@code tail - head} outside
     *                               {@code [0, capacity]})
     */
    ShmRing(MemorySegment region, int capacity) throws CorruptIndexException {
        if (Integer.bitCount(capacity) != 1 || region.byteSize() < CONTROL + capacity) {
            throw new IllegalArgumentException("ring of " + capacity + " bytes in a region of " + region.byteSize());
        }
        this.ctrl = region.asSlice(0, CONTROL);
        this.data = region.asSlice(CONTROL, capacity).asByteBuffer();
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.tail = (long) LONG.getAcquire(ctrl, TAIL);
        this.headSeen = (long) LONG.getAcquire(ctrl, HEAD);
        this.head = headSeen;
        this.tailSeen = tail;
        if (tail - head < 0 || tail - head > capacity) {
            throw new CorruptIndexException("ring indices tail " + tail + ", head " + head + " (capacity " + capacity + ")");
        }
    }

    /** Why this ring's peer-written index cannot be believed, or null. */
    String corrupt() {
        return corrupt;
    }

    private void checkIntact() throws CorruptIndexException {
        if (corrupt != null) throw new CorruptIndexException(corrupt);
    }

    /** The consumer's {@code head} as the peer published it, checked against what this side wrote ({@link #tail}). */
    private long loadHead() {
        long h = (long) LONG.getAcquire(ctrl, HEAD);
        if (h < headSeen || h > tail) {
            if (corrupt == null) {
                corrupt = "the reader's index (head) went from " + headSeen + " to " + h + " with " + tail + " bytes written";
            }
            return headSeen;
        }
        return h;
    }

    /** The producer's {@code tail} as the peer published it, checked against what this side read ({@link #head}). */
    private long loadTail() {
        long t = (long) LONG.getAcquire(ctrl, TAIL);
        if (t < tailSeen || t - head > capacity) {
            if (corrupt == null) {
                corrupt = "the writer's index (tail) went from " + tailSeen + " to " + t + " with " + head
                        + " bytes read from a ring of " + capacity;
            }
            return tailSeen;
        }
        return t;
    }

    /** Bytes a region for a ring of {@code capacity} takes. */
    static long regionBytes(int capacity) {
        return CONTROL + capacity;
    }

    int capacity() {
        return capacity;
    }

    /** The control block (the indices and flags), as the other process sees it: for tests that play a hostile peer. */
    MemorySegment control() {
        return ctrl;
    }

    /** Offsets of the indices in {@link #control}. */
    static final long TAIL_OFFSET = TAIL;
    static final long HEAD_OFFSET = HEAD;

    // ------------------------------------------------------------------------------------------ producer

    /** Room for at least {@code min} bytes (reads the consumer's index only when the cached one says there is not). */
    private long room(long min) {
        long free = capacity - (tail - headSeen);
        if (free < min) {
            headSeen = loadHead();
            free = capacity - (tail - headSeen);
        }
        return free;
    }

    /** True if at least {@code min} bytes (at most the capacity) fit now, or if the ring is corrupt (a write then throws). */
    boolean hasRoom(long min) {
        return room(min) >= Math.min(min, capacity) || corrupt != null;
    }

    /** Copies what fits of {@code srcs[offset..offset+length)} in and publishes it; returns the bytes taken. */
    long write(ByteBuffer[] srcs, int offset, int length) throws CorruptIndexException {
        long want = 0;
        for (int i = offset; i < offset + length; i++) want += srcs[i].remaining();
        long free = room(want);
        checkIntact();
        long t = tail;
        long taken = 0;
        for (int i = offset; i < offset + length && free > 0; i++) {
            int n = put(srcs[i], t, free);
            t += n;
            free -= n;
            taken += n;
        }
        if (taken > 0) publish(t);
        return taken;
    }

    /** Copies what fits of {@code src} in and publishes it; returns the bytes taken. */
    int write(ByteBuffer src) throws CorruptIndexException {
        long free = room(src.remaining());
        checkIntact();
        int n = put(src, tail, free);
        if (n > 0) publish(tail + n);
        return n;
    }

    private int put(ByteBuffer src, long at, long free) {
        int n = (int) Math.min(src.remaining(), free);
        if (n == 0) return 0;
        int idx = (int) (at & mask);
        int first = Math.min(n, capacity - idx);
        int pos = src.position();
        data.put(idx, src, pos, first);
        if (n > first) data.put(0, src, pos + first, n - first);
        src.position(pos + n);
        return n;
    }

    private void publish(long t) {
        tail = t;
        LONG.setRelease(ctrl, TAIL, t);
    }

    /**
     * After a write: true if the consumer was asleep and must be woken (the flag is cleared here, so only one wake-up
     * goes per sleep).
     */
    boolean readerToWake() {
        VarHandle.fullFence(); // orders the tail store before the flag load (the consumer: flag store, fence, tail load)
        return (int) INT.getAcquire(ctrl, READER_SLEEPING) != 0 && INT.compareAndSet(ctrl, READER_SLEEPING, 1, 0);
    }

    /** The producer is about to block for room: set the flag, then check again (true: room came meanwhile). */
    boolean armWriter(long min) {
        INT.setVolatile(ctrl, WRITER_WAITING, 1);
        VarHandle.fullFence();
        return hasRoom(min);
    }

    void disarmWriter() {
        INT.setRelease(ctrl, WRITER_WAITING, 0);
    }

    // ------------------------------------------------------------------------------------------ consumer

    /** True if there are bytes to read, or if the ring is corrupt (a read then throws). */
    boolean readable() {
        if (tailSeen != head) return true;
        tailSeen = loadTail();
        return tailSeen != head || corrupt != null;
    }

    /** Copies up to {@code dst.remaining()} bytes out and frees their room; returns how many (0: empty). */
    int read(ByteBuffer dst) throws CorruptIndexException {
        checkIntact();
        long avail = tailSeen - head;
        if (avail < dst.remaining()) { // the producer may have written more since we last looked
            tailSeen = loadTail();
            checkIntact();
            avail = tailSeen - head;
            if (avail == 0) return 0;
        }
        int n = (int) Math.min(avail, dst.remaining());
        if (n == 0) return 0;
        int idx = (int) (head & mask);
        int first = Math.min(n, capacity - idx);
        int pos = dst.position();
        dst.put(pos, data, idx, first);
        if (n > first) dst.put(pos + first, data, 0, n - first);
        dst.position(pos + n);
        head += n;
        LONG.setRelease(ctrl, HEAD, head);
        return n;
    }

    /** After a read: true if the producer waits for room and must be woken (the flag is cleared here). */
    boolean writerToWake() {
        VarHandle.fullFence(); // orders the head store before the flag load (the producer: flag store, fence, head load)
        return (int) INT.getAcquire(ctrl, WRITER_WAITING) != 0 && INT.compareAndSet(ctrl, WRITER_WAITING, 1, 0);
    }

    /** The consumer is about to block: set the flag, then check again (true: bytes came meanwhile). */
    boolean armReader() {
        INT.setVolatile(ctrl, READER_SLEEPING, 1);
        VarHandle.fullFence();
        return readable();
    }

    void disarmReader() {
        INT.setRelease(ctrl, READER_SLEEPING, 0);
    }
}
