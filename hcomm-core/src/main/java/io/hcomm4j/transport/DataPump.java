package io.hcomm4j.transport;

import java.util.ArrayDeque;
import java.util.List;
import java.util.function.Predicate;

/**
 * The payloads of one peer's large messages over TCP, cut into {@link Frame#CHUNK}-byte {@link Frame#DATA_PART} frames
 * that the links to the peer take whenever they have room: a link's writer with nothing queued takes the next chunk
 * ({@link FrameWriter#fillChunks}). So a link that drains faster takes more chunks, in proportion to how fast it drains,
 * and a link that slows down takes fewer from then on; no split is fixed in advance. Control frames and small messages
 * go ahead of the next chunk on their link, and the chunks of high-priority messages ahead of the others', so a
 * latency-critical message waits at most for the chunk being written and what the socket already holds.
 *
 * <p>A send completes when the peer has acknowledged every chunk of it (the receiver acknowledges each chunk at once).
 * Each link keeps the chunks it wrote in its {@link Lane} until then; the acknowledgements also measure the link's
 * rate, which {@code hcomm perf} reports beside each link's share of the bytes.
 *
 * <p>Guarded by its own monitor, taken after a link's tx lock and never before: {@link #next} runs under the tx lock of
 * the link that writes, {@link #acked} on the poller.
 */
final class DataPump {
    /** Chunks one link may have written and not yet seen acknowledged. */
    static final int LANE_CAPACITY = 64;
    /** Time one chunk should take on its link (see {@link Lane#chunkBytes}). */
    private static final long CHUNK_NANOS = 1_000_000;
    /** A link's chunks until its rate is measured. */
    private static final long FIRST_CHUNK = 1 << 20;
    /** A link's rate measured longer ago than this is taken as unknown by {@link #anotherIsSooner}. */
    private static final long STALE_NANOS = 200_000_000;
    /** A rate sample covers at least this many bytes (one chunk waiting for a late acknowledgement says little). */
    private static final long RATE_MIN_BYTES = 4 * Frame.CHUNK;
    /** A rate sample spans at least this much of a link's busy time. */
    private static final long RATE_WINDOW_NANOS = 20_000_000;
    /** ... or a whole busy period of at least this much. */
    private static final long RATE_MIN_NANOS = 5_000_000;
    /** Weight of a new rate sample in a lane's running estimate. */
    private static final double RATE_WEIGHT = 1.0 / 4;

    /** {@link SendRequest#priority} of a message whose chunks go first. */
    static final byte HIGH = 1;

    /** {@link #next}: nothing for this link now. */
    static final int NONE = 0;
    /** {@link #next}: write the chunk the lane names. */
    static final int CHUNK = 1;
    /** {@link #next}: the lane's request was given up by its sender: tell the receiver (a DATA frame with CTS_DISCARD). */
    static final int DISCARD = 2;
    /** {@link #next}: another link would deliver the next chunk sooner: it should take it ({@link #kickOthers}). */
    static final int OTHERS = 3;

    /** Chunks written on a link that failed before they were acknowledged: they go again first, over the others. */
    private final ArrayDeque<Retry> retries = new ArrayDeque<>();
    private final ArrayDeque<SendRequest> high = new ArrayDeque<>();
    private final ArrayDeque<SendRequest> normal = new ArrayDeque<>();
    /** The links that take chunks, the peer's primary link first (replaced whole when one comes or goes). */
    private volatile PeerLink[] links;

    DataPump(PeerLink primary) {
        this.links = new PeerLink[] {primary};
    }

    /** A rail joined: it takes chunks from now on. */
    void addLink(PeerLink rail) {
        synchronized (this) {
            PeerLink[] now = links;
            PeerLink[] more = java.util.Arrays.copyOf(now, now.length + 1);
            more[now.length] = rail;
            links = more;
        }
        kick();
    }

