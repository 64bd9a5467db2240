package io.hcomm4j.comm;

import io.hcomm4j.CollectiveMismatchException;
import io.hcomm4j.CommFuture;
import io.hcomm4j.ReduceFunctionException;
import io.hcomm4j.Status;
import io.hcomm4j.algo.CollectiveLinks;
import io.hcomm4j.transport.FingerprintMismatchException;
import io.hcomm4j.transport.Request;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The links of one collective op: the transport's tagged messages on the communicator's collective
 * channel (its id with the collective bit, so user receives with ANY_TAG never see them), tagged with
 * the op's sequence number, so consecutive ops and ops issued from different threads never mix.
 *
 * <p>Mismatch detection, always on: every message carries the op's fingerprint (op, count, type, reduce op,
 * root) and a receive takes only a message with its own fingerprint. A rank that finds a mismatch fails its
 * op and tells every other rank on the notice channel (same tag); each rank's op listens there while it runs
 * and fails with the same {@link CollectiveMismatchException} instead of waiting for a peer that will never send. A rank
 * whose user reduce function threw tells the others the same way ({@link #functionFailed}).
 *
 * <p>The communicator keeps the links of its running ops: a member's failure or an abort fails them through
 * {@link #abort(RuntimeException)}, and the stuck-op watchdog reads their age and the peers they wait for.
 */
final class TransportLinks implements CollectiveLinks, AutoCloseable {
    /** The longest notice (a longer text is cut). */
    static final int NOTICE_BYTES = 512;
    /** Starts a notice that a rank's reduce function threw (no text of a mismatch starts with this control character). */
    private static final String FUNCTION_FAILED = "\u0001";
    /** Ends the notice receive of an op that finished; made once: an exception per op would cost its stack trace. */
    private static final io.hcomm4j.CommAbortedException OP_DONE = new io.hcomm4j.CommAbortedException("collective done");

    private final PeerTransport transport;
    private final long channel;
    private final long noticeChannel;
    private final int tag;
    private final long seq;
    private final int rank;
    private final int size;
    private final String op;
    private final int fingerprint;
    private final ScratchPool pool;
    /** Communicator rank → world rank, or null (world). */
    private final int[] group;
    private final List<Request<?>> started = new ArrayList<>();
    /** World rank each request of {@link #started} goes to or comes from. */
    private int[] startedPeers = new int[8];
    /** Communicator id, bytes of the op (its largest buffer) and when it started: for stuck-op reports. */
    final long commId;
    final long bytes;
    final long startNanos = System.nanoTime();
    /** Reported stuck already (watchdog only). */
    boolean reported;
    private final byte[] noticeBytes = new byte[NOTICE_BYTES];
    private final CommFuture<Status> notice;
    private volatile RuntimeException aborted;
    private List<MemorySegment> scratch;
    /**
     * The most links (connections to one peer) one message of this op went over so far: more than 1 when a large
     * message was striped over rails (HCOMM_CHANNELS, HCOMM_SOCKET_IFNAME); 0 if it sent and received nothing.
     */
    synchronized int channels() {
        int most = 0;
        for (Request<?> r : started) most = Math.max(most, r.channels());
        return most;
    }

    /** The links run a user's call (not an HCOMM_CHECK=full fingerprint exchange). */
    private final boolean runsCall;
    /**
     * The call's fingerprint inputs, copied when the op starts, to name the differing argument of an odd message: the
     * call object runs the next op once this one ends, and a mismatch may be reported after that (a message that came
     * late, or one matched just before the end whose report runs just after); {@link #callOp} null: not known.
     */
    private final CollectiveOp callOp;
    private final long callCount;
    private final io.hcomm4j.DataType callType;
    private final int callRedop;
    private final int callRoot;
    /** The call's flight record and its ticket there (null, -1: a check's links), for a mismatch found after the op ended. */
    private final io.hcomm4j.monitor.OpTrace trace;
    private final long ticket;
    /** The op runs on a HIGH-priority stream: its sends' chunks go first ({@link #high(boolean)}). */
    private boolean high;

    TransportLinks(PeerTransport transport, long channel, long noticeChannel, long seq, int rank, int size, int[] group,
                   String op, int fingerprint, ScratchPool pool) {
        this(transport, channel, noticeChannel, seq, rank, size, group, op, fingerprint, pool, -1);
    }

    TransportLinks(PeerTransport transport, long channel, long noticeChannel, long seq, int rank, int size, int[] group,
                   String op, int fingerprint, ScratchPool pool, long bytes) {
        this(transport, channel, noticeChannel, seq, rank, size, group, op, fingerprint, pool, bytes, null);
    }

    /** {@code call}: the call this op runs, set before the watch starts (a mismatch it reports at once names arguments). */
    TransportLinks(PeerTransport transport, long channel, long noticeChannel, long seq, int rank, int size, int[] group,
                   String op, int fingerprint, ScratchPool pool, long bytes, CollectiveCall call) {
        this.runsCall = call != null;
        boolean known = call != null && call.fpKnown && call.fingerprint == fingerprint;
        this.callOp = known ? call.op : null;
        this.callCount = known ? call.fpCount : 0;
        this.callType = known ? call.fpType : null;
        this.callRedop = known ? call.fpRedop : 0;
        this.callRoot = known ? call.fpRoot : 0;
        this.trace = call == null ? null : call.trace();
        this.ticket = call == null ? -1 : call.ticket;
        this.transport = transport;
        this.commId = channel & ~(3L << 62);
        this.bytes = bytes;
        this.channel = channel;
        this.noticeChannel = noticeChannel;
        this.seq = seq;
        this.tag = (int) (seq & 0x7fffffff);
        this.rank = rank;
        this.size = size;
        this.group = group;
        this.op = op;
        this.fingerprint = fingerprint;
        this.pool = pool;
        if (size > 1) {
            transport.watch(channel, tag, fingerprint, e -> {
                CollectiveMismatchException m = describe(e);
                if (e.late() && trace != null) trace.failedLate(ticket, m);
                failEverywhere(m, e.late());
            });
            this.notice = transport.recv(noticeChannel, PeerTransport.ANY, tag, MemorySegment.ofArray(noticeBytes));
            notice.whenComplete((st, err) -> {
                if (err == null) abort(fromNotice(new String(noticeBytes, 0, (int) st.bytes(), StandardCharsets.UTF_8)));
            });
        } else {
            this.notice = null;
        }
    }

    private int world(int peer) {
        return group == null ? peer : group[peer];
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    /** The op's sends are of high priority (it runs on a {@link io.hcomm4j.Stream.Priority#HIGH} stream). */
    void high(boolean on) {
        this.high = on;
    }

    // send and recv mirror each other (same shape on purpose): the op's channel, tag and fingerprint, then tracked
    @Override
    public CommFuture<Void> send(int peer, MemorySegment slice) {
        checkAborted();
        int w = world(peer);
        var s = transport.send(channel, w, tag, slice, fingerprint, null, high);
        track(s, w);
        return s;
    }

    @Override
    public CommFuture<Status> recv(int peer, MemorySegment slice) {
        checkAborted();
        int w = world(peer);
        var r = transport.recvChecked(channel, w, tag, slice, fingerprint);
        track(r, w);
        return r;
    }

    private synchronized void track(Request<?> r, int worldPeer) {
        int i = started.size();
        if (i == startedPeers.length) startedPeers = java.util.Arrays.copyOf(startedPeers, 2 * i);
        startedPeers[i] = worldPeer;
        started.add(r);
        if (aborted != null) transport.withdraw(r, aborted);
    }

    private void checkAborted() {
        RuntimeException a = aborted;
        if (a != null) throw fresh(a);
    }

    /** A new exception like {@code e} (thrown here, with this thread's stack), of the same type and message. */
    static RuntimeException fresh(RuntimeException e) {
        return switch (e) {
            case CollectiveMismatchException m -> new CollectiveMismatchException(m.getMessage());
            case io.hcomm4j.PeerFailedException p -> new io.hcomm4j.PeerFailedException(p.getMessage(), p.failedRanks(), null);
            case io.hcomm4j.CommAbortedException a -> new io.hcomm4j.CommAbortedException(a.getMessage());
            case ReduceFunctionException f -> new ReduceFunctionException(f.getMessage(), f.getCause());
            default -> e;
        };
    }

    /** The op was aborted (mismatch, a member failed, the communicator aborted), or null. */
    RuntimeException aborted() {
        return aborted;
    }

    /** World ranks this op now waits for (pending sends and receives), ascending, without repeats. */
    synchronized int[] waitingFor() {
        java.util.BitSet peers = new java.util.BitSet();
        for (int i = 0; i < started.size(); i++) if (!started.get(i).isDone()) peers.set(startedPeers[i]);
        return peers.stream().toArray();
    }

    /** The op's name and sequence number, for reports: "allReduce #17". */
    String op() {
        return op;
    }

    long seq() {
        return seq;
    }

    /**
     * Fails what this op started with {@code e}, so its waits end now, and every later send or receive of it throws
     * the same kind of exception: a peer reported a mismatch, a member failed, or the communicator was aborted.
     */
    void abort(RuntimeException e) {
        List<Request<?>> pending;
        synchronized (this) {
            if (aborted != null) return;
            aborted = e;
            pending = new ArrayList<>(started);
        }
        for (Request<?> r : pending) if (!r.isDone()) transport.withdraw(r, e);
    }

    @Override
    public void await(CommFuture<Status> recv, long expectedBytes) {
        Status st;
        try {
            st = recv.await();
        } catch (FingerprintMismatchException e) {
            throw describe(e);
        } catch (io.hcomm4j.MessageTruncatedException tooLong) {
            throw new CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq + "): a peer sent more data than "
                    + "this rank's arguments allow (" + tooLong.getMessage() + "): the ranks called it with different counts");
        }
        if (st.bytes() != expectedBytes) {
            throw new CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq + "): rank "
                    + commRank(st.source()) + " sent " + st.bytes() + " bytes where this rank expected " + expectedBytes
                    + ": the ranks called it with different counts");
        }
    }

    private CollectiveMismatchException describe(FingerprintMismatchException e) {
        return describe(e.source(), e.sent(), e.late(), e.late() ? " (its message came after rank " + rank + " had finished its part of the op)" : "");
    }

    /**
     * The mismatch with world rank {@code source}, whose fingerprint is {@code sent}; {@code late}: its message came
     * after this op finished here; {@code how}: how it was found, appended.
     */
    private CollectiveMismatchException describe(int source, int sent, boolean late, String how) {
        String where = "rank " + rank + ": " + op + " (collective #" + seq + " of this communicator): rank " + commRank(source);
        if (late && sent == fingerprint) {
            return new CollectiveMismatchException(where + " sent data for it after rank " + rank + " had finished its part:"
                    + " the ranks ran it differently (another root, or another algorithm)");
        }
        String theirs = CollectiveOp.labelOf(sent);
        String what = callOp == null ? "" : CollectiveCall.whatDiffers(callOp, callCount, callType, callRedop, callRoot, sent, size,
                "rank " + rank); // "rank 0 called X with <theirs> where rank 1 has <mine>": the others read it too
        return new CollectiveMismatchException(where + (theirs.equals(op) ? " called " + op + (what.isEmpty() ? " with a different count, type, op or root" : what)
                : " called " + (theirs.isEmpty() ? "something else" : theirs) + " instead") + how);
    }

    /** This op's fingerprint (its op and arguments). */
    int fingerprint() {
        return fingerprint;
    }

    /** The links run a user's call (not an HCOMM_CHECK=full fingerprint exchange, which shares the op's number). */
    boolean runsCall() {
        return runsCall;
    }

    /** {@link StuckAgreement} wrote this op's fingerprint to the store (its thread only). */
    boolean fingerprintPublished;

    /**
     * {@link StuckAgreement} found world rank {@code peer} stuck in this op with fingerprint {@code theirs}: fail the op
     * and tell the others, as a message showing it would have.
     */
    void disagree(int peer, int theirs) {
        if (aborted != null) return;
        failEverywhere(describe(peer, theirs, false, " (seen in the store after " + io.hcomm4j.Units.duration(System.nanoTime() - startNanos)
                + " of waiting: no message of one's op reaches the other)"), true);
    }

    /**
     * A mismatch found here: this op fails with {@code m} and every other rank is told; {@code log}: also at WARN here
     * (found after this rank's part ended, or by the store, where no exception of this rank's op may show it).
     */
    private void failEverywhere(CollectiveMismatchException m, boolean log) {
        abort(m);
        if (log) org.slf4j.LoggerFactory.getLogger(TransportLinks.class).warn("{} (told the other ranks)", m.getMessage());
        tellOthersOf(m);
    }

    private int commRank(int worldRank) {
        if (group == null) return worldRank;
        for (int r = 0; r < group.length; r++) if (group[r] == worldRank) return r;
        return worldRank;
    }

    /** Tells every other rank of the communicator that this op is broken, so none of them waits for it. */
    void tellOthers(CollectiveMismatchException e) {
        if (aborted != null) return; // reported by someone else, or found by the watch (or aborted): they told everybody
        tellOthersOf(e);
    }

    private void tellOthersOf(CollectiveMismatchException e) {
        tellOthers("reported by rank " + rank + ": " + e.getMessage());
    }

    /**
     * The user's reduce function failed during this op: {@code e} is what the kernel threw here (its cause the
     * function's exception), or what a peer's notice aborted this op with (no cause). Returns the exception this rank's
     * op fails with. A failure here is told to every other rank first (so none of them waits for the data this rank will
     * not send), then this op's pending sends and receives are withdrawn.
     */
    ReduceFunctionException functionFailed(ReduceFunctionException e) {
        if (e.getCause() == null) return e; // a peer's function: that peer told everybody
        ReduceFunctionException here = new ReduceFunctionException("rank " + rank + ": " + op + " (collective #" + seq + "): "
                + e.getMessage(), e.getCause());
        tellOthers(FUNCTION_FAILED + here.getMessage());
        abort(here);
        return here;
    }

    /** What a notice from another rank fails this op with: a mismatch, a refusal, or that rank's failed reduce function. */
    private RuntimeException fromNotice(String text) {
        if (!text.startsWith(FUNCTION_FAILED)) return new CollectiveMismatchException(text);
        return new ReduceFunctionException("rank " + rank + ": " + op + " (collective #" + seq + ") cannot complete: "
                + text.substring(FUNCTION_FAILED.length()));
    }

    private void tellOthers(String notice) {
        byte[] text = notice.getBytes(StandardCharsets.UTF_8);
        MemorySegment msg = MemorySegment.ofArray(java.util.Arrays.copyOf(text, Math.min(text.length, NOTICE_BYTES)));
        List<CommFuture<Void>> sends = new ArrayList<>(size);
        for (int p = 0; p < size; p++) if (p != rank) sends.add(transport.send(noticeChannel, world(p), tag, msg));
        for (CommFuture<Void> s : sends) {
            try {
                s.await(java.time.Duration.ofSeconds(5));
            } catch (RuntimeException ignored) {
                // a peer that cannot be told has failed some other way; its own op reports that
            }
        }
    }

    @Override
    public MemorySegment scratch(long bytes) {
        MemorySegment s = pool.take(bytes);
        if (scratch == null) scratch = new ArrayList<>(2);
        scratch.add(s);
        return s.asSlice(0, bytes);
    }

    @Override
    public void close() {
        if (notice != null && aborted == null) {
            // the watch stays, to report a message of this op that comes now (its sender ran the op differently);
            // what the op started is done, and must not keep the caller's memory reachable meanwhile
            synchronized (this) {
                started.clear();
            }
            transport.retire(channel, tag);
        } else if (notice != null) {
            transport.unwatch(channel, tag);
        }
        if (notice != null && !notice.isDone()) transport.withdraw((Request<?>) notice, OP_DONE);
        // after an abort a receive may still be taking data into scratch memory: do not reuse it
        if (scratch != null && aborted == null) {
            for (MemorySegment s : scratch) pool.give(s);
        }
        scratch = null;
    }
}
