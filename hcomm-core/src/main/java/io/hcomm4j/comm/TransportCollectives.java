package io.hcomm4j.comm;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Topology;
import io.hcomm4j.algo.AllGather;
import io.hcomm4j.algo.AllToAll;
import io.hcomm4j.algo.Broadcast;
import io.hcomm4j.algo.CollectiveLinks;
import io.hcomm4j.algo.Feedback;
import io.hcomm4j.algo.HalvingDoubling;
import io.hcomm4j.algo.Hierarchical;
import io.hcomm4j.algo.Reductions;
import io.hcomm4j.algo.Rooted;
import io.hcomm4j.algo.Scan;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;

/**
 * The transport algorithm of every collective, chosen by the tuner for one communicator's shape: what runs when
 * the communicator has no zero-copy engine, or when some rank cannot run the op in shared memory.
 */
final class TransportCollectives {
    private final Tuner tuner;
    private final Topology topology;
    private final Tuner.Shape shape;
    private final int rank;
    private final int size;
    /** Times the tuner's choices and switches a class of ops away from an algorithm that became slow; null: off. */
    final Feedback feedback;
    /** A test hook: this algorithm of this op takes this much longer (null: none). */
    private static volatile Slowdown slowdown;

    /** A delay added to every run of {@code algo} for {@code op} (tests of feedback). */
    record Slowdown(Tuner.Op op, Tuner.Algo algo, long nanos) {
    }

    /** Sets or (null) clears the delay every communicator of this JVM adds to one algorithm: tests only. */
    static void slowDownForTest(Slowdown s) {
        slowdown = s;
    }

    TransportCollectives(Tuner tuner, Topology topology, int rank, int size, boolean feedback) {
        this.tuner = tuner;
        this.topology = topology;
        this.shape = Tuner.Shape.of(topology);
        this.rank = rank;
        this.size = size;
        this.feedback = feedback ? new Feedback(tuner, shape, rank) : null;
    }

    /** The session's tuner (tests). */
    Tuner tuner() {
        return tuner;
    }

    /** What the tuner alone would choose for {@code op} on {@code bytes} here (tests). */
    Tuner.Algo tunerChoice(Tuner.Op op, long bytes) {
        return tuner.choose(op, bytes, shape);
    }

    /** The algorithm for {@code op} on {@code bytes}, noted in {@code c} for feedback and the JFR event. */
    private Tuner.Algo choose(CollectiveCall c, Tuner.Op op, long bytes) {
        Tuner.Algo algo = tuner.choose(op, bytes, shape);
        if (feedback != null) algo = feedback.choose(op, bytes, algo);
        c.algo = algo;
        c.tunedBytes = bytes;
        noteChoice(c, op, bytes, algo);
        return algo;
    }

    /** The last algorithm chosen per op and power-of-two size class: a JFR event when one changes. */
    private final Tuner.Algo[][] chosen = new Tuner.Algo[Tuner.Op.values().length][65];

    private void noteChoice(CollectiveCall c, Tuner.Op op, long bytes, Tuner.Algo algo) {
        int cls = 64 - Long.numberOfLeadingZeros(Math.max(0, bytes));
        Tuner.Algo before = chosen[op.ordinal()][cls];
        if (before == algo) return;
        chosen[op.ordinal()][cls] = algo; // several threads may race here: at worst one event twice
        TunerChoiceEvent e = new TunerChoiceEvent();
        if (!e.isEnabled()) return;
        e.op = Tuner.name(op);
        e.communicator = c.commId();
        e.rank = rank;
        e.bytes = bytes;
        e.algorithm = Tuner.name(algo);
        e.previous = before == null ? "" : Tuner.name(before);
        e.commit();
    }

    void run(CollectiveCall c, CollectiveLinks l) {
        c.tunedBytes = -1;
        long t0 = System.nanoTime();
        runAlgorithm(c, l);
        if (size == 1) normalizeAlone(c);
        if (c.tunedBytes < 0) return;
        Tuner.Op op = c.op.tunerOp();
        Slowdown slow = slowdown;
        if (slow != null && slow.op() == op && slow.algo() == c.algo) java.util.concurrent.locks.LockSupport.parkNanos(slow.nanos());
        if (feedback == null) return;
        // every VOTE_EVERY-th op of a class ends with the ranks' vote on its algorithm, over this op's links
        if (feedback.observe(op, c.tunedBytes, c.algo, System.nanoTime() - t0)) {
            Feedback.Switch s = feedback.vote(l, op, c.tunedBytes);
            if (s != null) AlgorithmSwitchEvent.commit(s, rank, c.seq);
        }
    }