    /**
     * A rail failed: it takes no more chunks, and those it wrote that were not acknowledged go again over the other
     * links (the receiver drops a chunk that came already: see {@link RecvRequest#chunkCame}).
     *
     * @return the chunks to go again
     */
    int removeLink(PeerLink rail) {
        int again;
        synchronized (this) {
            PeerLink[] now = links;
            int at = java.util.Arrays.asList(now).indexOf(rail);
            if (at < 0) return 0;
            PeerLink[] fewer = new PeerLink[now.length - 1];
            System.arraycopy(now, 0, fewer, 0, at);
            System.arraycopy(now, at + 1, fewer, at, now.length - at - 1);
            links = fewer;
            Lane lane = rail.lane;
            again = lane.count;
            for (int i = 0; i < lane.count; i++) {
                int k = (lane.head + i) % LANE_CAPACITY;
                retries.add(new Retry(lane.req[k], lane.offsets[k], lane.bytes[k]));
            }
            lane.clear();
        }
        kick();
        return again;
    }

    /** A chunk to send again. */
    private record Retry(SendRequest req, long offset, long length) {
    }

    /** The data of {@code s} may go (its CTS came): its chunks join the queue of its priority. */
    void add(SendRequest s) {
        synchronized (this) {
            s.sentOffset = 0;
            s.unacked = s.size;
            (s.priority > 0 ? high : normal).add(s);
        }
        kick();
    }

    /** Every link takes what it has room for (no tx lock held by the caller). */
    void kick() {
        for (PeerLink l : links) l.writer.kick();
    }

    /** The links but {@code me} take what they have room for ({@code me}'s tx lock may be held: the others' are only tried). */
    void kickOthers(PeerLink me) {
        for (PeerLink l : links) if (l != me) l.writer.kick();
    }

    /** Whether chunks wait to be written. */
    synchronized boolean pending() {
        return !retries.isEmpty() || !high.isEmpty() || !normal.isEmpty();
    }

    /**
     * Whether {@code lane}'s link should not take a chunk now because another link would deliver one sooner: earliest
     * expected completion, (bytes in flight + a chunk unit) / measured rate, over the links with room (the same unit for
     * every link, so exactly the links with the least of it take chunks, and no two links each defer to the other). So
     * a fast link is not held back by a slow one, a slow link takes a chunk only when the fast ones are that far ahead,
     * and the split of a message follows the links' rates even when the sockets could take it all at once. A link not
     * measured yet, or not for {@link #STALE_NANOS} (its rate may have changed), counts as fast as the fastest measured
     * one: it gets chunks, and a new measurement.
     */
    private boolean anotherIsSooner(Lane lane) {
        long bytes = Frame.CHUNK;
        PeerLink[] all = links;
        if (all.length < 2) return false;
        long now = System.nanoTime();
        double fastest = 0;
        for (PeerLink l : all) fastest = Math.max(fastest, l.lane.rate);
        if (fastest == 0) fastest = 1;
        double mine = (lane.inflight + bytes) / lane.rateOr(fastest, now);
        for (PeerLink l : all) {
            Lane other = l.lane;
            if (other == lane || other.count == LANE_CAPACITY || l.state != PeerLink.State.CONNECTED) continue;
            if ((other.inflight + bytes) / other.rateOr(fastest, now) < mine) return true;
        }
        return false;
    }

    /**
     * The next thing link {@code lane} writes (under its tx lock): {@link #CHUNK} with the chunk in the lane's {@code next*}
     * fields (recorded as in flight with {@code seq}), {@link #DISCARD} with the request in {@code nextReq}, or {@link #NONE}.
     */
    synchronized int next(Lane lane, long seq) {
        if (lane.count == LANE_CAPACITY) return NONE;
        Retry again = retries.peek();
        if (again != null) {
            SendRequest s = again.req();
            if (!s.isDone() && anotherIsSooner(lane)) return OTHERS;
            retries.poll();
            lane.nextReq = s;
            if (s.isDone()) return DISCARD;
            lane.nextOffset = again.offset();
            lane.nextLength = again.length();
            lane.push(seq, s, again.offset(), again.length(), System.nanoTime());
            return CHUNK;
        }
        ArrayDeque<SendRequest> q = high.isEmpty() ? normal : high;
        SendRequest s = q.peek();
        if (s == null) return NONE;
        if (s.isDone()) {
            // given up (its communicator aborted, its waiter left): no more of it goes; the receiver is told
            q.poll();
            lane.nextReq = s;
            return DISCARD;
        }
        if (anotherIsSooner(lane)) return OTHERS;
        long off = s.sentOffset;
        // a message of a few chunks is cut so that each link can have a piece of it
        long share = (s.size / links.length + Frame.CHUNK - 1) / Frame.CHUNK * Frame.CHUNK;
        long len = Math.min(Math.min(lane.chunkBytes(), Math.max(Frame.CHUNK, share)), s.size - off);
        s.sentOffset = off + len;
        if (s.sentOffset == s.size) q.poll();
        lane.nextReq = s;
        lane.nextOffset = off;
        lane.nextLength = len;
        lane.push(seq, s, off, len, System.nanoTime());
        return CHUNK;
    }

