package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.algo.AllGather;
import io.hcomm4j.algo.AllToAll;
import io.hcomm4j.algo.Broadcast;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.algo.CollectiveLinks;
import io.hcomm4j.algo.HalvingDoubling;
import io.hcomm4j.algo.Reductions;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.kernel.ReduceKernel;
import io.hcomm4j.algo.Rooted;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import io.hcomm4j.Status;
import io.hcomm4j.Stream;
import io.hcomm4j.transport.TcpTransport;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** A communicator: argument checks, then the transport. Ranks equal world ranks (sub-communicators come later). */
final class CommunicatorImpl implements Communicator {
    private final Session session;
    private final TcpTransport transport;
    private final long commId;
    private final int rank;
    private final int size;
    private volatile boolean closed;
    /** Collective traffic of this communicator: its id with the top bit set, apart from user point-to-point. */
    private final long collectiveChannel;
    /** Where a rank that detects a collective mismatch tells the others (tag = the op's sequence number). */
    private final long noticeChannel;
    private final AtomicLong collectiveSeq = new AtomicLong();
    private ExecutorService collectiveThread;

    static final long BCAST_CHUNK = 1 << 20;
    /**
     * Ring chunk, in elements, for blocks of {@code blockBytes}: a quarter of a block, so every step pipelines
     * (reducing one chunk overlaps receiving the next), within [256 KiB, 1 MiB] (measured at 16 MiB on 2 ranks:
     * 256 KiB chunks 1.25-1.37 GB/s busbw, 1 MiB chunks 1.72-1.88, 64 KiB 0.95).
     */
    static long ringChunkElems(long blockBytes, int elemBytes) {
        long bytes = Math.max(256 * 1024, Math.min(1024 * 1024, blockBytes / 4));
        return Math.max(1, bytes / elemBytes);
    }

    /** Communicator rank → world rank, or null for the world communicator (identity). */
    private final int[] group;
    /** World rank → communicator rank (-1: not a member), or null for the world communicator. */
    private final int[] worldToComm;
    /** Splits and dups made so far: part of a child's id, so siblings never share one. */
    private final AtomicLong children = new AtomicLong();

    CommunicatorImpl(Session session, TcpTransport transport, long commId, int rank, int size) {
        this(session, transport, commId, rank, null, size);
    }

    /** Zero-copy collectives among this communicator's ranks, or null (not all on this host, shared memory off, one rank). */
    private final ZeroCopyEngine zc;

    private CommunicatorImpl(Session session, TcpTransport transport, long commId, int rank, int[] group, int size) {
        this.session = session;
        this.transport = transport;
        this.commId = commId;
        this.rank = rank;
        this.size = size;
        this.group = group;
        if (group == null) {
            this.worldToComm = null;
        } else {
            this.worldToComm = new int[transport.worldSize()];
            java.util.Arrays.fill(worldToComm, -1);
            for (int r = 0; r < group.length; r++) worldToComm[group[r]] = r;
        }
        this.collectiveChannel = commId | (1L << 62);
        this.noticeChannel = commId | (2L << 62);
        this.zc = session.zeroCopy(commId, rank, size, group);
    }

