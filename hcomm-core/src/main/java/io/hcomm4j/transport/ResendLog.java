package io.hcomm4j.transport;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The frames one side of a reliable link sent and the peer has not acknowledged yet, in sequence order, so that a
 * re-established connection can carry them again (see {@link PeerLink}). Guarded by the link's {@code txLock}.
 *
 * <p>Two rings, no per-frame objects: a record ring indexed by {@code seq & mask} (where the frame's bytes start, how
 * many, a payload reference, the send to complete once acknowledged), and a byte ring of direct memory holding each
 * frame's 56-byte header and, for an EAGER frame (or an RMA frame of at most {@link Frame#RMA_COPY_MAX}), a copy of its
 * payload (so the sender's buffer is free once the frame is written, as without the log). A DATA payload (or a larger
 * RMA one) is only referenced: its send completes when the peer acknowledges the frame, not when it was written, so the
 * buffer is still the sender's to read for a resend. A record that does not
 * fit before the end of the byte ring starts at its beginning (the rest of the ring is skipped), so every record is
 * contiguous. Both rings double when full (rare: the peer acknowledges at least every 128 frames, every DATA and large
 * RMA frame and every 1 MiB of other payload, and eager bytes in flight are bounded by its eager credit) and shrink
 * back once empty.
 */
final class ResendLog {
    static final int INITIAL_RECORDS = 1024;
    static final int INITIAL_BYTES = 256 * 1024;
    /**
     * The most the log grows to: frames the peer has not acknowledged, and bytes of the ring (a power of two). A peer
     * that reads acknowledges at least every 128 frames and every MiB, so only a peer that stopped reading (or a
     * connection down for long while the ranks keep sending) reaches these; the link then fails with
     * {@link LogFullException} instead of the log taking the heap and the direct memory.
     */
    static final int MAX_RECORDS = 1 << 22;
    static final long MAX_BYTES = 1L << 30;

    /** The log would pass its limit: the link fails with this. */
    static final class LogFullException extends io.hcomm4j.HcommException {
        private static final long serialVersionUID = 1L;

        LogFullException(String message) {
            super(message);
        }
    }

    private final int maxRecords;
    private final long maxBytes;

    private long[] pos = new long[INITIAL_RECORDS];
    private int[] len = new int[INITIAL_RECORDS];
    private MemorySegment[] ref = new MemorySegment[INITIAL_RECORDS];
    private SendRequest[] done = new SendRequest[INITIAL_RECORDS];
    private int mask = INITIAL_RECORDS - 1;
    /** Records kept: seq in [first, next). */
    private long first = 1;
    private long next = 1;

    private ByteBuffer buf = newBuffer(INITIAL_BYTES);
    private MemorySegment seg = MemorySegment.ofBuffer(buf);
    private int cap = INITIAL_BYTES;
    /** Absolute byte positions: live bytes in [head, tail). */
    private long head;
    private long tail;

    ResendLog() {
        this(MAX_RECORDS, MAX_BYTES);
    }

    /** A log of at most {@code maxRecords} frames and a ring of at most {@code maxBytes} (powers of two). */
    ResendLog(int maxRecords, long maxBytes) {
        checkBounds(maxRecords, maxBytes);
        this.maxRecords = maxRecords;
        this.maxBytes = maxBytes;
    }

    /** Bounds a log can have: powers of two, at least its first size, at most 1 GiB of ring. */
    static void checkBounds(int maxRecords, long maxBytes) {
        if (Integer.bitCount(maxRecords) != 1 || maxRecords < INITIAL_RECORDS || Long.bitCount(maxBytes) != 1
                || maxBytes < INITIAL_BYTES || maxBytes > 1L << 30) {
            throw new IllegalArgumentException("resend log limits " + maxRecords + " frames, " + maxBytes + " bytes");
        }
    }