    private void runAlgorithm(CollectiveCall c, CollectiveLinks l) {
        switch (c.op) {
            case ALL_REDUCE -> allReduce(c, l);
            case REDUCE -> reduce(c, l);
            case REDUCE_SCATTER, REDUCE_SCATTER_V -> reduceScatter(c, l);
            case BROADCAST -> broadcast(c, l);
            case ALL_GATHER, ALL_GATHER_V -> allGather(c, l);
            case GATHER -> Rooted.gatherBinomial(l, c.send, rank == c.root ? c.recv : null, c.root, c.blockBytes);
            case GATHER_V -> Rooted.gatherLinear(l, c.send, c.recv, c.root, c.recvOff, c.recvLen);
            case SCATTER -> Rooted.scatterBinomial(l, rank == c.root ? c.send : null, c.recv, c.root, c.blockBytes);
            case SCATTER_V -> Rooted.scatterLinear(l, c.send, c.recv, c.root, c.sendOff, c.sendLen);
            case ALL_TO_ALL, ALL_TO_ALL_V -> allToAll(c, l);
            case BARRIER -> AllToAll.barrier(l);
            case SCAN -> Scan.inclusive(l, c.send, c.recv, c.count, c.kernel, Scan.CHUNK_BYTES);
            case EXSCAN -> Scan.exclusive(l, c.send, c.recv, c.count, c.kernel, Scan.CHUNK_BYTES);
        }
    }

    /** Writes each BOOL element as 0 or 1: the or of a BOOL with itself is its truth value. */
    private static final ReduceKernel SELF_OR = ReduceKernel.of(DataType.BOOL, ReduceOp.BOR);

    /**
     * On one rank a reduction combines nothing, so a BOOL result would be the input's bytes as they are: it is written
     * as 0 or 1 here, as on any other number of ranks. (A user function's result is the input: it is never called.)
     */
    private static void normalizeAlone(CollectiveCall c) {
        ReduceKernel k = c.kernel;
        if (k == null || k.op() == null || k.type() != DataType.BOOL) return;
        long count = switch (c.op) {
            case ALL_REDUCE, REDUCE -> c.count;
            case REDUCE_SCATTER, REDUCE_SCATTER_V -> c.counts == null ? c.blockCount : c.counts[0];
            default -> 0;
        };
        if (count > 0) SELF_OR.accumulate(c.recv, 0, c.recv, 0, count);
    }

    private Tuner.Levels levels(Tuner.Algo algo, Tuner.Op op, long bytes) {
        return algo == Tuner.Algo.HIERARCHICAL ? tuner.levels(op, bytes, shape, topology.localSize()) : null;
    }

    private void allReduce(CollectiveCall c, CollectiveLinks l) {
        long n = c.bytes;
        int es = c.kernel.type().byteSize();
        MemorySegment send = c.send.asSlice(0, n);
        MemorySegment recv = c.recv.asSlice(0, n);
        Tuner.Algo algo = choose(c, Tuner.Op.ALLREDUCE, n);
        if (algo == Tuner.Algo.HIERARCHICAL) {
            Hierarchical.allReduce(l, topology, levels(algo, Tuner.Op.ALLREDUCE, n), send, recv, c.count, c.kernel, c.avg);
        } else if (algo == Tuner.Algo.RING) {
            Reductions.ringAllReduce(l, send, recv, c.count, c.kernel, Reductions.ringChunkElems(n / size, es), c.avg);
        } else {
            if (!c.send.equals(c.recv)) MemorySegment.copy(c.send, 0, c.recv, 0, n);
            if (algo == Tuner.Algo.RECURSIVE_DOUBLING) Reductions.recursiveDoubling(l, recv, c.count, c.kernel, c.avg);
            else HalvingDoubling.allReduce(l, recv, c.count, c.kernel, c.avg);
        }
    }

    private void reduce(CollectiveCall c, CollectiveLinks l) {
        long n = c.bytes;
        MemorySegment work = rank == c.root ? c.recv.asSlice(0, n) : l.scratch(n);
        if (!c.send.equals(work)) MemorySegment.copy(c.send, 0, work, 0, n);
        Reductions.binomialReduce(l, work, c.count, c.kernel, c.root, c.avg);
    }

