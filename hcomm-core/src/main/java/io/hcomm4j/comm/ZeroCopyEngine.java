package io.hcomm4j.comm;

import io.hcomm4j.CollectiveMismatchException;
import io.hcomm4j.CommAbortedException;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.algo.ZeroCopyCollectives;
import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.kernel.ReduceKernel;
import io.hcomm4j.memory.Buffer;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.memory.SharedFiles;
import io.hcomm4j.transport.SharedWait;
import io.hcomm4j.transport.TcpTransport;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
 * their first such op, and rank 0 unlinks it once every rank has used it. {@link ControlLayout} describes it: one
 * slot per rank (two descriptors, done, error, sleeping) and the block tables of the V forms.
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
 * <p><b>Waiting</b> goes through the transport's progress engine ({@link TcpTransport#await(SharedWait, long)}):
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
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();


    /** This rank is attached: its connections to every peer go through shared memory. */
    static final int F_CAPABLE = 1;
    /** This rank may run the op here (HCOMM_ALGO forces no other algorithm for it). */
    static final int F_WANT = 2;
    /** The op's send buffer (broadcast: its buffer) lies in the memory pool. */
    static final int F_SEND = 4;
    /** The op's receive buffer lies in the memory pool. */
    static final int F_RECV = 8;
    /** The op's buffers of this rank are the same memory or do not overlap in a way that would race. */
    static final int F_SAFE = 16;
    /** The op's send and receive buffer of this rank are the same memory (in place). */
    static final int F_IN_PLACE = 32;

    /** Broadcasts from this size on, with every rank's buffer registered, are copied in parallel slices. */
    static final long BCAST_SPLIT_MIN = 64 * 1024;
    /** Bytes of the private scratch chunk reductions go through (stays in L1/L2). */
    static final long SCRATCH_BYTES = 32 * 1024;

    private static final int ARRIVE = 1;
    private static final int DONE_PHASE = 2;

    private final TcpTransport transport;
    private final MemoryPool pool;
    private final Store store;
    private final String storeKey;
    private final Path dir;
    private final long timeoutNanos;
    private final Duration attachTimeout;
    final int rank;
    final int n;
    private final int[] world;
    private final long commId;

    // control mapping
    private Arena ctrlArena;
    private MemorySegment ctrl;
    private String ctrlName;
    private volatile boolean attached;
    private boolean capable;
    /** Set at an op where some rank was not capable (every rank sets it at the same op): no more descriptors. */
    private volatile boolean disabled;
    private boolean unlinked;
    private volatile boolean closed;
    /** The op this rank waits in for other ranks now (for the stuck-op report), or null; its number, start and size. */
    private volatile String waitOp;
    private volatile long waitSeq;
    private volatile long waitSince;
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
        String op = waitOp;
        if (op == null) return null;
        long seq = waitSeq;
        Waiter w = waiter;
        List<Integer> missing = new ArrayList<>();
        for (int p = 0; p < n; p++) if (p != rank && !w.ready(p)) missing.add(world[p]);
        int[] peers = missing.stream().mapToInt(Integer::intValue).toArray();
        return new Wait(op, seq, waitSince, waitBytes, peers);
    }

    /** Why the communicator was aborted (comm.abort(), an abort notice, this rank declared failed), or null. */
    private volatile String aborted;

    // peers' files, per comm rank: a small LRU each
    private final PeerFiles files;

    // per op (ops run one at a time)
    private final MemorySegment[] sendSeg;
    private final long[] sendOff;
    private final MemorySegment[] recvSeg;
    private final long[] recvOff;
    /** Where each rank's descriptor of the current op is (byte offset in the control mapping). */
    private final long[] descAt;
    private final MemorySegment scratch;
    /** Scratch for large slices (chunks of {@link ZeroCopyCollectives#STREAMING_COPY_MIN} bytes or more); made on first use. */
    private MemorySegment big;

    /** The large scratch if a slice of {@code sliceBytes} is cut into streaming chunks, else null. */
    private MemorySegment bigScratch(long sliceBytes) {
        long min = ZeroCopyCollectives.STREAMING_COPY_MIN + 4096;
        if (sliceBytes < 2 * min) return null;
        // chunks are at most twice the minimum (equal pieces of a slice of at least two minimums)
        if (big == null) big = Arena.ofAuto().allocate(2 * min + 4096, 4096);
        return big;
    }
    private final long[] loc = new long[2];
    private final long[] oneLen = new long[1];
    private final Waiter waiter = new Waiter();

    private final ZeroCopyTurn turn;

    /** Ops that ran in shared memory / fell back to the transport (diagnostics and tests). */
    volatile long zeroCopyOps;
    volatile long fallbackOps;

    private ZeroCopyEngine(TcpTransport transport, MemoryPool pool, Store store, String storeKey,
                           Path dir, Duration timeout, Duration attachTimeout, int rank, int n, int[] world, long commId) {
        this.transport = transport;
        this.pool = pool;
        this.store = store;
        this.storeKey = storeKey;
        this.dir = dir;
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
    }

    /**
     * The engine of a communicator, or null if it cannot have one. Rank 0 creates the control mapping now and
     * publishes its name under {@code storeKey}; if it cannot, it publishes that, and every rank's engine stays off.
     */
    static ZeroCopyEngine create(TcpTransport transport, MemoryPool pool, Store store, String storeKey,
                                 Duration timeout, Duration attachTimeout, int rank, int n, int[] world, long commId) {
        Path dir = transport.shmDir();
        if (dir == null || n < 2) return null;
        ZeroCopyEngine e = new ZeroCopyEngine(transport, pool, store, storeKey, dir, timeout, attachTimeout, rank, n, world, commId);
        if (rank == 0) e.createControl();
        return e;
    }

    private void createControl() {
        String name = SharedFiles.newName();
        long bytes = (ControlLayout.length(n) + 4095) / 4096 * 4096;
        Arena arena = Arena.ofShared();
        try {
            MemorySegment seg = SharedFiles.create(dir, name, bytes, arena);
            ControlLayout.writeHeader(seg, n, commId);
            ctrlArena = arena;
            ctrl = seg;
            ctrlName = name;
            store.set(storeKey, name.getBytes(StandardCharsets.US_ASCII));
        } catch (IOException | RuntimeException ex) {
            LOG.warn("rank {}: cannot set up zero-copy collectives for communicator {} ({}); they go through the transport",
                    rank, commId, ex.toString());
            disabled = true;
            if (ctrl != null) unlinkControl();
            closeQuietly(arena);
            ctrl = null;
            try {
                store.set(storeKey, new byte[] {'!'});
            } catch (RuntimeException ignored) {
                // the others then fail to attach and say so
            }
        }
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

    // ------------------------------------------------------------------------------------------ ops

    /**
     * All-reduce of {@code count} elements. Returns true if it ran here; false if the caller must run the transport
     * algorithm (under the same ticket, before {@link #leave}).
     */
    boolean allReduce(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long count, ReduceKernel k,
                      int avg, boolean want) {
        if (!ready(op)) return false;
        long bytes = count * k.type().byteSize();
        int flags = base(want);
        long sf = -1, so = 0, rf = -1, ro = 0;
        MemorySegment out = recv;
        MemorySegment staged = capable && want && !(where(send, bytes) && where(recv, bytes)) ? staging(bytes) : null;
        if (staged != null) {
            // heap arrays and other unregistered memory: through a registered buffer of this rank, in place
            MemorySegment.copy(send, 0, staged, 0, bytes);
            send = staged;
            recv = staged;
        }
        if (where(send, bytes)) {
            flags |= F_SEND;
            sf = loc[0];
            so = loc[1];
        }
        if (where(recv, bytes)) {
            flags |= F_RECV;
            rf = loc[0];
            ro = loc[1];
        }
        if (sameOrDisjoint(send, recv, bytes)) flags |= F_SAFE;
        if (sameAddress(send, 0, recv, 0)) flags |= F_IN_PLACE;
        int all = arrive(seq, fp, op, flags, sf, so, rf, ro);
        int need = F_CAPABLE | F_WANT | F_SEND | F_RECV | F_SAFE;
        if ((all & need) != need) return fellBack();
        boolean ok = false;
        try {
            map(true, send, bytes);
            map(false, recv, bytes);
            // in place on every rank, each output line was just read as an input and is still in the cache, so small
            // chunks write it there (no extra read) and reading and writing back overlap in one pass; out of place,
            // outputs are written with streaming copies of large chunks instead
            MemorySegment big = (all & F_IN_PLACE) != 0 ? null : bigScratch(bytes / n);
            ZeroCopyCollectives.allReduce(sendSeg, sendOff, recvSeg, recvOff, rank, n, count, k, avg, scratch, big);
            ok = true;
        } finally {
            finish(seq, op, ok);
        }
        // every rank is done writing into the staging buffer (finish waited), and none starts the next op before this
        // rank arrives at it
        if (staged != null) MemorySegment.copy(staged, 0, out, 0, bytes);
        return true;
    }

    /**
     * This rank's registered staging buffer, at least {@code bytes} long (grown by powers of two, kept for the next
     * ops), or null if the pool cannot give one (its limit; then the op goes through the transport).
     */
    private MemorySegment staging(long bytes) {
        if (bytes == 0) return null;
        if (stage != null && stage.byteSize() >= bytes) return stage.segment();
        long size = Math.max(STAGE_MIN, Long.highestOneBit(bytes - 1) << 1);
        Buffer next;
        try {
            next = pool.allocate(size);
        } catch (RuntimeException e) {
            if (!stageRefused) LOG.info("rank {}: no staging buffer of {} bytes for zero-copy collectives on unregistered "
                    + "memory ({}); those go through the transport", rank, size, e.getMessage());
            stageRefused = true;
            return null;
        }
        if (stage != null) stage.close();
        stage = next;
        return stage.segment();
    }

    /** Smallest staging buffer (a few small ops do not each grow it). */
    static final long STAGE_MIN = 64 * 1024;
    /** Registered memory that unregistered buffers of an op are copied through (ops run one at a time). */
    private Buffer stage;
    private boolean stageRefused;

    /**
     * Reduce-scatter: block {@code r} (elements {@code [at(r), at(r+1))} of the send buffers) goes to rank {@code r}. With
     * {@code counts == null} every block has {@code blockCount} elements; else block {@code r} has {@code counts[r]}.
     */
    boolean reduceScatter(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long blockCount, long[] counts,
                          ReduceKernel k, int avg, boolean want) {
        if (!ready(op)) return false;
        int es = k.type().byteSize();
        long from = 0;
        long total = 0;
        for (int r = 0; r < n; r++) {
            long c = counts == null ? blockCount : counts[r];
            if (r == rank) from = total;
            total += c;
        }
        long mine = counts == null ? blockCount : counts[rank];
        long totalBytes = total * es;
        int flags = base(want);
        long sf = -1, so = 0;
        send = offer(send, 0, totalBytes, want);
        if (where(send, totalBytes)) {
            flags |= F_SEND;
            sf = loc[0];
            so = loc[1];
        }
        // this rank writes its receive buffer while the others read every block of its send buffer but its own
        if (disjoint(recv, 0, mine * es, send, totalBytes) || sameAddress(send, from * es, recv, 0)) flags |= F_SAFE;
        int all = arrive(seq, fp, op, flags, sf, so, -1, 0);
        int need = F_CAPABLE | F_WANT | F_SEND | F_SAFE;
        if ((all & need) != need) return fellBack();
        boolean ok = false;
        try {
            map(true, send, totalBytes);
            ZeroCopyCollectives.reduceScatter(sendSeg, sendOff, n, from, from + mine, recv, 0, k, avg, scratch,
                    bigScratch(mine * k.type().byteSize()));
            ok = true;
        } finally {
            finish(seq, op, ok);
        }
        return true;
    }

    /**
     * All-gather, every rank pulling the others' blocks: equal blocks of {@code blockBytes} ({@code off == null}), or
     * block {@code r} of {@code len[r]} bytes at {@code off[r]} of the receive buffer. {@code mine} is this rank's
     * block to contribute (its send buffer, or its own block of the receive buffer when in place).
     */
    boolean allGather(long seq, int fp, String op, MemorySegment mine, long mineOff, MemorySegment recv, long blockBytes, long[] off,
                      long[] len, boolean want) {
        if (!ready(op)) return false;
        long myOff = off == null ? rank * blockBytes : off[rank];
        long myLen = off == null ? blockBytes : len[rank];
        long recvBytes = 0;
        for (int r = 0; r < n; r++) recvBytes = Math.max(recvBytes, off == null ? (r + 1) * blockBytes : off[r] + len[r]);
        int flags = base(want);
        long sf = -1, so = 0;
        MemorySegment offered = offer(mine, mineOff, myLen, want);
        if (offered != mine) {
            mine = offered;
            mineOff = 0;
        }
        if (where(mine, mineOff, myLen)) {
            flags |= F_SEND;
            sf = loc[0];
            so = loc[1];
        }
        // the others read this rank's block while it writes theirs into its receive buffer
        boolean inPlace = sameAddress(recv, myOff, mine, mineOff);
        if (inPlace || disjoint(mine, mineOff, myLen, recv, recvBytes)) flags |= F_SAFE;
        int all = arrive(seq, fp, op, flags, sf, so, -1, 0);
        int need = F_CAPABLE | F_WANT | F_SEND | F_SAFE;
        if ((all & need) != need) return fellBack();
        boolean ok = false;
        try {
            for (int q = 0; q < n; q++) {
                if (q != rank) peerBuffer(q, true, off == null ? blockBytes : len[q]);
            }
            if (myLen > 0 && !inPlace) MemorySegment.copy(mine, mineOff, recv, myOff, myLen);
            if (off == null) {
                oneLen[0] = blockBytes;
                ZeroCopyCollectives.allGather(sendSeg, sendOff, rank, n, recv, 0, null, oneLen);
            } else {
                ZeroCopyCollectives.allGather(sendSeg, sendOff, rank, n, recv, 0, off, len);
            }
            ok = true;
        } finally {
            finish(seq, op, ok);
        }
        return true;
    }

    /** Broadcast of {@code bytes} from {@code root}: the others copy from the root's buffer (in slices, in parallel, when all are registered). */
    boolean broadcast(long seq, int fp, String op, MemorySegment buf, long bytes, int root, boolean want) {
        if (!ready(op)) return false;
        int flags = base(want) | F_SAFE;
        long sf = -1, so = 0;
        MemorySegment from = rank == root ? offer(buf, 0, bytes, want) : buf;
        if (where(from, bytes)) {
            flags |= F_SEND;
            sf = loc[0];
            so = loc[1];
        }
        int all = arrive(seq, fp, op, flags, sf, so, -1, 0);
        int need = F_CAPABLE | F_WANT;
        if ((all & need) != need || (flagsOf(root) & F_SEND) == 0) return fellBack();
        boolean split = (all & F_SEND) != 0 && bytes >= BCAST_SPLIT_MIN;
        boolean ok = false;
        try {
            if (split) {
                map(true, from, bytes);
                ZeroCopyCollectives.broadcastSplit(sendSeg, sendOff, rank, n, root, bytes);
            } else if (rank != root && bytes > 0) {
                peerBuffer(root, true, bytes);
                MemorySegment.copy(sendSeg[root], sendOff[root], buf, 0, bytes);
            }
            ok = true;
        } finally {
            finish(seq, op, ok);
        }
        return true;
    }

    /**
     * Reduce to {@code root}: like the all-reduce, rank {@code r} reduces slice {@code r} of every rank's send buffer (in
     * rank order), but writes it into the root's receive buffer only. Unregistered memory is staged: a send buffer in the
     * first half of this rank's staging buffer, the root's receive buffer in the second (copied out once all are done).
     */
    boolean reduce(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long count, ReduceKernel k, int avg,
                   int root, boolean want) {
        if (!ready(op)) return false;
        int es = k.type().byteSize();
        long bytes = count * es;
        int flags = base(want);
        long sf = -1, so = 0, rf = -1, ro = 0;
        MemorySegment in = send;
        MemorySegment out = rank == root ? recv : null;
        long outOff = 0;
        boolean sendReg = where(send, bytes);
        boolean recvReg = rank != root || where(recv, bytes);
        MemorySegment staged = null;
        if (capable && want && bytes > 0 && !(sendReg && recvReg)) {
            staged = staging(2 * bytes);
            if (staged != null) {
                if (!sendReg) {
                    MemorySegment.copy(send, 0, staged, 0, bytes);
                    in = staged;
                }
                if (!recvReg) {
                    out = staged;
                    outOff = bytes;
                }
            }
        }
        if (where(in, bytes)) {
            flags |= F_SEND;
            sf = loc[0];
            so = loc[1];
        }
        if (rank != root) {
            flags |= F_RECV;
        } else if (where(out, outOff, bytes)) {
            flags |= F_RECV;
            rf = loc[0];
            ro = loc[1];
        }
        // the root's own slices are read (send) and written (recv) by the same rank; other overlaps would race
        if (rank != root || sameAddress(in, 0, out, outOff) || disjoint(in, 0, bytes, out.asSlice(outOff), bytes)) flags |= F_SAFE;
        int all = arrive(seq, fp, op, flags, sf, so, rf, ro);
        int need = F_CAPABLE | F_WANT | F_SEND | F_RECV | F_SAFE;
        if ((all & need) != need) return fellBack();
        boolean ok = false;
        try {
            map(true, in, bytes);
            if (rank == root) {
                recvSeg[root] = out;
                recvOff[root] = outOff;
            } else {
                peerBuffer(root, false, bytes);
            }
            long lo = ZeroCopyCollectives.sliceStart(count, n, rank, es);
            long hi = ZeroCopyCollectives.sliceStart(count, n, rank + 1, es);
            ZeroCopyCollectives.reduceScatter(sendSeg, sendOff, n, lo, hi, recvSeg[root], recvOff[root] + lo * es, k, avg,
                    scratch, bigScratch((hi - lo) * es));
            ok = true;
        } finally {
            finish(seq, op, ok);
        }
        if (rank == root && out == staged && staged != null) MemorySegment.copy(staged, bytes, recv, 0, bytes);
        return true;
    }

    /** Gather of equal blocks ({@code blockBytes} each) to {@code root}: {@link #gatherV} with block q at q * blockBytes. */
    boolean gather(long seq, int fp, String op, MemorySegment mine, MemorySegment recv, long blockBytes, int root, boolean want) {
        oneLen[0] = blockBytes;
        return gatherV(seq, fp, op, mine, recv, null, oneLen, root, want);
    }

    /**
     * Gather to {@code root}: rank q offers its block ({@code len[q]} bytes of its {@code mine}; staged if
     * unregistered), the root pulls every other rank's into {@code recv} at {@code off[q]} and copies its own. Every rank
     * knows every length; only the root's offsets are used. With {@code off == null} the blocks are equal, {@code len[0]}
     * bytes each, block q at {@code q * len[0]}.
     */
    boolean gatherV(long seq, int fp, String op, MemorySegment mine, MemorySegment recv, long[] off, long[] len, int root,
                    boolean want) {
        if (!ready(op)) return false;
        long myLen = off == null ? len[0] : len[rank];
        int flags = base(want) | F_SAFE;
        long sf = -1, so = 0;
        if (rank == root) {
            flags |= F_SEND; // nobody reads the root's block
        } else if (where(offer(mine, 0, myLen, want), myLen)) {
            flags |= F_SEND;
            sf = loc[0];
            so = loc[1];
        }
        int all = arrive(seq, fp, op, flags, sf, so, -1, 0);
        int need = F_CAPABLE | F_WANT | F_SEND;
        if ((all & need) != need) return fellBack();
        boolean ok = false;
        try {
            if (rank == root) {
                for (int q = 0; q < n; q++) {
                    if (q != rank) peerBuffer(q, true, off == null ? len[0] : len[q]);
                }
                if (myLen > 0) MemorySegment.copy(mine, 0, recv, off == null ? rank * myLen : off[rank], myLen);
                ZeroCopyCollectives.allGather(sendSeg, sendOff, rank, n, recv, 0, off, len);
            }
            ok = true;
        } finally {
            finish(seq, op, ok);
        }
        return true;
    }

    /** Scatter of equal blocks ({@code blockBytes} each) from {@code root}: {@link #scatterV} with block q at q * blockBytes. */
    boolean scatter(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long blockBytes, int root, boolean want) {
        oneLen[0] = blockBytes;
        return scatterV(seq, fp, op, send, null, oneLen, recv, root, want);
    }

    /**
     * Scatter from {@code root}: the root offers its send buffer (up to its largest {@code off + len}; staged if
     * unregistered) and publishes where each block lies; rank q copies its {@code len[q]} bytes from there into
     * {@code recv}. {@code off} is the root's (others pass anything), {@code len} everybody's. With {@code off == null}
     * the blocks are equal, {@code len[0]} bytes each, block q at {@code q * len[0]} (nothing to publish).
     */
    boolean scatterV(long seq, int fp, String op, MemorySegment send, long[] off, long[] len, MemorySegment recv, int root,
                     boolean want) {
        if (!ready(op)) return false;
        int flags = base(want) | F_SAFE;
        long sf = -1, so = 0;
        if (rank == root) {
            long total = off == null ? n * len[0] : 0;
            for (int q = 0; off != null && q < n; q++) total = Math.max(total, off[q] + len[q]);
            MemorySegment from = offer(send, 0, total, want);
            if (where(from, total)) {
                flags |= F_SEND;
                sf = loc[0];
                so = loc[1];
            }
            if (off != null) publishTable(off, len);
        }
        int all = arrive(seq, fp, op, flags, sf, so, -1, 0);
        int need = F_CAPABLE | F_WANT;
        if ((all & need) != need || (flagsOf(root) & F_SEND) == 0) return fellBack();
        boolean ok = false;
        try {
            long at = blockAt(root, rank, off, len);
            long bytes = blockLen(root, rank, off, len);
            if (off != null && bytes != len[rank]) {
                throw new IllegalArgumentException("rank " + rank + ": " + op + ": the root (rank " + root + ") sends " + bytes
                        + " bytes to this rank, whose count says " + len[rank]);
            }
            if (bytes > 0) {
                if (rank == root) {
                    MemorySegment.copy(send, at, recv, 0, bytes);
                } else {
                    peerBuffer(root, true, at + bytes);
                    MemorySegment.copy(sendSeg[root], sendOff[root] + at, recv, 0, bytes);
                }
            }
            ok = true;
        } finally {
            finish(seq, op, ok);
        }
        return true;
    }

    /**
     * All-to-all: every rank offers its send buffer ({@code sendBytes}; staged if unregistered) and publishes where its
     * block for each rank lies; each rank pulls its block of every rank's into {@code recv} at {@code rOff[q]} (own block
     * first, then the ranks after itself, so the ranks read different peers at a time), checking that the sender's
     * length is the one it expects. {@code recv} must not overlap {@code send} on any rank (else every rank takes the
     * transport). With {@code sOff == null} and {@code rOff == null} the blocks are equal, {@code sLen[0]} bytes each,
     * block q at {@code q * sLen[0]} on both sides (nothing to publish or check).
     */
    boolean allToAllV(long seq, int fp, String op, MemorySegment send, long[] sOff, long[] sLen, long sendBytes,
                      MemorySegment recv, long[] rOff, long[] rLen, long recvBytes, boolean want) {
        if (!ready(op)) return false;
        int flags = base(want);
        long sf = -1, so = 0;
        MemorySegment offered = offer(send, 0, sendBytes, want);
        if (where(offered, sendBytes)) {
            flags |= F_SEND;
            sf = loc[0];
            so = loc[1];
        }
        // the others read this rank's send buffer while it writes its receive buffer
        if (disjoint(offered, 0, sendBytes, recv, recvBytes)) flags |= F_SAFE;
        if (sOff != null) publishTable(sOff, sLen);
        int all = arrive(seq, fp, op, flags, sf, so, -1, 0);
        int need = F_CAPABLE | F_WANT | F_SEND | F_SAFE;
        if ((all & need) != need) return fellBack();
        boolean ok = false;
        try {
            for (int i = 0; i < n; i++) {
                int q = rank + i < n ? rank + i : rank + i - n; // own block first, then the next ranks
                long at = blockAt(q, rank, sOff, sLen);
                long bytes = blockLen(q, rank, sOff, sLen);
                if (sOff != null && bytes != rLen[q]) {
                    throw new IllegalArgumentException("rank " + rank + ": " + op + ": rank " + q + " sends " + bytes
                            + " bytes to this rank, whose recvCounts[" + q + "] says " + rLen[q]);
                }
                if (bytes == 0) continue;
                long to = rOff == null ? q * bytes : rOff[q];
                if (q == rank) {
                    MemorySegment.copy(offered, at, recv, to, bytes);
                } else {
                    peerBuffer(q, true, at + bytes);
                    MemorySegment.copy(sendSeg[q], sendOff[q] + at, recv, to, bytes);
                }
            }
            ok = true;
        } finally {
            finish(seq, op, ok);
        }
        return true;
    }

    /**
     * All-to-all of equal blocks ({@code blockBytes} each): {@link #allToAllV} with block q at q * blockBytes on both
     * sides. {@code recv} must not overlap {@code send} (checked by the caller).
     */
    boolean allToAll(long seq, int fp, String op, MemorySegment send, MemorySegment recv, long blockBytes, boolean want) {
        oneLen[0] = blockBytes;
        return allToAllV(seq, fp, op, send, null, oneLen, n * blockBytes, recv, null, oneLen, n * blockBytes, want);
    }

    /**
     * What this rank offers the others to read: {@code bytes} of {@code seg} from {@code off}: {@code seg} itself if they
     * are registered (or nothing will run here, or the pool gives no staging buffer: the op then falls back), else a copy
     * at the start of the staging buffer.
     */
    private MemorySegment offer(MemorySegment seg, long off, long bytes, boolean want) {
        if (!capable || !want || bytes == 0 || where(seg, off, bytes)) return seg;
        MemorySegment staged = staging(bytes);
        if (staged == null) return seg;
        MemorySegment.copy(seg, off, staged, 0, bytes);
        return staged;
    }

    // ------------------------------------------------------------------------------------------ steps

    /** Attaches at the first op; false (nothing published) if the engine is off for this communicator. */
    private boolean ready(String op) {
        if (!disabled && !attached) attach(op);
        if (disabled) {
            fallbackOps++;
            return false;
        }
        files.nextOp();
        return true;
    }

    /** A barrier: every rank's descriptor of it is visible, so every rank has called it. False: use the transport's. */
    boolean barrier(long seq, int fp, String op) {
        if (!ready(op)) return false;
        int all = arrive(seq, fp, op, base(true), -1, 0, -1, 0);
        if ((all & F_CAPABLE) == 0) return fellBack();
        zeroCopyOps++;
        return true;
    }

    private boolean fellBack() {
        fallbackOps++;
        return false;
    }

    private int base(boolean want) {
        return (capable ? F_CAPABLE : 0) | (want ? F_WANT : 0);
    }

    /** Where the first {@code bytes} of {@code seg} lie in the pool ({@link #loc}); 0 bytes are anywhere. */
    private boolean where(MemorySegment seg, long bytes) {
        return where(seg, 0, bytes);
    }

    /** Where {@code bytes} of {@code seg} from {@code off} on lie in the pool ({@link #loc}); 0 bytes are anywhere. */
    private boolean where(MemorySegment seg, long off, long bytes) {
        if (bytes == 0) {
            loc[0] = -1;
            loc[1] = 0;
            return true;
        }
        if (!pool.locate(seg, off + bytes, loc)) return false;
        loc[1] += off;
        return true;
    }

    private static boolean sameOrDisjoint(MemorySegment a, MemorySegment b, long bytes) {
        return sameAddress(a, 0, b, 0) || disjoint(a, 0, bytes, b, bytes);
    }

    /** {@code a + aOff} and {@code b + bOff} are the same address (both native). */
    private static boolean sameAddress(MemorySegment a, long aOff, MemorySegment b, long bOff) {
        return a.isNative() && b.isNative() && a.address() + aOff == b.address() + bOff;
    }

    /**
     * {@code aBytes} of {@code a} from {@code aOff} and the first {@code bBytes} of {@code b} do not overlap (a heap and
     * a native segment never do).
     */
    private static boolean disjoint(MemorySegment a, long aOff, long aBytes, MemorySegment b, long bBytes) {
        if (a.isNative() != b.isNative() || aBytes == 0 || bBytes == 0) return true;
        if (!a.isNative()) return a.heapBase().orElse(null) != b.heapBase().orElse(null);
        long x = a.address() + aOff;
        long y = b.address();
        return x + aBytes <= y || y + bBytes <= x;
    }

    /**
     * Publishes this rank's descriptor and waits for every rank's; checks the fingerprints (throws
     * {@link CollectiveMismatchException} everywhere on a difference) and returns the AND of every rank's flags.
     */
    private int arrive(long seq, int fp, String op, int flags, long sendFile, long sendOffset, long recvFile, long recvOffset) {
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
        wakeSleepers();
        await(ARRIVE, seq, op);
        if (rank == 0 && !unlinked) unlinkControl(); // every rank has mapped it
        // every rank sees the same descriptors, so every rank decides the same
        int all = -1;
        boolean mismatch = false;
        for (int p = 0; p < n; p++) {
            long at = descAt[p];
            if (at < 0 || (int) ctrl.get(ValueLayout.JAVA_INT, at + ControlLayout.FINGERPRINT_OFFSET) != fp) mismatch = true;
            else all &= ctrl.get(ValueLayout.JAVA_INT, at + ControlLayout.FLAGS_OFFSET);
        }
        if (mismatch) throw mismatch(seq, op);
        if ((all & F_CAPABLE) == 0) {
            if (!disabled) LOG.info("rank {}: communicator {}: a rank has no shared-memory connection to every other; collectives go "
                    + "through the transport", rank, commId);
            disabled = true;
        }
        return all;
    }

    private long opTicket() {
        return turn.current();
    }

    private int flagsOf(int p) {
        return ctrl.get(ValueLayout.JAVA_INT, descAt[p] + ControlLayout.FLAGS_OFFSET);
    }

    /** This rank's part is over (or failed): say so, wait until every rank's is, and fail if a peer's failed. */
    private void finish(long seq, String op, boolean ok) {
        long me = ControlLayout.slot(rank);
        if (!ok) LONG.setRelease(ctrl, me + ControlLayout.ERROR_OFFSET, seq);
        LONG.setRelease(ctrl, me + ControlLayout.DONE_OFFSET, seq);
        wakeSleepers();
        if (ok) {
            zeroCopyOps++;
            await(DONE_PHASE, seq, op);
            for (int p = 0; p < n; p++) {
                if (p != rank && (long) LONG.getAcquire(ctrl, ControlLayout.slot(p) + ControlLayout.ERROR_OFFSET) == seq) {
                    throw new HcommException("rank " + rank + ": " + op + " (collective #" + seq + ", shared memory): rank " + p
                            + " failed in its part of it; the result is incomplete");
                }
            }
        } else {
            // an exception is on its way out: still do not return while peers use this rank's buffers
            try {
                await(DONE_PHASE, seq, op);
            } catch (RuntimeException e) {
                LOG.debug("rank {}: {} failed, and so did waiting for the others: {}", rank, op, e.toString());
            }
        }
    }

    /** Rank {@code q}'s buffer: this rank's own segment, or the peer's file mapped here (from its descriptor). */
    private void map(boolean send, MemorySegment own, long bytes) {
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
    private void peerBuffer(int q, boolean send, long bytes) {
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

    /** Publishes this rank's block table (before {@link #arrive}, whose release store makes it visible). */
    private void publishTable(long[] off, long[] len) {
        long t = ControlLayout.table(n, rank, opTicket());
        for (int q = 0; q < n; q++) {
            ctrl.set(ValueLayout.JAVA_LONG, t + 8L * q, off[q]);
            ctrl.set(ValueLayout.JAVA_LONG, t + 8L * (n + q), len[q]);
        }
    }

    /** Where rank {@code p}'s block for rank {@code q} lies in its buffer: q * len[0] for equal blocks, else its table's. */
    private long blockAt(int p, int q, long[] off, long[] len) {
        return off == null ? q * len[0] : tableEntry(p, q, false);
    }

    /** The length of rank {@code p}'s block for rank {@code q}: len[0] for equal blocks, else its table's. */
    private long blockLen(int p, int q, long[] off, long[] len) {
        return off == null ? len[0] : tableEntry(p, q, true);
    }

    /** Offset ({@code length} false) or length of rank {@code p}'s block for rank {@code q}, from its published table. */
    private long tableEntry(int p, int q, boolean length) {
        return ctrl.get(ValueLayout.JAVA_LONG, ControlLayout.table(n, p, opTicket()) + 8L * (length ? n + q : q));
    }

    /** After a store others may wait for: wake every peer that sleeps (its flag is cleared here, so one bell per sleep). */
    private void wakeSleepers() {
        VarHandle.fullFence(); // orders the store before the flag loads (the sleeper: flag store, fence, loads)
        for (int p = 0; p < n; p++) {
            if (p == rank) continue;
            long f = ControlLayout.slot(p) + ControlLayout.SLEEPING_OFFSET;
            if ((int) INT.getAcquire(ctrl, f) != 0 && INT.compareAndSet(ctrl, f, 1, 0)) transport.wake(world[p]);
        }
    }

    private void await(int phase, long seq, String op) {
        Waiter w = waiter;
        w.phase = phase;
        w.seq = seq;
        w.next = 0;
        long now = System.nanoTime();
        long deadline = now + timeoutNanos;
        waitSeq = seq;
        waitSince = now;
        waitOp = op; // last: the stuck-op monitor reads it first
        boolean done;
        try {
            done = transport.await(w, deadline) && w.complete();
        } finally {
            waitOp = null;
        }
        if (done) return;
        // why it ended
        for (int p = 0; p < n; p++) {
            if (p != rank && transport.failed(world[p])) {
                PeerFailedException f = transport.failure(world[p], op + " (collective #" + seq + ", shared memory)");
                throw new PeerFailedException(f.getMessage(), List.of(p), f.getCause());
            }
        }
        String why = aborted;
        if (why != null) {
            throw new CommAbortedException("rank " + rank + ": " + op + " (collective #" + seq + ") failed: the communicator was aborted: " + why);
        }
        if (transport.isClosing() || closed) {
            throw new CommAbortedException("rank " + rank + ": " + op + " (collective #" + seq + ") failed: the session is closed");
        }
        List<Integer> missing = new ArrayList<>();
        for (int p = 0; p < n; p++) if (p != rank && !w.ready(p)) missing.add(p);
        throw new CommTimeoutException("rank " + rank + ": " + op + " (collective #" + seq + ", shared memory): rank(s) " + missing
                + (phase == ARRIVE ? " did not call it" : " did not finish it") + " within " + Duration.ofNanos(timeoutNanos)
                + " (HCOMM_TIMEOUT)");
    }

    /** What a rank waits for, as a {@link SharedWait} the progress engine polls. */
    private final class Waiter implements SharedWait {
        int phase;
        long seq;
        /** Every rank below this one is ready (ranks are looked at in order, each until it is). */
        int next;

        @Override
        public boolean done() {
            if (complete()) return true;
            // slow checks, only while something is missing
            if (transport.failures() != 0) {
                for (int p = 0; p < n; p++) if (p != rank && transport.failed(world[p])) return true;
            }
            return transport.isClosing() || closed || aborted != null;
        }

        boolean complete() {
            while (next < n) {
                if (next != rank && !ready(next)) return false;
                next++;
            }
            return true;
        }

        boolean ready(int p) {
            long s = ControlLayout.slot(p);
            if (phase == DONE_PHASE) return (long) LONG.getAcquire(ctrl, s + ControlLayout.DONE_OFFSET) >= seq;
            // the other parity first: a peer writes its descriptor of seq before the next one (and the one after that
            // only once this rank has published its next), so seeing a later seq there means this one shows here
            long t = opTicket();
            long other = ControlLayout.descriptor(p, t + 1);
            long mine = ControlLayout.descriptor(p, t);
            long so = (long) LONG.getAcquire(ctrl, other + ControlLayout.SEQ_OFFSET);
            long sm = (long) LONG.getAcquire(ctrl, mine + ControlLayout.SEQ_OFFSET);
            if (sm == seq) {
                descAt[p] = mine;
                return true;
            }
            if (so == seq) {
                descAt[p] = other;
                return true;
            }
            if (sm > seq || so > seq) {
                descAt[p] = -1; // the peer is past this op: it never came here
                return true;
            }
            return false;
        }

        @Override
        public boolean arm() {
            INT.setVolatile(ctrl, ControlLayout.slot(rank) + ControlLayout.SLEEPING_OFFSET, 1);
            VarHandle.fullFence();
            return done();
        }

        @Override
        public void disarm() {
            INT.setRelease(ctrl, ControlLayout.slot(rank) + ControlLayout.SLEEPING_OFFSET, 0);
        }
    }

    private CollectiveMismatchException mismatch(long seq, String op) {
        int[] fps = new int[n];
        boolean[] absent = new boolean[n];
        for (int p = 0; p < n; p++) {
            if (descAt[p] < 0) absent[p] = true;
            else fps[p] = ctrl.get(ValueLayout.JAVA_INT, descAt[p] + ControlLayout.FINGERPRINT_OFFSET);
        }
        for (int p = 0; p < n; p++) {
            if (absent[p]) {
                return new CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq + " of this communicator): rank "
                        + p + " called another collective here (one that does not run in shared memory), or left this one after an error");
            }
        }
        // name the rank that differs from the majority (ties: from rank 0), so every rank names the same one
        int odd = -1;
        for (int p = 0; p < n && odd < 0; p++) {
            int agree = 0;
            for (int q = 0; q < n; q++) if (fps[q] == fps[p]) agree++;
            if (agree * 2 <= n) {
                // p is in a minority; prefer it if some fingerprint has a strict majority
                for (int m = 0; m < n; m++) {
                    int c = 0;
                    for (int q = 0; q < n; q++) if (fps[q] == fps[m]) c++;
                    if (c * 2 > n) {
                        odd = p;
                        break;
                    }
                }
            }
        }
        if (odd < 0) {
            for (int p = 1; p < n; p++) {
                if (fps[p] != fps[0]) {
                    odd = p;
                    break;
                }
            }
        }
        int ref = odd == 0 ? 1 : 0;
        for (int p = 0; p < n; p++) {
            if (fps[p] != fps[odd]) {
                ref = p;
                break;
            }
        }
        return new CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq + " of this communicator): "
                + CollectiveOp.describeMismatch(odd, fps[odd], ref, fps[ref]));
    }

    // ------------------------------------------------------------------------------------------ attach

    private void attach(String op) {
        try {
            if (ctrl == null) {
                byte[] v = store.get(storeKey, attachTimeout);
                String name = new String(v, StandardCharsets.US_ASCII);
                if (name.equals("!")) {
                    disabled = true;
                    attached = true;
                    return;
                }
                Arena a = Arena.ofShared();
                try {
                    MemorySegment seg = SharedFiles.mapPeerFile(dir, name, a);
                    ControlLayout.verifyHeader(seg, name, n, commId);
                    ctrl = seg;
                    ctrlArena = a;
                } catch (IOException | RuntimeException e) {
                    closeQuietly(a);
                    throw e;
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

    private void unlinkControl() {
        unlinked = true;
        try {
            Files.deleteIfExists(dir.resolve(ctrlName));
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", ctrlName, e.toString());
        }
    }

    /** Unmaps the control file and the peers' files (an op still running on another thread then fails, never crashes). */
    /**
     * The communicator was aborted: a rank waiting in a shared-memory op stops waiting and fails with
     * {@link CommAbortedException}; ops after it fail before they wait (the communicator refuses them).
     */
    void abort(String why) {
        aborted = why;
        transport.wakeLocal(); // a waiter blocked in this rank's progress engine looks again
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        synchronized (turn) {
            if (rank == 0 && ctrlName != null && !unlinked) unlinkControl();
        }
        files.close();
        if (ctrlArena != null) closeQuietly(ctrlArena);
        Buffer b = stage;
        if (b != null) {
            try {
                b.close();
            } catch (RuntimeException e) {
                LOG.debug("rank {}: staging buffer not returned to the pool: {}", rank, e.toString());
            }
        }
    }

    private static void closeQuietly(Arena a) {
        PeerFiles.closeQuietly(a);
    }
}
