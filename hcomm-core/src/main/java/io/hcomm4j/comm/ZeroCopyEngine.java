package io.hcomm4j.comm;

import io.hcomm4j.CollectiveMismatchException;
import io.hcomm4j.CommAbortedException;
import io.hcomm4j.HcommException;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.Status;
import io.hcomm4j.algo.ZeroCopyCollectives;
import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.transport.SharedWait;
import io.hcomm4j.transport.PeerTransport;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Zero-copy collectives of one communicator whose ranks all live on this host: allReduce, reduceScatter(V),
 * allGather(V), broadcast, reduce, gather(V), scatter(V) and allToAll(V) read (and write) the other ranks' registered buffers directly,
 * through mappings of their memory-pool files, instead of sending messages ({@link ZeroCopyCollectives} moves the bytes;
 * unregistered memory is staged through a registered buffer of this engine).
 *
 * <p><b>Control mapping.</b> Rank 0 of the communicator creates a small shared file when the communicator is made
 * (pre-faulted, mode 0600, named like the pool's files) and publishes its name in the store; the others map it at
 * their first such op, and rank 0 unlinks it once every rank has used it ({@link ZeroCopyControl}). {@link ControlLayout}
 * describes it: one slot per rank (two descriptors, done, error, sleeping) and the block tables of the V forms.
 *
 * <p><b>Parts.</b> This class holds the session-level state and the protocol steps every op takes (attach, publish its
 * descriptor and decide, map the peers' buffers, finish); the ops themselves are in {@link ZeroCopyReductions},
 * {@link ZeroCopyDataMovement} and {@link ZeroCopyBlockTables}, the waiting in {@link ZeroCopyWaiter}, the staging
 * buffer in {@link ZeroCopyStaging}, the ticket order in {@link ZeroCopyTurn}, the peers' files in {@link PeerFiles}.
 *
 * <p><b>One op.</b> Ops that may run here are numbered when they are called (in call order; the number is their
 * ticket) and run one at a time in ticket order ({@link #enter}/{@link #leave}), so one slot per rank suffices. A rank
 * publishes its descriptor (the op's sequence number and fingerprint, whether its buffers lie in the memory pool and
 * where: file and offset) with a release store of the sequence number, then waits until every rank's descriptor of
 * that sequence number is visible. Every rank then decides the same thing from the same descriptors: a different
 * fingerprint is a {@link CollectiveMismatchException} everywhere; if any rank's buffers are not registered (or may not
 * run here) every rank runs the normal algorithm through the transport; else each rank does its part in shared
 * memory, stores {@code done} and waits until every rank is done (nobody returns, and reuses its buffers, while a peer
 * still reads or writes them). Descriptors alternate between two places by ticket parity, so a slow peer still
 * reading this rank's last descriptor never sees it overwritten: the one after next can only be written once every
 * rank has published the next one, which it does after reading.
 *
 * <p><b>Waiting</b> ({@link ZeroCopyWaiter}) goes through the transport's progress engine ({@link PeerTransport#await(SharedWait, long)}):
 * spin, then block in the selector with the sleeping flag set; a rank that changes a word others wait for fences
 * and rings the doorbell of every peer whose flag it finds set. The wait ends early when a peer's connection fails
 * ({@link PeerFailedException}), when the session closes, or at {@code HCOMM_TIMEOUT}. Every collective of the
 * communicator publishes a descriptor (also those that then fall back to the transport), so a rank in another
 * collective shows here as a different fingerprint, never as a silent wait.
 *
 * <p>Steady state allocates nothing: peers' files are mapped once (and pre-faulted) and kept (up to
 * {@value PeerFiles#FILES_PER_PEER} per peer), arrays and scratch are per communicator.
 */
final class ZeroCopyEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ZeroCopyEngine.class);
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    /** Bytes of the private scratch chunk reductions go through (stays in L1/L2). */
    static final long SCRATCH_BYTES = 32 * 1024;

    private final PeerTransport transport;
    final MemoryPool pool;
    private final long timeoutNanos;
    private final Duration attachTimeout;
    final int rank;
    final int n;
    private final int[] world;
    private final long commId;

    // control mapping
    private final ZeroCopyControl control;
    /** The control mapping once attached ({@link ControlLayout}); read by the ops and the waiter. */
    MemorySegment ctrl;
    private volatile boolean attached;
    /** Every peer is connected through shared memory (set at attach). */
    boolean capable;
    /** Set at an op where some rank was not capable (every rank sets it at the same op): no more descriptors. */
    private volatile boolean disabled;
    volatile boolean closed;
    /** The size of the op running now, for the stuck-op report (-1: unknown). */
    private volatile long waitBytes = -1;
    /** Whether the current wait was reported as stuck (the monitor's own flag). */
    volatile long reportedSeq = -1;

    /** Sets the size of the op about to run, for the stuck-op report. */
    void opBytes(long bytes) {
        waitBytes = bytes;
    }

    /** What this rank waits for in shared memory now, or null: op, number, start, size and the world ranks not there yet. */
    record Wait(String op, long seq, long sinceNanos, long bytes, int[] worldPeers) {
    }

    /** The current wait, or null (read by the stuck-op monitor). */
    Wait currentWait() {
        return waiter.current(waitBytes);
    }

    /** Why the communicator was aborted (comm.abort(), an abort notice, this rank declared failed), or null. */
    volatile String aborted;

    // peers' files, per comm rank: a small LRU each
    private final PeerFiles files;

    // per op (ops run one at a time): every rank's buffers of it (mapped here), read by the op classes
    final MemorySegment[] sendSeg;
    final long[] sendOff;
    final MemorySegment[] recvSeg;
    final long[] recvOff;
    /** Where each rank's descriptor of the current op is (byte offset in the control mapping). */
    private final long[] descAt;
    /** Private scratch chunk of {@link #SCRATCH_BYTES} reductions go through (and a 0-byte peer buffer's stand-in). */
    final MemorySegment scratch;
    /** The answer of {@link #where}: file and offset in it. */
    private final long[] loc = new long[2];
    /** Where this rank's buffers of the current op lie ({@link #sendAt}, {@link #recvAt}; file -1: none), for {@link #arrive}. */
    private long sendFile;
    private long sendOffset;
    private long recvFile;
    private long recvOffset;
    final ZeroCopyStaging buffers;
    private final ZeroCopyWaiter waiter;

    /** The ops, by kind (one instance each per communicator). */
    final ZeroCopyReductions reductions;
    final ZeroCopyDataMovement movement;
    final ZeroCopyBlockTables tables;

    private final ZeroCopyTurn turn;

    /** Ops that ran in shared memory / fell back to the transport (diagnostics and tests). */
    /** Test hook: the one-step all-reduce limit, instead of the one this host's oversubscription gives (-1: none). */
    volatile long oneStepMaxOverride = -1;

    /** All-reduces of up to this many bytes go in one step ({@link ZeroCopyReductions#ONE_STEP_MAX}). */
    long oneStepMax() {
        long forced = oneStepMaxOverride;
        if (forced >= 0) return Math.min(forced, ZeroCopyStaging.SLOT_MAX);
        return transport.oversubscribed() ? ZeroCopyReductions.ONE_STEP_MAX_OVERSUBSCRIBED : ZeroCopyReductions.ONE_STEP_MAX;
    }

    volatile long zeroCopyOps;
    volatile long fallbackOps;
    /** Of the zero-copy ops, all-reduces that went chunk by chunk through staging rings ({@link ZeroCopyPipeline}). */
    volatile long pipelinedOps;

    private ZeroCopyEngine(PeerTransport transport, MemoryPool pool, Store store, String storeKey,
                           Path dir, Duration timeout, Duration attachTimeout, int rank, int n, int[] world, long commId) {
        this.transport = transport;
        this.pool = pool;
        this.control = new ZeroCopyControl(store, storeKey, dir, rank, n, commId);
        this.timeoutNanos = timeout.toNanos();
        this.attachTimeout = attachTimeout;
        this.rank = rank;
        this.n = n;
        this.world = world;
        this.commId = commId;
        this.files = new PeerFiles(dir, rank, n);
        this.turn = new ZeroCopyTurn(rank, timeoutNanos);
        this.sendSeg = new MemorySegment[n];
        this.sendOff = new long[n];
        this.recvSeg = new MemorySegment[n];
        this.recvOff = new long[n];
        this.descAt = new long[n];
        this.scratch = Arena.ofAuto().allocate(SCRATCH_BYTES, 128);
        this.buffers = new ZeroCopyStaging(pool, rank);
        this.waiter = new ZeroCopyWaiter(this, transport, world, descAt, timeoutNanos);
        // last: they copy the fields above
        this.reductions = new ZeroCopyReductions(this);
        this.movement = new ZeroCopyDataMovement(this);
        this.tables = new ZeroCopyBlockTables(this);
    }

    /**
     * The engine of a communicator, or null if it cannot have one. Rank 0 creates the control mapping now and
     * publishes its name under {@code storeKey}; if it cannot, it publishes that, and every rank's engine stays off.
     */
    static ZeroCopyEngine create(PeerTransport transport, MemoryPool pool, Store store, String storeKey,
                                 Duration timeout, Duration attachTimeout, int rank, int n, int[] world, long commId) {
        Path dir = transport.shmDir();
        if (dir == null || n < 2) return null;
        ZeroCopyEngine e = new ZeroCopyEngine(transport, pool, store, storeKey, dir, timeout, attachTimeout, rank, n, world, commId);
        if (rank == 0) {
            e.ctrl = e.control.create();
            if (e.ctrl == null) e.disabled = true;
        }
        return e;
    }

    // ------------------------------------------------------------------------------------------ turn

    /** Waits until the op of {@code ticket} may run (every earlier ticket has left). */
    void enter(long ticket, String op) {
        turn.enter(ticket, op);
    }

    /** The op of {@code ticket} is over (however it ended): the next may run. */
    void leave(long ticket) {
        turn.leave(ticket);
    }

    /** The op of {@code ticket} will never run (its queue refused or skipped it): its turn passes by itself. */
    void skip(long ticket) {
        turn.skip(ticket);
    }

    // ------------------------------------------------------------------------------------------ frame helpers


    /**
     * What this rank offers the others to read: {@code bytes} of {@code seg} from {@code off}: {@code seg} itself if they
     * are registered (or nothing will run here, or the pool gives no staging buffer: the op then falls back), else their
     * adopted view if the pool has adopted them (256 KiB and more, from their second op on), else a copy at the start of
     * the staging buffer. {@code mayAlias}: what the rank writes in the op does not overlap these bytes (a copy would
     * hide an overlap from the op's checks; an adopted view shares the caller's pages, so it must not).
     */
    MemorySegment offer(MemorySegment seg, long off, long bytes, boolean want, boolean mayAlias) {
        if (!capable || !want || bytes == 0 || where(seg, off, bytes)) return seg;
        MemorySegment adopted = mayAlias && bytes >= MemoryPool.ADOPT_MIN_BYTES ? pool.adopted(seg, off, bytes) : null;
        if (adopted != null) {
            pool.syncAdopted(seg, off, adopted, bytes, true);
            return adopted;
        }
        MemorySegment staged = buffers.staging(bytes);
        if (staged == null) return seg;
        MemorySegment.copy(seg, off, staged, 0, bytes);
        return staged;
    }

    /** Attaches at the first op; false (nothing published) if the engine is off for this communicator. */
    boolean ready(String op) {
        if (!disabled && !attached) attach(op);
        if (disabled) {
            fallbackOps++;
            return false;
        }
        files.nextOp();
        sendFile = -1;
        sendOffset = 0;
        recvFile = -1;
        recvOffset = 0;
        return true;
    }

    /**
     * If {@code bytes} of {@code seg} from {@code off} lie in the pool: records where for this rank's descriptor (its
     * send buffer) and returns {@link ControlLayout#F_SEND}; else 0 (the descriptor says no buffer).
     */
    int sendAt(MemorySegment seg, long off, long bytes) {
        if (!where(seg, off, bytes)) return 0;
        sendFile = loc[0];
        sendOffset = loc[1];
        return ControlLayout.F_SEND;
    }

    /** As {@link #sendAt}, for the receive buffer: {@link ControlLayout#F_RECV} or 0. */
    int recvAt(MemorySegment seg, long off, long bytes) {
        if (!where(seg, off, bytes)) return 0;
        recvFile = loc[0];
        recvOffset = loc[1];
        return ControlLayout.F_RECV;
    }

    /** A barrier: every rank's descriptor of it is visible, so every rank has called it. False: use the transport's. */
    boolean barrier(long seq, int fp, String op) {
        if (!ready(op)) return false;
        int all = arrive(seq, fp, op, base(true));
        if ((all & ControlLayout.F_CAPABLE) == 0) return fellBack();
        zeroCopyOps++;
        return true;
    }

    boolean fellBack() {
        fallbackOps++;
        return false;
    }

    int base(boolean want) {
        return (capable ? ControlLayout.F_CAPABLE : 0) | (want ? ControlLayout.F_WANT : 0);
    }

    /** Where the first {@code bytes} of {@code seg} lie in the pool ({@link #loc}); 0 bytes are anywhere. */
    boolean where(MemorySegment seg, long bytes) {
        return where(seg, 0, bytes);
    }

    /** Where {@code bytes} of {@code seg} from {@code off} on lie in the pool ({@link #loc}); 0 bytes are anywhere. */
    boolean where(MemorySegment seg, long off, long bytes) {
        if (bytes == 0) {
            loc[0] = -1;
            loc[1] = 0;
            return true;
        }
        if (!pool.locate(seg, off + bytes, loc)) return false;
        loc[1] += off;
        return true;
    }

    /**
     * Publishes this rank's descriptor (its buffers as {@link #sendAt} and {@link #recvAt} recorded them) and waits for
     * every rank's; checks the fingerprints (throws {@link CollectiveMismatchException} everywhere on a difference) and
     * returns the AND of every rank's flags.
     */
    int arrive(long seq, int fp, String op, int flags) {
        long ticket = opTicket();
        long d = ControlLayout.descriptor(rank, ticket);
        ctrl.set(ValueLayout.JAVA_INT, d + ControlLayout.FINGERPRINT_OFFSET, fp);
        ctrl.set(ValueLayout.JAVA_INT, d + ControlLayout.FLAGS_OFFSET, flags);
        ctrl.set(ValueLayout.JAVA_LONG, d + ControlLayout.SEND_FILE_OFFSET, sendFile);
        ctrl.set(ValueLayout.JAVA_LONG, d + ControlLayout.SEND_BUFFER_OFFSET, sendOffset);
        ctrl.set(ValueLayout.JAVA_LONG, d + ControlLayout.RECV_FILE_OFFSET, recvFile);
        ctrl.set(ValueLayout.JAVA_LONG, d + ControlLayout.RECV_BUFFER_OFFSET, recvOffset);
        LONG.setRelease(ctrl, d + ControlLayout.SEQ_OFFSET, seq);
        descAt[rank] = d;
        waiter.wakeSleepers();
        waiter.await(ZeroCopyWaiter.ARRIVE, seq, op);
        if (rank == 0) control.unlink(); // every rank has mapped it
        // every rank sees the same descriptors, so every rank decides the same
        int all = -1;
        boolean mismatch = false;
        for (int p = 0; p < n; p++) {
            long at = descAt[p];
            if (at < 0 || (int) ctrl.get(ValueLayout.JAVA_INT, at + ControlLayout.FINGERPRINT_OFFSET) != fp) mismatch = true;
            else all &= ctrl.get(ValueLayout.JAVA_INT, at + ControlLayout.FLAGS_OFFSET);
        }
        if (mismatch) throw mismatch(seq, op);
        if ((all & ControlLayout.F_CAPABLE) == 0) {
            if (!disabled) LOG.info("rank {}: communicator {}: a rank has no shared-memory connection to every other; collectives go "
                    + "through the transport", rank, commId);
            disabled = true;
        }
        return all;
    }

    long opTicket() {
        return turn.current();
    }

    int flagsOf(int p) {
        return ctrl.get(ValueLayout.JAVA_INT, descAt[p] + ControlLayout.FLAGS_OFFSET);
    }

    /** This rank's part is over (or failed): say so, wait until every rank's is, and fail if a peer's failed. */
    void finish(long seq, String op, boolean ok) {
        long me = ControlLayout.slot(rank);
        if (!ok) LONG.setRelease(ctrl, me + ControlLayout.ERROR_OFFSET, seq);
        LONG.setRelease(ctrl, me + ControlLayout.DONE_OFFSET, seq);
        waiter.wakeSleepers();
        if (ok) {
            zeroCopyOps++;
            waiter.await(ZeroCopyWaiter.DONE_PHASE, seq, op);
            failIfPeerFailed(seq, op);
        } else {
            // an exception is on its way out: still do not return while peers use this rank's buffers
            try {
                waiter.await(ZeroCopyWaiter.DONE_PHASE, seq, op);
            } catch (RuntimeException e) {
                LOG.debug("rank {}: {} failed, and so did waiting for the others: {}", rank, op, e.toString());
            }
        }
    }

    /**
     * This rank's part of a one-step op is over (or failed): say so and return at once. Only for ops whose every rank
     * computes its own result from inputs copied before it arrived, so no rank's result depends on another's part.
     */
    void finishAlone(long seq, boolean ok) {
        long me = ControlLayout.slot(rank);
        if (!ok) LONG.setRelease(ctrl, me + ControlLayout.ERROR_OFFSET, seq);
        LONG.setRelease(ctrl, me + ControlLayout.DONE_OFFSET, seq);
        waiter.wakeSleepers();
        if (ok) zeroCopyOps++;
    }

    /** Waits until every rank is done with op {@code seq} (at once if it is: the usual case). */
    void awaitDone(long seq, String op) {
        waiter.await(ZeroCopyWaiter.DONE_PHASE, seq, op);
    }

    /** Publishes that this rank has done step {@code k} of the pipelined op {@code seq}. */
    void step(long seq, int k) {
        LONG.setRelease(ctrl, ControlLayout.slot(rank) + ControlLayout.STEP_OFFSET, seq << ControlLayout.STEP_BITS | k);
        waiter.wakeSleepers();
    }

    /** Waits until every rank has done step {@code k} of the pipelined op {@code seq}; fails if a peer failed in it. */
    void awaitStep(long seq, int k, String op) {
        waiter.awaitStep(seq, seq << ControlLayout.STEP_BITS | k, op);
        failIfPeerFailed(seq, op);
    }

    /** Throws if a peer's error word names op {@code seq}: it failed in its part, so the result is incomplete. */
    private void failIfPeerFailed(long seq, String op) {
        for (int p = 0; p < n; p++) {
            if (p != rank && (long) LONG.getAcquire(ctrl, ControlLayout.slot(p) + ControlLayout.ERROR_OFFSET) == seq) {
                throw new HcommException("rank " + rank + ": " + op + " (collective #" + seq + ", shared memory): rank " + p
                        + " failed in its part of it; the result is incomplete");
            }
        }
    }

    /** Rank {@code q}'s buffer: this rank's own segment, or the peer's file mapped here (from its descriptor). */
    void map(boolean send, MemorySegment own, long bytes) {
        for (int q = 0; q < n; q++) {
            if (q == rank) {
                if (send) {
                    sendSeg[q] = own;
                    sendOff[q] = 0;
                } else {
                    recvSeg[q] = own;
                    recvOff[q] = 0;
                }
            } else {
                peerBuffer(q, send, bytes);
            }
        }
    }

    /** Maps (or finds) peer {@code q}'s send or receive buffer of {@code bytes} into {@link #sendSeg}/{@link #recvSeg}. */
    void peerBuffer(int q, boolean send, long bytes) {
        long at = descAt[q];
        long file = ctrl.get(ValueLayout.JAVA_LONG, at + (send ? ControlLayout.SEND_FILE_OFFSET : ControlLayout.RECV_FILE_OFFSET));
        long offset = ctrl.get(ValueLayout.JAVA_LONG, at + (send ? ControlLayout.SEND_BUFFER_OFFSET : ControlLayout.RECV_BUFFER_OFFSET));
        MemorySegment seg;
        if (bytes == 0) {
            seg = scratch;
            offset = 0;
        } else {
            seg = files.map(q, file);
            if (offset < 0 || offset > seg.byteSize() - bytes) {
                throw new HcommException("rank " + rank + ": rank " + q + " published a buffer of [" + offset + ", +" + bytes
                        + ") in a file of " + seg.byteSize() + " bytes");
            }
        }
        if (send) {
            sendSeg[q] = seg;
            sendOff[q] = offset;
        } else {
            recvSeg[q] = seg;
            recvOff[q] = offset;
        }
    }

    // ------------------------------------------------------------------------------------------ waiting


    /**
     * Op {@code seq}, which this rank refused (see {@link CollectiveFrame#refuse}): in its turn, a descriptor with
     * {@code fingerprint} (which matches nobody's), so every other rank's op ends with a mismatch. It waits, as every
     * op's arrival does, until every rank has published its descriptor of this op: a rank must not publish two ops ahead
     * of one that still reads its descriptors (they take turns in two slots).
     */
    void refuse(long seq, int fingerprint, String op) {
        enter(seq, op);
        try {
            if (!ready(op)) return;
            sendFile = -1;
            recvFile = -1;
            arrive(seq, fingerprint, op, 0);
        } catch (CollectiveMismatchException expected) {
            // the others called the op as it should be: they fail with the refusal, this rank with its own exception
        } finally {
            leave(seq);
        }
    }

    /** The call of the op in this rank's turn now (set by the frame): its arguments explain a mismatch. */
    volatile CollectiveCall current;

    /** Names the rank whose collective differs, or that never came to this one, alike on every rank. */
    private CollectiveMismatchException mismatch(long seq, String op) {
        int[] fps = new int[n];
        for (int p = 0; p < n; p++) {
            if (descAt[p] < 0) {
                return new CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq + " of this communicator): rank "
                        + p + " called another collective here (one that does not run in shared memory), or left this one after an error");
            }
            fps[p] = ctrl.get(ValueLayout.JAVA_INT, descAt[p] + ControlLayout.FINGERPRINT_OFFSET);
        }
        for (int p = 0; p < n; p++) {
            // not this rank's own refusal: it never sends itself the notice (its caller has its own exception), and
            // waiting for it cost every refusing rank REFUSAL_WAIT_MILLIS
            String why = p == rank || CollectiveOp.refusedOp(fps[p]) == null ? null : refusal(seq, p);
            if (why != null) return new CollectiveMismatchException("rank " + rank + ": " + why);
        }
        CollectiveCall c = current;
        return new CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq + " of this communicator): "
                + (c != null && c.seq == seq ? c.verdict(fps, rank) : CollectiveOp.describeMismatch(fps)));
    }

    /** How long a rank waits for the words of a peer's refusal (sent before its descriptor, so normally there at once). */
    private static final long REFUSAL_WAIT_MILLIS = 2_000;

    /** The notice rank {@code p} sent when it refused op {@code seq} (what was wrong with its arguments), or null. */
    private String refusal(long seq, int p) {
        byte[] text = new byte[TransportLinks.NOTICE_BYTES];
        try {
            Status st = transport.recv(commId | (2L << 62), world[p], (int) (seq & 0x7fffffff), MemorySegment.ofArray(text))
                    .await(Duration.ofMillis(REFUSAL_WAIT_MILLIS));
            return new String(text, 0, (int) st.bytes(), java.nio.charset.StandardCharsets.UTF_8);
        } catch (RuntimeException e) {
            return null;
        }
    }

    // ------------------------------------------------------------------------------------------ attach

    private void attach(String op) {
        try {
            if (ctrl == null) {
                ctrl = control.map(attachTimeout);
                if (ctrl == null) {
                    disabled = true;
                    attached = true;
                    return;
                }
            }
            // connect to every peer: the connection tells us of its death and carries our doorbell
            boolean ok = true;
            long deadline = System.nanoTime() + attachTimeout.toNanos();
            for (int p = 0; p < n; p++) {
                if (p == rank) continue;
                String kind = transport.connect(world[p], deadline);
                files.prefix[p] = transport.peerFilePrefix(world[p]);
                if (!"shm".equals(kind) || files.prefix[p] == null) ok = false;
            }
            capable = ok;
            if (!ok) LOG.info("rank {}: communicator {}: not every peer is connected through shared memory; no zero-copy collectives", rank, commId);
            attached = true;
        } catch (PeerFailedException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw new HcommException("rank " + rank + ": " + op + ": cannot attach to the shared-memory control file of communicator "
                    + commId + ": " + e.getMessage(), e);
        }
    }

    /**
     * The communicator was aborted: a rank waiting in a shared-memory op stops waiting and fails with
     * {@link CommAbortedException}; ops after it fail before they wait (the communicator refuses them).
     */
    void abort(String why) {
        aborted = why;
        transport.wakeLocal(); // a waiter blocked in this rank's progress engine looks again
    }

    /** At most this long, a closing rank waits for peers still to read its input of the last one-step all-reduce. */
    private static final long SLOT_READERS_WAIT_NANOS = 10_000_000_000L;

    /**
     * Before the one-step slots go back to the pool (where the next allocation may write them) and, when the session
     * closes, their file is unlinked: a one-step all-reduce returns without waiting for the others, so a peer may not
     * have read this rank's input yet. Every peer has arrived at that op, so unless it died it is done within
     * microseconds; wait for that (bounded), as {@link #finish} would have.
     */
    private void awaitSlotReaders() {
        long last = reductions.lastOneStep();
        if (last <= 0 || ctrl == null || aborted != null || transport.isClosing()) return;
        long budget = Math.min(timeoutNanos, SLOT_READERS_WAIT_NANOS);
        try {
            // a waiter of its own: an op of another thread may still be using the engine's
            new ZeroCopyWaiter(this, transport, world, new long[n], budget).await(ZeroCopyWaiter.DONE_PHASE, last, "close");
        } catch (PeerFailedException | CommAbortedException ex) {
            LOG.debug("rank {}: communicator {} closes without waiting for a failed peer: {}", rank, commId, ex.getMessage());
        } catch (RuntimeException ex) {
            LOG.warn("rank {}: communicator {} closes while a peer may still read its last small all-reduce input: {}", rank,
                    commId, ex.getMessage());
        }
    }

    /** Unmaps the control file and the peers' files (an op still running on another thread then fails, never crashes). */
    @Override
    public void close() {
        if (closed) return;
        awaitSlotReaders();
        closed = true;
        synchronized (turn) {
            control.unlink();
        }
        files.close();
        control.close();
        buffers.close();
    }
}