    private void reduceScatter(CollectiveCall c, CollectiveLinks l) {
        long[] counts = c.counts;
        if (counts == null) {
            counts = equalLengths(c.blockCount);
        }
        long[] at = new long[size + 1];
        for (int r = 0; r < size; r++) at[r + 1] = at[r] + counts[r];
        long es = c.kernel.type().byteSize();
        long total = at[size] * es;
        Tuner.Algo algo = choose(c, Tuner.Op.REDUCESCATTER, total);
        if (algo == Tuner.Algo.HIERARCHICAL) {
            Hierarchical.reduceScatter(l, topology, levels(algo, Tuner.Op.REDUCESCATTER, total), c.send, c.recv, counts, c.kernel, c.avg);
            return;
        }
        MemorySegment work = l.scratch(total);
        if (algo == Tuner.Algo.HALVING_DOUBLING) {
            MemorySegment.copy(c.send, 0, work, 0, total);
            HalvingDoubling.reduceScatter(l, work, at, c.kernel, c.avg);
        } else {
            long chunk = Reductions.ringChunkElems(total / size, (int) es);
            Reductions.ringReduceScatter(l, c.send.asSlice(0, total), work, at, c.kernel, chunk, c.avg);
        }
        MemorySegment.copy(work, at[rank] * es, c.recv, 0, counts[rank] * es);
    }

    private void broadcast(CollectiveCall c, CollectiveLinks l) {
        long n = c.bytes;
        MemorySegment data = c.send.asSlice(0, n);
        Tuner.Algo algo;
        if (size <= 2 && tuner.forced(Tuner.Op.BROADCAST) == null) {
            algo = Tuner.Algo.TREE; // one send: nothing to choose
            c.algo = algo;
        } else {
            algo = choose(c, Tuner.Op.BROADCAST, n);
        }
        if (algo == Tuner.Algo.HIERARCHICAL) Hierarchical.broadcast(l, topology, levels(algo, Tuner.Op.BROADCAST, n), data, c.root);
        else if (algo == Tuner.Algo.TREE) Broadcast.binomialTree(l, data, c.root);
        else Broadcast.pipelinedChain(l, data, c.root, Broadcast.CHAIN_CHUNK);
    }

    /**
     * Equal blocks of {@code blockBytes} ({@code recvOff == null}; the tuner's choice) or the blocks
     * {@code recvOff}/{@code recvLen} (ring). The contribution is {@code mine}, or with {@code inPlace} this rank's
     * block of the receive buffer.
     */
    private void allGather(CollectiveCall c, CollectiveLinks l) {
        long blk = c.blockBytes;
        long[] off = c.recvOff;
        long[] len = c.recvLen;
        if (off == null) {
            off = equalOffsets(blk);
            len = equalLengths(blk);
        }
        MemorySegment own = c.recv.asSlice(off[rank], len[rank]);
        MemorySegment mine = c.inPlace ? own : c.mine;
        Tuner.Algo algo = c.recvOff == null ? choose(c, Tuner.Op.ALLGATHER, blk * size) : Tuner.Algo.RING;
        c.algo = algo;
        if (algo == Tuner.Algo.HIERARCHICAL) {
            Hierarchical.allGather(l, topology, levels(algo, Tuner.Op.ALLGATHER, blk * size), mine.asSlice(0, blk), c.recv, blk);
            return;
        }
        MemorySegment.copy(mine, 0, own, 0, len[rank]);
        if (algo == Tuner.Algo.BRUCK) AllGather.bruck(l, c.recv, blk);
        else AllGather.ring(l, c.recv, off, len);
    }

    private void allToAll(CollectiveCall c, CollectiveLinks l) {
        // Bruck needs equal blocks: allToAllV always exchanges pairwise
        Tuner.Algo algo = c.op == CollectiveOp.ALL_TO_ALL ? choose(c, Tuner.Op.ALLTOALL, c.sendBytes) : Tuner.Algo.PAIRWISE;
        c.algo = algo;
        if (algo == Tuner.Algo.BRUCK) {
            AllToAll.bruck(l, c.send, c.recv, c.blockBytes); // reads all of send before writing recv: in place needs no copy
            return;
        }
        long[] sOff = c.sendOff;
        long[] sLen = c.sendLen;
        long[] rOff = c.recvOff;
        long[] rLen = c.recvLen;
        if (sOff == null) {
            sOff = equalOffsets(c.blockBytes);
            sLen = equalLengths(c.blockBytes);
            rOff = sOff;
            rLen = sLen;
        }
        MemorySegment src = c.send;
        if (c.send.asSlice(0, c.sendBytes).asOverlappingSlice(c.recv).isPresent()) {
            // in place: the blocks still to be sent must not be overwritten by those arriving
            src = l.scratch(c.sendBytes);
            MemorySegment.copy(c.send, 0, src, 0, c.sendBytes);
        }
        AllToAll.pairwise(l, src, sOff, sLen, c.recv, rOff, rLen);
    }

    /** Offsets of equal blocks of {@code blk} each, one per rank. */
    private long[] equalOffsets(long blk) {
        long[] off = new long[size];
        for (int r = 0; r < size; r++) off[r] = r * blk;
        return off;
    }

    private long[] equalLengths(long blk) {
        long[] len = new long[size];
        java.util.Arrays.fill(len, blk);
        return len;
    }
}