    /**
     * The peer acknowledged every frame of {@code lane}'s link up to {@code ack} (poller): its chunks up to there are
     * delivered; sends whose last chunk that was go to {@code done}.
     *
     * @return whether the lane was full before (its link may take chunks again)
     */
    synchronized boolean acked(Lane lane, long ack, List<SendRequest> done) {
        boolean wasFull = lane.count == LANE_CAPACITY;
        if (lane.count == 0 || lane.seq[lane.head] > ack) return false;
        long now = System.nanoTime();
        long bytes = 0;
        while (lane.count > 0 && lane.seq[lane.head] <= ack) {
            int h = lane.head;
            SendRequest s = lane.req[h];
            bytes += lane.bytes[h];
            lane.req[h] = null;
            lane.head = (h + 1) % LANE_CAPACITY;
            lane.count--;
            if ((s.unacked -= lane.bytes[h]) == 0) done.add(s);
        }
        lane.acked(bytes, now);
        return wasFull;
    }

    /**
     * Since when {@code lane}'s link has owed an acknowledgement: the later of its oldest unacknowledged chunk's write and
     * its last acknowledgement; 0 if it has nothing in flight.
     */
    synchronized long waitingSince(Lane lane) {
        return lane.count == 0 ? 0 : Math.max(lane.sentAt[lane.head], lane.lastAckAt);
    }

    /** {@code lane}'s measured rate in bytes per second (0: not measured yet). */
    synchronized double rate(Lane lane) {
        return lane.bytesPerSecond();
    }

    /** The chunk bytes acknowledged on {@code lane}'s link so far. */
    synchronized long bytes(Lane lane) {
        return lane.ackedBytes();
    }

    /** Whether nothing is queued and nothing written waits for its acknowledgement (close waits for it). */
    synchronized boolean idle() {
        if (!high.isEmpty() || !normal.isEmpty() || !retries.isEmpty()) return false;
        for (PeerLink l : links) if (l.lane.count > 0) return false;
        return true;
    }

    /** Adds the sends with chunks queued or unacknowledged that {@code keep} selects to {@code out}. */
    synchronized void pending(Predicate<SendRequest> keep, List<? super SendRequest> out) {
        for (Retry r : retries) if (keep.test(r.req()) && !out.contains(r.req())) out.add(r.req());
        for (SendRequest s : high) if (keep.test(s)) out.add(s);
        for (SendRequest s : normal) if (keep.test(s)) out.add(s);
        for (PeerLink l : links) {
            Lane lane = l.lane;
            for (int i = 0; i < lane.count; i++) {
                SendRequest s = lane.req[(lane.head + i) % LANE_CAPACITY];
                if (keep.test(s) && !out.contains(s)) out.add(s);
            }
        }
    }

    /** The peer is gone for good: every send queued or in flight goes to {@code out}, and the pump is empty. */
    synchronized void drain(List<? super SendRequest> out) {
        pending(s -> true, out);
        high.clear();
        normal.clear();
        retries.clear();
        for (PeerLink l : links) l.lane.clear();
    }

