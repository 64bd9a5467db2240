package io.hcomm4j.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One direction of a same-host pair's short road for small eager messages: a ring of fixed 64-byte slots, one message
 * per slot, beside the byte ring ({@link ShmRing}) in the pair's shared mapping.
 *
 * <pre>
 * control (128 bytes: a line and its prefetch twin)
 *    0  i64 freed     slots ever released by the consumer; it publishes the count with a release store
 * slot i of SLOTS at 128 + 64 i, one cache line each
 *    0  i64 stamp     the frame seq of the message in the slot; the producer stores it last, with release
 *    8  i64 commId
 *   16  i32 tag
 *   20  i32 flags
 *   24  i32 length    payload bytes, at most PAYLOAD_MAX
 *   32  payload
 * </pre>
 *
 * Why: through the byte ring a receiver pays two cache-line transfers in a row (the ring's tail, then the frame it
 * announces) and copies the frame into its link buffer before it parses it. Here it polls the slot it expects next: the
 * stamp is on the same line as the message, so one transfer brings both, and the payload is copied once, straight to
 * the receive. Stamps are the link's frame seqs, shared with the byte ring: the reader takes a slot only when its stamp
 * is the next seq it expects, so the two roads together keep the frames' order. A slot of an earlier lap holds an older
 * (smaller) stamp, and every stamp sits at a slot's start, so payload bytes are never mistaken for a stamp.
 *
 * <p>Single producer (under the link's tx lock), single consumer (the progress token). The producer re-reads
 * {@code freed} only when its cached copy says every slot is taken; then the message goes by the byte ring instead.
 */
final class ShmSlots {
    /** Slots per direction (a power of two). */
    static final int SLOTS = 64;
    static final int SLOT = 64;
    /** The largest payload a slot carries. */
    static final int PAYLOAD_MAX = 32;
    private static final long CONTROL = 128;
    private static final long FREED = 0;
    private static final long STAMP = 0;
    private static final long COMM_ID = 8;
    private static final long TAG = 16;
    private static final long FLAGS = 20;
    private static final long LENGTH = 24;
    private static final long PAYLOAD = 32;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment region;
    // producer side
    private long written;
    private long freedSeen;
    /** Why the consumer's count cannot be believed (it went backwards or beyond what was written), or null. */
    private String corrupt;
    // consumer side
    private long read;
    /** The stamp of the slot last released: a newer one in the next slot is a new message. */
    private long lastStamp;

    /** Slots over {@code region} ({@link #regionBytes} bytes, zeroed when the pair's file was made). */
    ShmSlots(MemorySegment region) {
        if (region.byteSize() < regionBytes()) {
            throw new IllegalArgumentException("slots need " + regionBytes() + " bytes, the region has " + region.byteSize());
        }
        this.region = region;
        this.read = (long) LONG.getAcquire(region, FREED);
        this.written = read;
        this.freedSeen = read;
    }

    /** Bytes of one direction's region. */
    static long regionBytes() {
        return CONTROL + (long) SLOTS * SLOT;
    }

    private static long slot(long n) {
        return CONTROL + (n & (SLOTS - 1)) * SLOT;
    }

    // ------------------------------------------------------------------------------------------ producer

    /**
     * True if a slot is free (reads the consumer's count only when the cached one says none is). A count the peer could
     * not have published (backwards, or beyond the slots written) is not believed: no slot is free from then on, and
     * {@link #corrupt} says why.
     */
    boolean hasRoom() {
        if (written - freedSeen < SLOTS) return true;
        if (corrupt != null) return false;
        long f = (long) LONG.getAcquire(region, FREED);
        if (f < freedSeen || f > written) {
            corrupt = "the count of slots freed went from " + freedSeen + " to " + f + " with " + written + " written";
            return false;
        }
        freedSeen = f;
        return written - freedSeen < SLOTS;
    }

    /** Why the consumer's count of freed slots cannot be believed, or null. */
    String corrupt() {
        return corrupt;
    }

    /**
     * Puts a message in the next slot and publishes it (after {@link #hasRoom} said true); {@code payload} has at most
     * {@link #PAYLOAD_MAX} bytes.
     */
    void put(long seq, long commId, int tag, int flags, MemorySegment payload) {
        long at = slot(written);
        int length = (int) payload.byteSize();
        region.set(ValueLayout.JAVA_LONG, at + COMM_ID, commId);
        region.set(ValueLayout.JAVA_INT, at + TAG, tag);
        region.set(ValueLayout.JAVA_INT, at + FLAGS, flags);
        region.set(ValueLayout.JAVA_INT, at + LENGTH, length);
        if (length > 0) MemorySegment.copy(payload, 0, region, at + PAYLOAD, length);
        LONG.setRelease(region, at + STAMP, seq); // last: a reader that sees the stamp sees the message
        written++;
    }

    // ------------------------------------------------------------------------------------------ consumer

    /** The stamp (frame seq) of the next slot if it holds a message not read yet, else 0. */
    long peek() {
        long s = (long) LONG.getAcquire(region, slot(read) + STAMP);
        return s > lastStamp ? s : 0;
    }

    /** Fields of the next slot's message (after {@link #peek} found one). */
    long commId() {
        return region.get(ValueLayout.JAVA_LONG, slot(read) + COMM_ID);
    }

    int tag() {
        return region.get(ValueLayout.JAVA_INT, slot(read) + TAG);
    }

    int flags() {
        return region.get(ValueLayout.JAVA_INT, slot(read) + FLAGS);
    }

    int length() {
        return region.get(ValueLayout.JAVA_INT, slot(read) + LENGTH);
    }

    /** Copies the next slot's {@code length} payload bytes to {@code dst} at {@code offset}. */
    void copyPayload(MemorySegment dst, long offset, int length) {
        MemorySegment.copy(region, slot(read) + PAYLOAD, dst, offset, length);
    }

    /** The next slot was read (its stamp was {@code stamp}): it is the producer's again. */
    void release(long stamp) {
        lastStamp = stamp;
        LONG.setRelease(region, FREED, ++read);
    }
}