    /** The zero-copy engine, or null (tests and diagnostics). */
    ZeroCopyEngine zeroCopy() {
        return zc;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public CommFuture<Void> sendAsync(MemorySegment buf, int peer, int tag) {
        checkOpen();
        Objects.requireNonNull(buf, "buf");
        if (peer < 0 || peer >= size) {
            throw new IllegalArgumentException("rank " + rank + ": send: peer " + peer + " is out of range [0, " + size + ")");
        }
        if (tag < 0) throw new IllegalArgumentException("rank " + rank + ": send: tag " + tag + " must be >= 0");
        checkShared(buf, "send");
        return transport.send(commId, world(peer), tag, buf);
    }

    @Override
    public CommFuture<Status> recvAsync(MemorySegment buf, int peer, int tag) {
        checkOpen();
        Objects.requireNonNull(buf, "buf");
        checkSource(peer, tag, "recv");
        if (buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": recv: buf is read-only");
        checkShared(buf, "recv");
        return transport.recv(commId, peer == ANY_SOURCE ? TcpTransport.ANY : world(peer), tag == ANY_TAG ? TcpTransport.ANY : tag,
                buf, worldToComm);
    }

    @Override
    public CommFuture<Status> probeAsync(int peer, int tag) {
        checkOpen();
        checkSource(peer, tag, "probe");
        return transport.probe(commId, peer == ANY_SOURCE ? TcpTransport.ANY : world(peer), tag == ANY_TAG ? TcpTransport.ANY : tag,
                worldToComm);
    }

    @Override
    public java.util.Optional<Status> iprobe(int peer, int tag) {
        checkOpen();
        checkSource(peer, tag, "iprobe");
        return java.util.Optional.ofNullable(
                transport.iprobe(commId, peer == ANY_SOURCE ? TcpTransport.ANY : world(peer), tag == ANY_TAG ? TcpTransport.ANY : tag,
                        worldToComm));
    }

    /** The world rank of communicator rank {@code r}. */
    int world(int r) {
        return group == null ? r : group[r];
    }

    private void checkSource(int peer, int tag, String op) {
        if (peer != ANY_SOURCE && (peer < 0 || peer >= size)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": peer " + peer + " is out of range [0, " + size
                    + ") and is not ANY_SOURCE");
        }
        if (tag < 0 && tag != ANY_TAG) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": tag " + tag + " must be >= 0 or ANY_TAG");
        }
    }

    // ------------------------------------------------------------------------------------ collectives

    /**
     * Where a collective runs. Its sequence number (the tag of all its messages) is taken when it is called,
     * so every rank numbers its collectives in program order whatever thread or stream runs them.
     */
    static final class Mode {
        /** On the caller's thread. */
        static final Mode BLOCKING = new Mode(null, false);
        /** On the communicator's collective thread. */
        static final Mode ASYNC = new Mode(null, true);
        final StreamImpl stream;
        final boolean async;

        private Mode(StreamImpl stream, boolean async) {
            this.stream = stream;
            this.async = async;
        }

        /** Queued on {@code stream}, after what is already queued there. */
        static Mode on(StreamImpl stream) {
            return new Mode(stream, true);
        }
    }

    /** Runs a collective where {@code mode} says; returns its future (null when it ran on the caller's thread). */
    private CommFuture<Void> collective(String op, int fingerprint, Mode mode, Consumer<CollectiveLinks> body) {
        checkOpen();
        ZeroCopyEngine z = zc;
        if (z != null) {
            // on a same-host communicator every collective announces itself in shared memory first (mismatch check)
            long seq;
            long ticket;
            synchronized (z) {
                seq = collectiveSeq.incrementAndGet();
                ticket = z.takeTicket();
            }
            if (!mode.async) {
                announced(z, seq, ticket, op, fingerprint, body);
                return null;
            }
            return dispatch(z, ticket, op, mode, () -> announced(z, seq, ticket, op, fingerprint, body));
        }
        long seq = collectiveSeq.incrementAndGet();
        if (!mode.async) {
            runCollective(seq, op, fingerprint, body, false);
            return null;
        }
        return dispatch(op, mode, () -> runCollective(seq, op, fingerprint, body, false));
    }

    /** A transport collective under the zero-copy engine: its turn, the shared-memory fingerprint check, the algorithm. */
    private void announced(ZeroCopyEngine z, long seq, long ticket, String op, int fingerprint, Consumer<CollectiveLinks> body) {
        z.enter(ticket, op);
        try {
            if (session.config().fullCheck()) fullCheck(seq, op, fingerprint);
            z.announce(seq, fingerprint, op);
            runCollective(seq, op, fingerprint, body, true);
        } finally {
            z.leave(ticket);
        }
    }

    /** Runs {@code task} (an op already numbered) on the stream or the collective thread that {@code mode} names. */
    private CommFuture<Void> dispatch(String op, Mode mode, Runnable task) {
        return dispatch(op, mode, task, null);
    }

    /**
     * Runs {@code task}, an op holding zero-copy ticket {@code ticket} of {@code z}, where {@code mode} says; if it will
     * never run (the queue refuses it, or a stream skips it after an earlier failure) its ticket is given up, so the
     * ops after it are not held up.
     */
    private CommFuture<Void> dispatch(ZeroCopyEngine z, long ticket, String op, Mode mode, Runnable task) {
        try {
            return dispatch(op, mode, task, () -> z.skip(ticket));
        } catch (RuntimeException e) {
            z.skip(ticket);
            throw e;
        }
    }

    private CommFuture<Void> dispatch(String op, Mode mode, Runnable task, Runnable skipped) {
        if (mode.stream != null) return mode.stream.enqueueCollective(op, task, skipped);
        WorkerFuture<Void> f = new WorkerFuture<>(timeoutNanos(), rank, op);
        collectiveThread().execute(() -> {
            try {
                task.run();
                f.complete(null);
            } catch (Throwable e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    /** Names of the collectives, in fingerprint order (the fingerprint's top 4 bits). */
    static final java.util.List<String> OPS = java.util.List.of("", "allReduce", "reduce", "reduceScatter", "reduceScatterV",
            "broadcast", "allGather", "allGatherV", "gather", "gatherV", "scatter", "scatterV", "allToAll", "allToAllV", "barrier");

    /**
     * What every message of a collective carries, so that a receiver notices a peer in another collective or the
     * same one with other arguments: the op in the top 4 bits, a hash of count, type, reduce op and root below.
     */
    static int fingerprint(String op, long count, DataType type, ReduceOp redop, int root) {
        long h = count * 0x9E3779B97F4A7C15L;
        h += (type == null ? 0 : type.ordinal() + 1) * 0xC2B2AE3D27D4EB4FL;
        h += (redop == null ? 0 : redop.ordinal() + 1) * 0x165667B19E3779F9L;
        h += (root + 2L) * 0xD6E8FEB86659FD93L;
        h ^= h >>> 32;
        return (OPS.indexOf(op) << 28) | (int) (h & 0x0FFFFFFF);
    }

    /**
     * HCOMM_CHECK=full: every rank's fingerprint of this op to every rank (Bruck all-gather on the check
     * channel), compared before any data moves, so all ranks reach the same verdict.
     */
    private void fullCheck(long seq, String op, int fingerprint) {
        if (size == 1) return;
        int[] all = new int[size];
        all[rank] = fingerprint;
        try (TransportLinks check = new TransportLinks(transport, commId | (3L << 62), noticeChannel, seq, rank, size, group,
                op + " (check)", 0, session.scratch())) {
            AllGather.bruck(check, MemorySegment.ofArray(all), 4);
        }
        for (int r = 0; r < size; r++) {
            if (all[r] != all[0]) {
                int odd = r;
                // name the rank that differs from the majority, if there is one
                int agree = 0;
                for (int x : all) if (x == all[r]) agree++;
                if (agree * 2 > size) {
                    for (int q = 0; q < size; q++) if (all[q] != all[r]) { odd = q; break; }
                }
                String theirs = OPS.get(Math.min(OPS.size() - 1, all[odd] >>> 28));
                String others = OPS.get(Math.min(OPS.size() - 1, all[odd == 0 ? 1 : 0] >>> 28));
                throw new io.hcomm4j.CollectiveMismatchException("rank " + rank + ": " + op + " (collective #" + seq
                        + ", full check): rank " + odd + " called " + theirs + (theirs.equals(others)
                        ? " with a different count, type, op or root than rank " + (odd == 0 ? 1 : 0) : " where rank " + (odd == 0 ? 1 : 0) + " called " + others));
            }
        }
    }

    /**
     * Runs the transport algorithm {@code body} of op {@code seq}; {@code checked}: the zero-copy frame ran
     * HCOMM_CHECK=full's check already.
     */
    private void runCollective(long seq, String op, int fingerprint, Consumer<CollectiveLinks> body, boolean checked) {
        try (TransportLinks links = new TransportLinks(transport, collectiveChannel, noticeChannel, seq, rank, size, group, op,
                fingerprint, session.scratch())) {
            try {
                if (session.config().fullCheck() && !checked) fullCheck(seq, op, fingerprint);
                body.accept(links);
            } catch (io.hcomm4j.CollectiveMismatchException e) {
                links.tellOthers(e);
                throw e;
            }
        }
    }

    private Tuner tuner() {
        return session.tuner();
    }

    private synchronized ExecutorService collectiveThread() {
        if (collectiveThread == null) {
            collectiveThread = Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon()
                    .name("hcomm-coll-" + rank + "-" + commId).unstarted(r));
        }
        return collectiveThread;
    }

    private long bytes(String op, String arg, MemorySegment buf, long count, DataType type) {
        java.util.Objects.requireNonNull(type, "type");
        if (count < 0) throw new IllegalArgumentException("rank " + rank + ": " + op + ": count " + count + " must be >= 0");
        long need = Math.multiplyExact(count, type.byteSize());
        checkBuffer(op, arg, buf, need);
        return need;
    }

    private void checkBuffer(String op, String arg, MemorySegment buf, long need) {
        java.util.Objects.requireNonNull(buf, arg);
        if (buf.byteSize() < need) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": " + arg + " holds " + buf.byteSize()
                    + " bytes, the call needs " + need);
        }
        checkShared(buf, op);
    }

    private void checkRoot(String op, int root) {
        if (root < 0 || root >= size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": root " + root + " is out of range [0, " + size + ")");
        }
    }

    /** Byte offsets and sizes of variable blocks, checked against the buffer. */
    private long[][] blocks(String op, String arg, MemorySegment buf, long[] counts, long[] displs, DataType type) {
        java.util.Objects.requireNonNull(counts, arg + "Counts");
        java.util.Objects.requireNonNull(displs, arg + " displs");
        if (counts.length != size || displs.length != size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": counts and displs need " + size
                    + " entries (one per rank), have " + counts.length + " and " + displs.length);
        }
        long[] off = new long[size];
        long[] len = new long[size];
        long need = 0;
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0 || displs[r] < 0) {
                throw new IllegalArgumentException("rank " + rank + ": " + op + ": counts[" + r + "] = " + counts[r]
                        + " and displs[" + r + "] = " + displs[r] + " must be >= 0");
            }
            off[r] = Math.multiplyExact(displs[r], type.byteSize());
            len[r] = Math.multiplyExact(counts[r], type.byteSize());
            need = Math.max(need, off[r] + len[r]);
        }
        checkBuffer(op, arg, buf, need);
        return new long[][] {off, len};
    }

    private ReduceKernel kernel(DataType type, ReduceOp op) {
        java.util.Objects.requireNonNull(type, "type");
        java.util.Objects.requireNonNull(op, "op");
        return ReduceKernel.of(type, op);
    }

    private void checkWritable(String op, String arg, MemorySegment buf) {
        if (buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": " + op + ": " + arg + " is read-only");
    }

    @Override
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        allReduce(send, recv, count, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        return allReduce(send, recv, count, type, op, Mode.ASYNC);
    }

    CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
                                       Mode mode) {
        ReduceKernel k = kernel(type, op);
        long n = bytes("allReduce", "send", send, count, type);
        checkBuffer("allReduce", "recv", recv, n);
        checkWritable("allReduce", "recv", recv);
        int avg = op == ReduceOp.AVG ? size : 1;
        int fp = fingerprint("allReduce", count, type, op, -1);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("allReduce", fp, mode, allReduceBody(send, recv, count, type, k, avg));
        checkOpen();
        long seq;
        long ticket;
        synchronized (z) {
            seq = collectiveSeq.incrementAndGet();
            ticket = z.takeTicket();
        }
        if (!mode.async) {
            allReduceHere(z, seq, ticket, fp, send, recv, count, type, k, avg);
            return null;
        }
        return dispatch(z, ticket, "allReduce", mode, () -> allReduceHere(z, seq, ticket, fp, send, recv, count, type, k, avg));
    }

    /** An all-reduce under the zero-copy engine: in shared memory if every rank can, else through the transport. */
    private void allReduceHere(ZeroCopyEngine z, long seq, long ticket, int fp, MemorySegment send, MemorySegment recv, long count,
                               DataType type, ReduceKernel k, int avg) {
        z.enter(ticket, "allReduce");
        try {
            if (session.config().fullCheck()) fullCheck(seq, "allReduce", fp);
            if (!z.allReduce(seq, fp, "allReduce", send, recv, count, k, avg, tuner().forced(Tuner.Op.ALLREDUCE) == null)) {
                runCollective(seq, "allReduce", fp, allReduceBody(send, recv, count, type, k, avg), true);
            }
        } finally {
            z.leave(ticket);
        }
    }

    /** The transport algorithm of an all-reduce (the tuner's choice). */
    private Consumer<CollectiveLinks> allReduceBody(MemorySegment send, MemorySegment recv, long count, DataType type,
                                                    ReduceKernel k, int avg) {
        long n = count * type.byteSize();
        long chunk = ringChunkElems(n / size, type.byteSize());
        Tuner.Algo algo = tuner().choose(Tuner.Op.ALLREDUCE, n, size);
        return l -> {
            if (algo == Tuner.Algo.RING) {
                Reductions.ringAllReduce(l, send.asSlice(0, n), recv.asSlice(0, n), count, k, chunk, avg);
            } else {
                if (!send.equals(recv)) MemorySegment.copy(send, 0, recv, 0, n);
                if (algo == Tuner.Algo.RECURSIVE_DOUBLING) Reductions.recursiveDoubling(l, recv.asSlice(0, n), count, k, avg);
                else HalvingDoubling.allReduce(l, recv.asSlice(0, n), count, k, avg);
            }
        };
    }

    @Override
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        reduce(send, recv, count, type, op, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        return reduce(send, recv, count, type, op, root, Mode.ASYNC);
    }

    CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root,
                                    Mode mode) {
        ReduceKernel k = kernel(type, op);
        checkRoot("reduce", root);
        long n = bytes("reduce", "send", send, count, type);
        if (rank == root) {
            checkBuffer("reduce", "recv", recv, n);
            checkWritable("reduce", "recv", recv);
        }
        int avg = op == ReduceOp.AVG ? size : 1;
        return collective("reduce", fingerprint("reduce", count, type, op, root), mode, l -> {
            MemorySegment work = rank == root ? recv.asSlice(0, n) : l.scratch(n);
            if (!send.equals(work)) MemorySegment.copy(send, 0, work, 0, n);
            Reductions.binomialReduce(l, work, count, k, root, avg);
        });
    }

    @Override
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        reduceScatter(send, recv, recvCount, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        return reduceScatter(send, recv, recvCount, type, op, Mode.ASYNC);
    }

    CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op,
                                           Mode mode) {
        if (recvCount < 0) throw new IllegalArgumentException("rank " + rank + ": reduceScatter: recvCount " + recvCount + " must be >= 0");
        ZeroCopyEngine z = zc;
        if (z == null) {
            long[] counts = new long[size];
            java.util.Arrays.fill(counts, recvCount);
            return reduceScatterBlocks("reduceScatter", send, recv, counts, type, op, mode);
        }
        // equal blocks without arrays: the zero-copy path allocates nothing
        ReduceKernel k = kernel(type, op);
        long es = type.byteSize();
        long blk = Math.multiplyExact(recvCount, es);
        long total = Math.multiplyExact(blk, size);
        checkBuffer("reduceScatter", "send", send, total);
        checkBuffer("reduceScatter", "recv", recv, blk);
        checkWritable("reduceScatter", "recv", recv);
        int fp = fingerprint("reduceScatter", equalCountsHash(recvCount), type, op, -1);
        return reduceScatterZc(z, "reduceScatter", fp, send, recv, recvCount, null, type, k, op, mode);
    }

    /** {@code Arrays.hashCode} of {@code size} counts equal to {@code count}, without the array. */
    private int equalCountsHash(long count) {
        int h = 1;
        int e = (int) (count ^ (count >>> 32));
        for (int r = 0; r < size; r++) h = 31 * h + e;
        return h;
    }

    private CommFuture<Void> reduceScatterZc(ZeroCopyEngine z, String name, int fp, MemorySegment send, MemorySegment recv, long blockCount,
                                             long[] counts, DataType type, ReduceKernel k, ReduceOp op, Mode mode) {
        checkOpen();
        int avg = op == ReduceOp.AVG ? size : 1;
        long seq;
        long ticket;
        synchronized (z) {
            seq = collectiveSeq.incrementAndGet();
            ticket = z.takeTicket();
        }
        if (!mode.async) {
            reduceScatterHere(z, seq, ticket, name, fp, send, recv, blockCount, counts, type, k, avg);
            return null;
        }
        return dispatch(z, ticket, name, mode, () -> reduceScatterHere(z, seq, ticket, name, fp, send, recv, blockCount, counts, type, k, avg));
    }

    private void reduceScatterHere(ZeroCopyEngine z, long seq, long ticket, String name, int fp, MemorySegment send, MemorySegment recv,
                                   long blockCount, long[] counts, DataType type, ReduceKernel k, int avg) {
        z.enter(ticket, name);
        try {
            if (session.config().fullCheck()) fullCheck(seq, name, fp);
            if (!z.reduceScatter(seq, fp, name, send, recv, blockCount, counts, k, avg, tuner().forced(Tuner.Op.REDUCESCATTER) == null)) {
                long[] c = counts;
                if (c == null) {
                    c = new long[size];
                    java.util.Arrays.fill(c, blockCount);
                }
                runCollective(seq, name, fp, reduceScatterBody(send, recv, c, type, k, avg), true);
            }
        } finally {
            z.leave(ticket);
        }
    }

    @Override
    public void reduceScatterV(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op) {
        reduceScatterBlocks("reduceScatterV", send, recv, recvCounts, type, op, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> reduceScatterVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op) {
        return reduceScatterBlocks("reduceScatterV", send, recv, recvCounts, type, op, Mode.ASYNC);
    }

    CommFuture<Void> reduceScatterBlocks(String name, MemorySegment send, MemorySegment recv, long[] recvCounts,
                                                 DataType type, ReduceOp op, Mode mode) {
        ReduceKernel k = kernel(type, op);
        long[] sizes = sizesOf(name, java.util.Objects.requireNonNull(recvCounts, "recvCounts"), type);
        long total = 0;
        for (long c : recvCounts) total = Math.addExact(total, c);
        total = Math.multiplyExact(total, type.byteSize());
        checkBuffer(name, "send", send, total);
        checkBuffer(name, "recv", recv, sizes[rank]);
        checkWritable(name, "recv", recv);
        int fp = fingerprint(name, java.util.Arrays.hashCode(recvCounts), type, op, -1);
        ZeroCopyEngine z = zc;
        long[] counts = recvCounts.clone();
        if (z != null) return reduceScatterZc(z, name, fp, send, recv, 0, counts, type, k, op, mode);
        int avg = op == ReduceOp.AVG ? size : 1;
        return collective(name, fp, mode, reduceScatterBody(send, recv, counts, type, k, avg));
    }

    /** The transport algorithm of a reduce-scatter (the tuner's choice). */
    private Consumer<CollectiveLinks> reduceScatterBody(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type,
                                                        ReduceKernel k, int avg) {
        long[] at = new long[size + 1];
        for (int r = 0; r < size; r++) at[r + 1] = at[r] + recvCounts[r];
        long es = type.byteSize();
        long total = at[size] * es;
        long mine = recvCounts[rank] * es;
        long chunk = ringChunkElems(total / size, (int) es);
        Tuner.Algo algo = tuner().choose(Tuner.Op.REDUCESCATTER, total, size);
        return l -> {
            MemorySegment work = l.scratch(total);
            if (algo == Tuner.Algo.HALVING_DOUBLING) {
                MemorySegment.copy(send, 0, work, 0, total);
                HalvingDoubling.reduceScatter(l, work, at, k, avg);
            } else {
                Reductions.ringReduceScatter(l, send.asSlice(0, total), work, at, k, chunk, avg);
            }
            MemorySegment.copy(work, at[rank] * es, recv, 0, mine);
        };
    }

    @Override
    public void broadcast(MemorySegment buf, long count, DataType type, int root) {
        broadcast(buf, count, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> broadcastAsync(MemorySegment buf, long count, DataType type, int root) {
        return broadcast(buf, count, type, root, Mode.ASYNC);
    }

    CommFuture<Void> broadcast(MemorySegment buf, long count, DataType type, int root, Mode mode) {
        long n = bytes("broadcast", "buf", buf, count, type);
        checkRoot("broadcast", root);
        if (rank != root && buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": broadcast: buf is read-only");
        int fp = fingerprint("broadcast", count, type, null, root);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("broadcast", fp, mode, broadcastBody(buf, n, root));
        checkOpen();
        long seq;
        long ticket;
        synchronized (z) {
            seq = collectiveSeq.incrementAndGet();
            ticket = z.takeTicket();
        }
        if (!mode.async) {
            broadcastHere(z, seq, ticket, fp, buf, n, root);
            return null;
        }
        return dispatch(z, ticket, "broadcast", mode, () -> broadcastHere(z, seq, ticket, fp, buf, n, root));
    }

    private void broadcastHere(ZeroCopyEngine z, long seq, long ticket, int fp, MemorySegment buf, long n, int root) {
        z.enter(ticket, "broadcast");
        try {
            if (session.config().fullCheck()) fullCheck(seq, "broadcast", fp);
            if (!z.broadcast(seq, fp, "broadcast", buf, n, root, tuner().forced(Tuner.Op.BROADCAST) == null)) {
                runCollective(seq, "broadcast", fp, broadcastBody(buf, n, root), true);
            }
        } finally {
            z.leave(ticket);
        }
    }

    /** The transport algorithm of a broadcast (the tuner's choice). */
    private Consumer<CollectiveLinks> broadcastBody(MemorySegment buf, long n, int root) {
        MemorySegment data = buf.asSlice(0, n);
        Tuner.Algo algo = size <= 2 && tuner().forced(Tuner.Op.BROADCAST) == null ? Tuner.Algo.TREE
                : tuner().choose(Tuner.Op.BROADCAST, n, size);
        return l -> {
            if (algo == Tuner.Algo.TREE) Broadcast.binomialTree(l, data, root);
            else Broadcast.pipelinedChain(l, data, root, BCAST_CHUNK);
        };
    }

    @Override
    public void allGather(MemorySegment send, MemorySegment recv, long count, DataType type) {
        allGather(send, recv, count, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allGatherAsync(MemorySegment send, MemorySegment recv, long count, DataType type) {
        return allGather(send, recv, count, type, Mode.ASYNC);
    }

    CommFuture<Void> allGather(MemorySegment send, MemorySegment recv, long count, DataType type, Mode mode) {
        long blk = bytes("allGather", "send", send, count, type);
        checkBuffer("allGather", "recv", recv, Math.multiplyExact(blk, size));
        int fp = fingerprint("allGather", count, type, null, -1);
        // in place (send is recv): this rank's block of recv is what it contributes
        boolean inPlace = send.equals(recv);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("allGather", fp, mode, allGatherBody(send, recv, blk, null, null, inPlace, "allGather"));
        return allGatherZc(z, "allGather", fp, inPlace ? recv : send, inPlace ? rank * blk : 0, recv, blk, null, null, mode);
    }

    private CommFuture<Void> allGatherZc(ZeroCopyEngine z, String name, int fp, MemorySegment mine, long mineOff, MemorySegment recv,
                                         long blk, long[] off, long[] len, Mode mode) {
        checkOpen();
        long seq;
        long ticket;
        synchronized (z) {
            seq = collectiveSeq.incrementAndGet();
            ticket = z.takeTicket();
        }
        if (!mode.async) {
            allGatherHere(z, seq, ticket, name, fp, mine, mineOff, recv, blk, off, len);
            return null;
        }
        return dispatch(z, ticket, name, mode, () -> allGatherHere(z, seq, ticket, name, fp, mine, mineOff, recv, blk, off, len));
    }

    private void allGatherHere(ZeroCopyEngine z, long seq, long ticket, String name, int fp, MemorySegment mine, long mineOff,
                               MemorySegment recv, long blk, long[] off, long[] len) {
        z.enter(ticket, name);
        try {
            if (session.config().fullCheck()) fullCheck(seq, name, fp);
            if (!z.allGather(seq, fp, name, mine, mineOff, recv, blk, off, len, tuner().forced(Tuner.Op.ALLGATHER) == null)) {
                boolean inPlace = mine == recv && mineOff == (off == null ? rank * blk : off[rank]);
                runCollective(seq, name, fp, allGatherBody(mine, recv, blk, off, len, inPlace, name), true);
            }
        } finally {
            z.leave(ticket);
        }
    }

    /**
     * The transport algorithm of an all-gather of equal blocks of {@code blk} bytes ({@code off == null}; the tuner's
     * choice) or of the blocks {@code off}/{@code len} (ring). {@code send} is the contribution, or with {@code inPlace}
     * the receive buffer holding it in this rank's block.
     */
    private Consumer<CollectiveLinks> allGatherBody(MemorySegment send, MemorySegment recv, long blk, long[] off, long[] len,
                                                    boolean inPlace, String name) {
        long[] o = off;
        long[] l2 = len;
        if (o == null) {
            o = new long[size];
            l2 = new long[size];
            for (int r = 0; r < size; r++) {
                o[r] = r * blk;
                l2[r] = blk;
            }
        }
        long[] fo = o;
        long[] fl = l2;
        MemorySegment own = recv.asSlice(fo[rank], fl[rank]);
        MemorySegment mine = inPlace ? own : send;
        Tuner.Algo algo = off == null ? tuner().choose(Tuner.Op.ALLGATHER, blk * size, size) : Tuner.Algo.RING;
        return l -> {
            MemorySegment.copy(mine, 0, own, 0, fl[rank]);
            if (algo == Tuner.Algo.BRUCK) AllGather.bruck(l, recv, blk);
            else AllGather.ring(l, recv, fo, fl);
        };
    }

    @Override
    public void allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type) {
        allGatherV(send, recv, recvCounts, displs, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allGatherVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type) {
        return allGatherV(send, recv, recvCounts, displs, type, Mode.ASYNC);
    }

    CommFuture<Void> allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs,
                                        DataType type, Mode mode) {
        long[][] b = blocks("allGatherV", "recv", recv, recvCounts, displs, type);
        long[] off = b[0];
        long[] len = b[1];
        boolean inPlace = send.equals(recv);
        checkBuffer("allGatherV", "send", inPlace ? recv.asSlice(off[rank], len[rank]) : send, len[rank]);
        int fp = fingerprint("allGatherV", java.util.Arrays.hashCode(recvCounts), type, null, -1);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("allGatherV", fp, mode, allGatherBody(send, recv, 0, off, len, inPlace, "allGatherV"));
        return allGatherZc(z, "allGatherV", fp, inPlace ? recv : send, inPlace ? off[rank] : 0, recv, 0, off, len, mode);
    }

    @Override
    public void gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        gather(send, recv, count, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> gatherAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        return gather(send, recv, count, type, root, Mode.ASYNC);
    }

    CommFuture<Void> gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root, Mode mode) {
        checkRoot("gather", root);
        long blk = bytes("gather", "send", send, count, type);
        if (rank == root) checkBuffer("gather", "recv", recv, Math.multiplyExact(blk, size));
        return collective("gather", fingerprint("gather", count, type, null, root), mode, l -> Rooted.gatherBinomial(l, send, rank == root ? recv : null, root, blk));
    }

    @Override
    public void gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type, int root) {
        gatherV(send, recv, recvCounts, displs, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> gatherVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs,
                                         DataType type, int root) {
        return gatherV(send, recv, recvCounts, displs, type, root, Mode.ASYNC);
    }

    CommFuture<Void> gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs,
                                     DataType type, int root, Mode mode) {
        checkRoot("gatherV", root);
        java.util.Objects.requireNonNull(recvCounts, "recvCounts");
        long[][] b = rank == root ? blocks("gatherV", "recv", recv, recvCounts, displs, type)
                : new long[][] {new long[size], sizesOf("gatherV", recvCounts, type)};
        checkBuffer("gatherV", "send", send, b[1][rank]);
        return collective("gatherV", fingerprint("gatherV", 0, type, null, root), mode, l -> Rooted.gatherLinear(l, send, recv, root, b[0], b[1]));
    }

    private long[] sizesOf(String op, long[] counts, DataType type) {
        if (counts.length != size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": counts need " + size + " entries, have " + counts.length);
        }
        long[] len = new long[size];
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0) throw new IllegalArgumentException("rank " + rank + ": " + op + ": counts[" + r + "] = " + counts[r] + " must be >= 0");
            len[r] = Math.multiplyExact(counts[r], type.byteSize());
        }
        return len;
    }

    @Override
    public void scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        scatter(send, recv, count, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> scatterAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        return scatter(send, recv, count, type, root, Mode.ASYNC);
    }

    CommFuture<Void> scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root, Mode mode) {
        checkRoot("scatter", root);
        long blk = bytes("scatter", "recv", recv, count, type);
        if (rank == root) checkBuffer("scatter", "send", send, Math.multiplyExact(blk, size));
        return collective("scatter", fingerprint("scatter", count, type, null, root), mode, l -> Rooted.scatterBinomial(l, rank == root ? send : null, recv, root, blk));
    }

    @Override
    public void scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv, DataType type, int root) {
        scatterV(send, sendCounts, displs, recv, type, root, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> scatterVAsync(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv,
                                          DataType type, int root) {
        return scatterV(send, sendCounts, displs, recv, type, root, Mode.ASYNC);
    }

    CommFuture<Void> scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv,
                                      DataType type, int root, Mode mode) {
        checkRoot("scatterV", root);
        java.util.Objects.requireNonNull(sendCounts, "sendCounts");
        long[][] b = rank == root ? blocks("scatterV", "send", send, sendCounts, displs, type)
                : new long[][] {new long[size], sizesOf("scatterV", sendCounts, type)};
        checkBuffer("scatterV", "recv", recv, b[1][rank]);
        return collective("scatterV", fingerprint("scatterV", 0, type, null, root), mode, l -> Rooted.scatterLinear(l, send, recv, root, b[0], b[1]));
    }

    @Override
    public void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        allToAll(send, recv, count, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allToAllAsync(MemorySegment send, MemorySegment recv, long count, DataType type) {
        return allToAll(send, recv, count, type, Mode.ASYNC);
    }

    CommFuture<Void> allToAll(MemorySegment send, MemorySegment recv, long count, DataType type, Mode mode) {
        long blk = Math.multiplyExact(count < 0 ? 0 : count, type.byteSize());
        if (count < 0) throw new IllegalArgumentException("rank " + rank + ": allToAll: count " + count + " must be >= 0");
        long total = Math.multiplyExact(blk, size);
        checkBuffer("allToAll", "send", send, total);
        checkBuffer("allToAll", "recv", recv, total);
        long[] off = new long[size];
        long[] len = new long[size];
        for (int r = 0; r < size; r++) {
            off[r] = r * blk;
            len[r] = blk;
        }
        return allToAllBlocks("allToAll", send, off, len, recv, off, len, total, mode);
    }

    @Override
    public void allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv, long[] recvCounts,
                          long[] recvDispls, DataType type) {
        allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, Mode.BLOCKING);
    }

    @Override
    public CommFuture<Void> allToAllVAsync(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv,
                                           long[] recvCounts, long[] recvDispls, DataType type) {
        return allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, Mode.ASYNC);
    }

    CommFuture<Void> allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv,
                                       long[] recvCounts, long[] recvDispls, DataType type, Mode mode) {
        long[][] s = blocks("allToAllV", "send", send, sendCounts, sendDispls, type);
        long[][] r = blocks("allToAllV", "recv", recv, recvCounts, recvDispls, type);
        if (s[1][rank] != r[1][rank]) {
            throw new IllegalArgumentException("rank " + rank + ": allToAllV: sendCounts[" + rank + "] and recvCounts[" + rank
                    + "] (this rank's block to itself) differ");
        }
        long total = 0;
        for (int i = 0; i < size; i++) total = Math.max(total, s[0][i] + s[1][i]);
        return allToAllBlocks("allToAllV", send, s[0], s[1], recv, r[0], r[1], total, mode);
    }

    CommFuture<Void> allToAllBlocks(String op, MemorySegment send, long[] sOff, long[] sLen, MemorySegment recv,
                                            long[] rOff, long[] rLen, long sendBytes, Mode mode) {
        boolean overlap = send.asSlice(0, sendBytes).asOverlappingSlice(recv).isPresent();
        // Bruck needs equal blocks: allToAllV always exchanges pairwise
        Tuner.Algo algo = op.equals("allToAll") ? tuner().choose(Tuner.Op.ALLTOALL, sendBytes, size) : Tuner.Algo.PAIRWISE;
        return collective(op, fingerprint(op, op.equals("allToAll") ? sLen[0] : 0, null, null, -1), mode, l -> {
            if (algo == Tuner.Algo.BRUCK) {
                AllToAll.bruck(l, send, recv, sLen[0]); // reads all of send before writing recv: in place needs no copy
                return;
            }
            MemorySegment src = send;
            if (overlap) {
                // in place: the blocks still to be sent must not be overwritten by those arriving
                src = l.scratch(sendBytes);
                MemorySegment.copy(send, 0, src, 0, sendBytes);
            }
            AllToAll.pairwise(l, src, sOff, sLen, recv, rOff, rLen);
        });
    }

    @Override
    public void barrier() {
        barrier(Mode.BLOCKING);
    }

    CommFuture<Void> barrier(Mode mode) {
        int fp = fingerprint("barrier", 0, null, null, -1);
        ZeroCopyEngine z = zc;
        if (z == null) return collective("barrier", fp, mode, AllToAll::barrier);
        checkOpen();
        long seq;
        long ticket;
        synchronized (z) {
            seq = collectiveSeq.incrementAndGet();
            ticket = z.takeTicket();
        }
        if (!mode.async) {
            barrierHere(z, seq, ticket, fp);
            return null;
        }
        return dispatch(z, ticket, "barrier", mode, () -> barrierHere(z, seq, ticket, fp));
    }

    /** A barrier under the zero-copy engine: every rank's descriptor visible is the barrier. */
    private void barrierHere(ZeroCopyEngine z, long seq, long ticket, int fp) {
        z.enter(ticket, "barrier");
        try {
            if (session.config().fullCheck()) fullCheck(seq, "barrier", fp);
            if (!z.barrier(seq, fp, "barrier")) runCollective(seq, "barrier", fp, AllToAll::barrier, true);
        } finally {
            z.leave(ticket);
        }
    }

    @Override
    public CommFuture<Void> barrierAsync() {
        return barrier(Mode.ASYNC);
    }

    // ------------------------------------------------------------------------------- sub-communicators

    @Override
    public Communicator split(int color, int key) {
        checkOpen();
        if (color < 0 && color != UNDEFINED) {
            throw new IllegalArgumentException("rank " + rank + ": split: color " + color + " must be >= 0 or UNDEFINED");
        }
        long child = children.incrementAndGet();
        // the one exchange: every rank's (color, key)
        MemorySegment mine = MemorySegment.ofArray(new int[] {color, key});
        int[] all = new int[2 * size];
        allGather(mine, MemorySegment.ofArray(all), 2, DataType.INT32);
        if (color == UNDEFINED) return null;
        Integer[] members = java.util.stream.IntStream.range(0, size).filter(r -> all[2 * r] == color).boxed()
                .sorted(java.util.Comparator.<Integer>comparingInt(r -> all[2 * r + 1]).thenComparingInt(r -> r))
                .toArray(Integer[]::new);
        int[] worldRanks = new int[members.length];
        int myRank = -1;
        for (int i = 0; i < members.length; i++) {
            worldRanks[i] = world(members[i]);
            if (members[i] == rank) myRank = i;
        }
        return child(childId(child, color), myRank, worldRanks);
    }

    @Override
    public Communicator dup() {
        checkOpen();
        long child = children.incrementAndGet();
        barrier(); // collective, like MPI_Comm_dup: every rank takes the same child number
        int[] worldRanks = new int[size];
        for (int r = 0; r < size; r++) worldRanks[r] = world(r);
        return child(childId(child, Integer.MAX_VALUE), rank, worldRanks);
    }

    /** A child's id: derived from this id, the child number and the color, so every member computes the same one. */
    private long childId(long child, int color) {
        long h = commId * 0x9E3779B97F4A7C15L + child * 0xC2B2AE3D27D4EB4FL + color * 0x165667B19E3779F9L + 1;
        h ^= h >>> 31;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 29;
        return h & ~(3L << 62); // the top bits mark collective traffic
    }

    private CommunicatorImpl child(long id, int myRank, int[] worldRanks) {
        CommunicatorImpl c = new CommunicatorImpl(session, transport, id, myRank, worldRanks, worldRanks.length);
        session.register(c);
        return c;
    }

    @Override
    public io.hcomm4j.Batch batch() {
        checkOpen();
        return new BatchImpl(this);
    }

    @Override
    public io.hcomm4j.memory.MemoryPool memory() {
        return session.memory();
    }

    @Override
    public Stream newStream() {
        checkOpen();
        StreamImpl s = new StreamImpl(this, session);
        session.register(s);
        return s;
    }

    private void checkShared(MemorySegment buf, String op) {
        if (!buf.scope().isAlive()) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf belongs to a closed arena");
        }
        if (!transport.usableFromAnyThread(buf)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf is confined to the thread that allocated it "
                    + "(Arena.ofConfined()); the library's threads move the data, so allocate it with Arena.ofShared(), "
                    + "Arena.ofAuto() or Arena.global()");
        }
    }

    long timeoutNanos() {
        return session.config().timeout().toNanos();
    }

    private void checkOpen() {
        if (closed || session.isClosed()) {
            throw new IllegalStateException("rank " + rank + ": the communicator is closed");
        }
    }

    @Override
    public boolean isClosed() {
        return closed || session.isClosed();
    }

    void markClosed() {
        closed = true;
        shutdownCollectiveThread();
        if (zc != null) zc.close();
    }

    private synchronized void shutdownCollectiveThread() {
        if (collectiveThread != null) {
            collectiveThread.shutdown();
            try {
                collectiveThread.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            collectiveThread.shutdownNow();
        }
    }

    @Override
    public void close() {
        closed = true;
        shutdownCollectiveThread();
        if (zc != null) zc.close();
        if (group != null) session.unregister(this);
    }

    @Override
    public String toString() {
        return "Communicator{rank=" + rank + ", size=" + size + ", id=" + commId + "}";
    }
}