    private static ByteBuffer newBuffer(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The most frames it keeps ({@code HCOMM_RESEND_LOG_FRAMES}). */
    int maxRecords() {
        return maxRecords;
    }

    /** The most bytes its ring grows to ({@code HCOMM_RESEND_LOG_BYTES}). */
    long maxBytes() {
        return maxBytes;
    }

    /** Seq of the oldest frame kept (== {@link #nextSeq()} when none is). */
    long firstSeq() {
        return first;
    }

    /** Seq the next frame will have. */
    long nextSeq() {
        return next;
    }

    /** Frames kept. */
    long frames() {
        return next - first;
    }

    /** Bytes of the byte ring in use (headers and copied eager payloads, with skipped ends). */
    long bytes() {
        return tail - head;
    }

    /**
     * Records frame {@code seq} (the next one). {@code copy}: the payload is copied (EAGER, small RMA); otherwise it is referenced
     * and {@code completes} (if not null) succeeds once the peer acknowledges the frame.
     */
    void append(byte type, int flags, long seq, long ack, long commId, int tag, int src, long length, long msgId,
                MemorySegment payload, boolean copy, SendRequest completes) {
        if (seq != next) throw new IllegalStateException("resend log expects seq " + next + ", got " + seq);
        if (next - first == pos.length) growRecords();
        long copied = copy && payload != null ? payload.byteSize() : 0;
        if (copied > Integer.MAX_VALUE - Frame.HEADER) throw new IllegalArgumentException("copied payload of " + copied + " bytes");
        int need = Frame.HEADER + (int) copied;
        long p = reserve(need);
        int at = (int) (p & (cap - 1));
        Frame.encodeAt(buf, at, type, flags, seq, ack, commId, tag, src, length, msgId);
        if (copied > 0) MemorySegment.copy(payload, 0, seg, at + Frame.HEADER, copied);
        int i = (int) (seq & mask);
        pos[i] = p;
        len[i] = need;
        ref[i] = copy ? null : payload;
        done[i] = copy ? null : completes;
        next = seq + 1;
    }

    /** The copied payload of frame {@code seq} (a view of the ring: valid until the frame is acknowledged). */
    MemorySegment copiedPayload(long seq) {
        int i = (int) (seq & mask);
        return seg.asSlice((pos[i] & (cap - 1)) + Frame.HEADER, len[i] - Frame.HEADER);
    }

    /** Where a record of {@code need} bytes starts; grows the ring if it does not fit. */
    private long reserve(int need) {
        while (true) {
            long start = tail;
            long off = start & (cap - 1);
            if (off + need > cap) start += cap - off; // not across the end: skip to the beginning
            if (need <= cap && start + need - head <= cap) {
                tail = start + need;
                return start;
            }
            growBytes(need);
        }
    }

    private void growRecords() {
        if (pos.length >= maxRecords) {
            throw new LogFullException("the peer has not acknowledged the last " + frames() + " frames (" + io.hcomm4j.Units.bytes(bytes())
                    + " kept for a resend; at most " + maxRecords + " frames): it stopped reading, or the connection has been down"
                    + " while this rank kept sending");
        }
        int n = pos.length * 2;
        long[] p = new long[n];
        int[] l = new int[n];
        MemorySegment[] r = new MemorySegment[n];
        SendRequest[] d = new SendRequest[n];
        int m = n - 1;
        for (long s = first; s < next; s++) {
            int i = (int) (s & mask), j = (int) (s & m);
            p[j] = pos[i];
            l[j] = len[i];
            r[j] = ref[i];
            d[j] = done[i];
        }
        pos = p;
        len = l;
        ref = r;
        done = d;
        mask = m;
    }

    /** A larger byte ring with the live records packed from its start. */
    private void growBytes(int need) {
        long live = 0;
        for (long s = first; s < next; s++) live += len[(int) (s & mask)];
        long n = cap;
        while (n < live + need + (long) need) n *= 2; // room to spare: growing is rare
        if (n > maxBytes) {
            if (live + need > maxBytes) {
                throw new LogFullException("the peer has not acknowledged the last " + frames() + " frames (" + io.hcomm4j.Units.bytes(live)
                        + " kept for a resend, " + io.hcomm4j.Units.bytes(need) + " more would pass the limit of "
                        + io.hcomm4j.Units.bytes(maxBytes) + "): it stopped reading, or the connection has been down while this"
                        + " rank kept sending");
            }
            n = maxBytes;
        }
        relocate((int) n);
    }

    private void relocate(int capacity) {
        ByteBuffer nb = newBuffer(capacity);
        MemorySegment ns = MemorySegment.ofBuffer(nb);
        long q = 0;
        for (long s = first; s < next; s++) {
            int i = (int) (s & mask);
            MemorySegment.copy(seg, pos[i] & (cap - 1), ns, q, len[i]);
            pos[i] = q;
            q += len[i];
        }
        // views handed out earlier (frames being written) keep the old buffer alive and unchanged
        buf = nb;
        seg = ns;
        cap = capacity;
        head = 0;
        tail = q;
    }

    /**
     * The peer has every frame up to {@code ack}: forgets them; the sends that waited for it go to {@code completed}
     * (to be completed by the caller, outside the lock).
     */
    void acknowledge(long ack, List<SendRequest> completed) {
        while (first < next && first <= ack) {
            int i = (int) (first & mask);
            if (done[i] != null) completed.add(done[i]);
            done[i] = null;
            ref[i] = null;
            head = pos[i] + len[i];
            first++;
        }
        if (first == next) {
            head = tail;
            if (cap > INITIAL_BYTES * 16 || pos.length > INITIAL_RECORDS * 16) shrink();
        }
    }

    private void shrink() {
        if (pos.length > INITIAL_RECORDS * 16) {
            pos = new long[INITIAL_RECORDS];
            len = new int[INITIAL_RECORDS];
            ref = new MemorySegment[INITIAL_RECORDS];
            done = new SendRequest[INITIAL_RECORDS];
            mask = INITIAL_RECORDS - 1;
        }
        if (cap > INITIAL_BYTES * 16) relocate(INITIAL_BYTES);
    }

    /** The header of frame {@code seq} to send again, its ack field set to {@code ack} (a new buffer). */
    ByteBuffer header(long seq, long ack) {
        int i = (int) (seq & mask);
        ByteBuffer h = ByteBuffer.allocate(Frame.HEADER).order(ByteOrder.LITTLE_ENDIAN);
        MemorySegment.copy(seg, pos[i] & (cap - 1), MemorySegment.ofBuffer(h), 0, Frame.HEADER);
        h.putLong(Frame.ACK_OFFSET, ack);
        return h;
    }

    /** The payload of frame {@code seq} to send again: the copy (EAGER, small RMA), the reference (DATA, RMA), or null. */
    MemorySegment payload(long seq) {
        int i = (int) (seq & mask);
        if (ref[i] != null) return ref[i];
        return len[i] > Frame.HEADER ? copiedPayload(seq) : null;
    }

    /** Type of frame {@code seq}. */
    byte type(long seq) {
        int i = (int) (seq & mask);
        return buf.get((int) ((pos[i] & (cap - 1)) + 3));
    }

    /** Payload bytes frame {@code seq} carries on the wire. */
    long wireBytes(long seq) {
        MemorySegment p = payload(seq);
        return Frame.HEADER + (p == null ? 0 : p.byteSize());
    }

    /** Sends waiting for an acknowledgement that {@code keep} selects, to {@code out}. */
    void pending(java.util.function.Predicate<SendRequest> keep, List<? super SendRequest> out) {
        for (long s = first; s < next; s++) {
            SendRequest d = done[(int) (s & mask)];
            if (d != null && keep.test(d)) out.add(d);
        }
    }

    /** The link failed: every send waiting for an acknowledgement goes to {@code out}; the log is emptied. */
    void clear(List<? super SendRequest> out) {
        for (long s = first; s < next; s++) {
            int i = (int) (s & mask);
            if (done[i] != null) out.add(done[i]);
            done[i] = null;
            ref[i] = null;
        }
        first = next;
        head = tail;
    }
}