    /**
     * One link's chunks written and not yet acknowledged, in the order written (a ring), and its measured rate: the
     * bytes acknowledged over a window of at least {@link #RATE_WINDOW_NANOS} during which the link always had chunks in
     * flight (a busy period that ends sooner counts if it lasted {@link #RATE_MIN_NANOS}). Not per chunk: a receiver
     * that was descheduled reads what its socket buffered in a burst, and its acknowledgements then come far faster than
     * the link moves bytes.
     */
    static final class Lane {
        /** The rail index of the link this lane belongs to ({@link PeerLink#rail}). */
        final int rail;
        final long[] seq = new long[LANE_CAPACITY];
        final SendRequest[] req = new SendRequest[LANE_CAPACITY];
        final long[] offsets = new long[LANE_CAPACITY];
        final long[] bytes = new long[LANE_CAPACITY];
        final long[] sentAt = new long[LANE_CAPACITY];
        int head;
        /** Chunks in flight (written, not acknowledged); read without the pump's monitor only as a hint. */
        volatile int count;
        /** The chunk {@link #next} chose. */
        SendRequest nextReq;
        long nextOffset;
        long nextLength;
        /** Chunk bytes in flight. */
        private long inflight;
        private long lastAckAt;
        /** Running estimate of the link's rate, in bytes per nanosecond (0: not measured yet). */
        private double rate;
        private long ackedBytes;
        /** Start of the current measuring window (the link busy since), and the bytes acknowledged in it. */
        private long windowStart;
        private long windowBytes;
        private long sampledAt;

        Lane(int rail) {
            this.rail = rail;
        }

        /** Records a chunk of {@code r} written on this lane's link (which the request then counts as used). */
        private void push(long s, SendRequest r, long off, long b, long now) {
            r.linksUsed |= 1 << rail;
            if (count == 0) {
                windowStart = now;
                windowBytes = 0;
            }
            int i = (head + count) % LANE_CAPACITY;
            seq[i] = s;
            req[i] = r;
            offsets[i] = off;
            inflight += b;
            bytes[i] = b;
            sentAt[i] = now;
            count++;
        }

        /** {@code b} bytes were acknowledged at {@code now} (the chunks already left the ring). */
        private void acked(long b, long now) {
            inflight -= b;
            lastAckAt = now;
            ackedBytes += b;
            windowBytes += b;
            long took = now - windowStart;
            if (windowBytes >= RATE_MIN_BYTES && (took >= RATE_WINDOW_NANOS || (count == 0 && took >= RATE_MIN_NANOS))) {
                double r = (double) windowBytes / took;
                rate = rate == 0 ? r : rate + (r - rate) * RATE_WEIGHT;
                sampledAt = now;
                windowStart = now;
                windowBytes = 0;
            } else if (count == 0) {
                windowBytes = 0; // an idle link's next busy period starts afresh
            }
        }

        /** The measured rate, or {@code otherwise} if there is none measured within {@link #STALE_NANOS}. */
        private double rateOr(double otherwise, long now) {
            return rate == 0 || now - sampledAt > STALE_NANOS ? otherwise : rate;
        }

        private void clear() {
            inflight = 0;
            for (int i = 0; i < LANE_CAPACITY; i++) req[i] = null;
            head = 0;
            count = 0;
        }

        /**
         * Bytes of the next chunk: what the link moves in {@link #CHUNK_NANOS} at its measured rate, in whole
         * {@link Frame#CHUNK} units, at most {@link Frame#CHUNK_MAX}. Each chunk costs its own system calls on both sides
         * (a write, a header read, a payload read, an acknowledgement each way; 4 MiB exchanges over loopback took twice
         * as long in 256 KiB chunks), while a message of higher priority waits for the chunk under way: a fixed time
         * bounds that wait on any link, and on a fast one the chunks get large enough for the calls not to count.
         */
        long chunkBytes() {
            double r = rate;
            if (r == 0) return FIRST_CHUNK;
            long units = (long) (r * CHUNK_NANOS) / Frame.CHUNK;
            return Math.max(1, Math.min(Frame.CHUNK_MAX / Frame.CHUNK, units)) * Frame.CHUNK;
        }

        /** Measured rate in bytes per second (0: not measured yet). */
        double bytesPerSecond() {
            return rate * 1e9;
        }

        /** Chunk bytes the peer acknowledged on this link so far. */
        long ackedBytes() {
            return ackedBytes;
        }
    }
}
