package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Topology;
import io.hcomm4j.algo.Tuner.Algo;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Two-level collectives: within each host over its links (shared memory), between hosts over theirs (TCP), each
 * level a flat algorithm of this package run on a group of the op's ranks ({@link SubLinks}), chosen per level by
 * the {@link Tuner} ({@link Tuner.Levels}).
 *
 * <p><b>Groups.</b> A host's ranks ({@link Topology#ranksOn}, by local rank) form its <em>host group</em>. With C the
 * fewest ranks on any host, <em>channel</em> j (j &lt; C) is local rank j of every host, by host index: C groups
 * between hosts that run in parallel, so C ranks per host use their links between hosts at once (NCCL's "ring per
 * local rank"). With one rank on some host, C = 1 and the channel is the hosts' leaders.
 *
 * <p><b>Same bits everywhere.</b> Every element is reduced by one fixed sequence: the flat algorithm within its host
 * (deterministic), then the flat algorithm of its channel (deterministic, and it leaves the same bits on every member),
 * then only copied. AVG reduces as SUM within hosts and is divided once, by the rank that finishes the element between
 * hosts (the divisor is the op's rank count).
 */
public final class Hierarchical {
    private Hierarchical() {
    }

    /** The ranks of this rank's host. */
    static CollectiveLinks hostGroup(CollectiveLinks l, Topology t) {
        return new SubLinks(l, t.ranksOn(t.host()), t.localRank());
    }

    /** Channel {@code j}: local rank j of every host, by host. */
    static CollectiveLinks channel(CollectiveLinks l, Topology t, int j) {
        int[] m = new int[t.hosts()];
        for (int h = 0; h < m.length; h++) m[h] = t.ranksOn(h)[j];
        return new SubLinks(l, m, t.host());
    }

    private static void check(CollectiveLinks l, Topology t) {
        if (t.size() != l.size() || t.rank() != l.rank()) {
            throw new IllegalArgumentException("topology of rank " + t.rank() + " of " + t.size() + " for links of rank " + l.rank()
                    + " of " + l.size());
        }
    }

    /**
     * All-reduce of {@code count} elements of {@code send} into {@code data} (which may be {@code send}): (1) within
     * each host a reduce-scatter that leaves channel block j (of C balanced blocks) on local rank j (ranks beyond C
     * get empty blocks; with C = 1 a reduce to the leader); (2) an all-reduce of block j in channel j; (3) within
     * each host an all-gather of the C blocks (with C = 1 a broadcast from the leader).
     */
    public static void allReduce(CollectiveLinks l, Topology t, Tuner.Levels lv, MemorySegment send, MemorySegment data,
                                 long count, ReduceKernel k, int avgDivisor) {
        check(l, t);
        int es = k.type().byteSize();
        int local = t.localSize();
        int c = t.minLocalSize();
        int me = t.localRank();
        long[] part = Reductions.split(count, c);
        long[] at = hostBlocks(part, local);
        MemorySegment in = send.asSlice(0, count * es);
        MemorySegment d = data.asSlice(0, count * es);
        if ((local == 1 || lv.intraBefore() != Algo.RING) && !Reductions.sameStart(in, d)) {
            MemorySegment.copy(in, 0, d, 0, count * es);
        }
        if (local > 1) {
            CollectiveLinks host = hostGroup(l, t);
            switch (lv.intraBefore()) {
                case TREE -> Reductions.binomialReduce(host, d, count, k, 0, 1); // c == 1: block 0 is everything
                case HALVING_DOUBLING -> HalvingDoubling.reduceScatter(host, d, at, k, 1);
                default -> Reductions.ringReduceScatter(host, in, d, at, k, Reductions.ringChunkElems(count * es / c, es), 1);
            }
        }
        if (me < c) {
            long len = part[me + 1] - part[me];
            MemorySegment mine = d.asSlice(part[me] * es, len * es);
            if (t.hosts() == 1) {
                if (avgDivisor > 1) k.finish(mine, 0, len, avgDivisor);
            } else {
                CollectiveLinks ch = channel(l, t, me);
                switch (lv.inter()) {
                    case RECURSIVE_DOUBLING -> Reductions.recursiveDoubling(ch, mine, len, k, avgDivisor);
                    case HALVING_DOUBLING -> HalvingDoubling.allReduce(ch, mine, len, k, avgDivisor);
                    default -> Reductions.ringAllReduce(ch, mine, mine, len, k,
                            Reductions.ringChunkElems(len * es / t.hosts(), es), avgDivisor);
                }
            }
        }
        if (local > 1) {
            CollectiveLinks host = hostGroup(l, t);
            switch (lv.intraAfter()) {
                case TREE -> Broadcast.binomialTree(host, d, 0);
                case CHAIN -> Broadcast.pipelinedChain(host, d, 0, Broadcast.CHAIN_CHUNK);
                default -> {
                    long[] off = new long[local];
                    long[] len = new long[local];
                    for (int j = 0; j < local; j++) {
                        off[j] = at[j] * es;
                        len[j] = (at[j + 1] - at[j]) * es;
                    }
                    AllGather.ring(host, d, off, len);
                }
            }
        }
    }

    /** Blocks of a host's {@code local} ranks (elements): the C channel blocks of {@code part}, then empty ones. */
    private static long[] hostBlocks(long[] part, int local) {
        int c = part.length - 1;
        long[] at = new long[local + 1];
        for (int j = 0; j < local; j++) at[j + 1] = j < c ? part[j + 1] : part[c];
        return at;
    }

    /**
     * Reduce-scatter: rank r gets the reduction of block r ({@code counts[r]} elements; the blocks lie in rank order in
     * {@code send}) in {@code recv}. The blocks are first copied into channel order: channel j's region holds, host by
     * host, the blocks of the local ranks i ≡ j (mod C). (1) Within each host a reduce-scatter leaves region j on local
     * rank j; (2) channel j reduce-scatters its region by host, so local rank j of host h holds the reduced blocks of
     * its host's local ranks i ≡ j (mod C); (3) it keeps its own and sends the others to their ranks.
     */
    public static void reduceScatter(CollectiveLinks l, Topology t, Tuner.Levels lv, MemorySegment send, MemorySegment recv,
                                     long[] counts, ReduceKernel k, int avgDivisor) {
        check(l, t);
        int es = k.type().byteSize();
        int n = t.size();
        int hosts = t.hosts();
        int local = t.localSize();
        int c = t.minLocalSize();
        int me = t.localRank();
        long[] from = new long[n + 1];
        for (int r = 0; r < n; r++) from[r + 1] = from[r] + counts[r];
        long total = from[n];
        long[] pos = new long[n];
        long[] region = new long[c + 1];
        long[][] sub = new long[c][hosts + 1];
        long at = 0;
        for (int j = 0; j < c; j++) {
            region[j] = at;
            for (int h = 0; h < hosts; h++) {
                sub[j][h] = at - region[j];
                int[] m = t.ranksOn(h);
                for (int i = j; i < m.length; i += c) {
                    pos[m[i]] = at;
                    at += counts[m[i]];
                }
            }
            sub[j][hosts] = at - region[j];
        }
        region[c] = at;
        MemorySegment w = l.scratch(total * es);
        for (int r = 0; r < n; r++) MemorySegment.copy(send, from[r] * es, w, pos[r] * es, counts[r] * es);
        if (local > 1) {
            CollectiveLinks host = hostGroup(l, t);
            long[] blocks = hostBlocks(region, local);
            switch (lv.intraBefore()) {
                case TREE -> Reductions.binomialReduce(host, w, total, k, 0, 1);
                case HALVING_DOUBLING -> HalvingDoubling.reduceScatter(host, w, blocks, k, 1);
                default -> Reductions.ringReduceScatter(host, w, w, blocks, k, Reductions.ringChunkElems(total * es / c, es), 1);
            }
        }
        int[] mates = t.ranksOn(t.host());
        if (me < c) {
            long regionLen = region[me + 1] - region[me];
            MemorySegment reg = w.asSlice(region[me] * es, regionLen * es);
            if (hosts == 1) {
                if (avgDivisor > 1) k.finish(reg, 0, regionLen, avgDivisor);
            } else {
                CollectiveLinks ch = channel(l, t, me);
                if (lv.inter() == Algo.HALVING_DOUBLING) HalvingDoubling.reduceScatter(ch, reg, sub[me], k, avgDivisor);
                else Reductions.ringReduceScatter(ch, reg, reg, sub[me], k, Reductions.ringChunkElems(regionLen * es / hosts, es), avgDivisor);
            }
            List<CommFuture<Void>> sends = new ArrayList<>();
            CollectiveLinks host = local > c ? hostGroup(l, t) : null;
            for (int i = me; i < local; i += c) {
                int r = mates[i];
                MemorySegment block = w.asSlice(pos[r] * es, counts[r] * es);
                if (i == me) MemorySegment.copy(block, 0, recv, 0, block.byteSize());
                else sends.add(host.send(i, block));
            }
            for (CommFuture<Void> s : sends) s.await();
        } else {
            CollectiveLinks host = hostGroup(l, t);
            long bytes = counts[mates[me]] * es;
            host.await(host.recv(me % c, recv.asSlice(0, bytes)), bytes);
        }
    }

    /**
     * All-gather of {@code blockBytes} per rank ({@code mine}) into {@code recv} (block r at r × blockBytes): (1) each
     * host gathers its blocks on its leader; (2) the leaders all-gather the hosts' blocks (host by host); (3) each leader
     * broadcasts them within its host. If the hosts' ranks interleave, the blocks travel host by host in scratch memory
     * and are put in rank order at the end; otherwise they land in {@code recv} directly.
     */
    public static void allGather(CollectiveLinks l, Topology t, Tuner.Levels lv, MemorySegment mine, MemorySegment recv,
                                 long blockBytes) {
        check(l, t);
        int n = t.size();
        int hosts = t.hosts();
        int local = t.localSize();
        int me = t.localRank();
        boolean inOrder = true;
        for (int r = 1; r < n; r++) if (t.hostOf(r) < t.hostOf(r - 1)) inOrder = false;
        long[] hostOff = new long[hosts + 1];
        for (int h = 0; h < hosts; h++) hostOff[h + 1] = hostOff[h] + t.ranksOn(h).length * blockBytes;
        MemorySegment g = inOrder ? recv : l.scratch(n * blockBytes);
        MemorySegment ours = g.asSlice(hostOff[t.host()], local * blockBytes);
        if (local == 1) {
            MemorySegment.copy(mine, 0, ours, 0, blockBytes);
        } else {
            Rooted.gatherBinomial(hostGroup(l, t), mine, me == 0 ? ours : null, 0, blockBytes);
        }
        if (me == 0 && hosts > 1) {
            int[] leaders = new int[hosts];
            for (int h = 0; h < hosts; h++) leaders[h] = t.leader(h);
            CollectiveLinks between = new SubLinks(l, leaders, t.host());
            if (lv.inter() == Algo.BRUCK) {
                AllGather.bruck(between, g, local * blockBytes); // only offered when every host has as many ranks
            } else {
                long[] len = new long[hosts];
                for (int h = 0; h < hosts; h++) len[h] = hostOff[h + 1] - hostOff[h];
                AllGather.ring(between, g, java.util.Arrays.copyOf(hostOff, hosts), len);
            }
        }
        if (local > 1) {
            MemorySegment all = g.asSlice(0, n * blockBytes);
            if (lv.intraAfter() == Algo.CHAIN) Broadcast.pipelinedChain(hostGroup(l, t), all, 0, Broadcast.CHAIN_CHUNK);
            else Broadcast.binomialTree(hostGroup(l, t), all, 0);
        }
        if (!inOrder) {
            for (int r = 0; r < n; r++) {
                MemorySegment.copy(g, hostOff[t.hostOf(r)] + t.localRankOf(r) * blockBytes, recv, r * blockBytes, blockBytes);
            }
        }
    }

    /**
     * Broadcast of {@code buf} from {@code root}: (1) between hosts, among one rank per host (the root on its host, the
     * leader elsewhere); (2) within each host from that rank.
     */
    public static void broadcast(CollectiveLinks l, Topology t, Tuner.Levels lv, MemorySegment buf, int root) {
        check(l, t);
        int hosts = t.hosts();
        int rootHost = t.hostOf(root);
        int[] reps = new int[hosts];
        for (int h = 0; h < hosts; h++) reps[h] = h == rootHost ? root : t.leader(h);
        int mine = reps[t.host()];
        if (hosts > 1 && l.rank() == mine) {
            CollectiveLinks between = new SubLinks(l, reps, t.host());
            if (lv.inter() == Algo.CHAIN) Broadcast.pipelinedChain(between, buf, rootHost, Broadcast.CHAIN_CHUNK);
            else Broadcast.binomialTree(between, buf, rootHost);
        }
        if (t.localSize() > 1) {
            int from = t.localRankOf(mine);
            if (lv.intraAfter() == Algo.CHAIN) Broadcast.pipelinedChain(hostGroup(l, t), buf, from, Broadcast.CHAIN_CHUNK);
            else Broadcast.binomialTree(hostGroup(l, t), buf, from);
        }
    }
}
