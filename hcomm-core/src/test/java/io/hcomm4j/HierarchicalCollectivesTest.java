package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.algo.Tuner;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two-level collectives on ranks that are threads of this JVM, placed on "hosts" by {@code HCOMM_HOST_ID} (equal ids:
 * shared memory between them, TCP otherwise): contiguous and interleaved placements, uneven hosts (3+1, 1+3, 2+2+1),
 * and the degenerate ones (one host, one rank per host) with the algorithm forced. Every element on every rank is
 * checked against a reference (see {@link ReductionCollectivesTest}); the network-namespace version is
 * {@link NetnsHierarchyTest}.
 */
public class HierarchicalCollectivesTest {
    /** HCOMM_ALGO forcing the two-level algorithm for every op that has one. */
    public static final String FORCE = "allreduce=hier;broadcast=hier;allgather=hier;reducescatter=hier";
    private static final Duration TIMEOUT = Duration.ofMinutes(4);
    static final long[] COUNTS = {0, 1, 2, 3, 13, 97, 1009, 20_011, 100_003, 300_007};

    static int[] labels(String layout) {
        return Arrays.stream(layout.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    /** Asserts that {@code c}'s topology puts ranks on hosts as {@code labels} does (hosts numbered by lowest rank). */
    static void assertTopology(Communicator c, int[] labels) {
        Topology t = c.topology();
        assertThat(t.size()).isEqualTo(c.size());
        assertThat(t.rank()).isEqualTo(c.rank());
        for (int a = 0; a < labels.length; a++) {
            for (int b = 0; b < labels.length; b++) {
                assertThat(t.hostOf(a) == t.hostOf(b)).as("ranks %d and %d on one host", a, b).isEqualTo(labels[a] == labels[b]);
            }
        }
        assertThat(t.hosts()).isEqualTo((int) Arrays.stream(labels).distinct().count());
        int local = 0;
        for (int r = 0; r < c.rank(); r++) if (labels[r] == labels[c.rank()]) local++;
        assertThat(t.localRank()).isEqualTo(local);
        assertThat(t.localSize()).isEqualTo((int) Arrays.stream(labels).filter(x -> x == labels[c.rank()]).count());
        assertThat(t.isLeader()).isEqualTo(local == 0);
        for (int h = 1; h < t.hosts(); h++) assertThat(t.leader(h)).isGreaterThan(t.leader(h - 1));
    }

    /**
     * The four ops with a two-level algorithm at every count of {@link #COUNTS}: all-reduce (in place or not),
     * reduce-scatter, reduce-scatterV with uneven and empty blocks, broadcast from a random root, all-gather (in place or
     * not); seeded random types, reduce ops and blocking/async (the same on every rank); then an 8 MB all-reduce and
     * broadcast; every element checked.
     */
    public static void hierSequence(Communicator c, long seed) {
        int n = c.size();
        int me = c.rank();
        Random rnd = new Random(seed);
        int k = 0;
        try (Arena arena = Arena.ofShared()) {
            for (long count : COUNTS) {
                DataType t = DataType.values()[rnd.nextInt(DataType.values().length)];
                ReduceOp op = ReductionCollectivesTest.randomOp(rnd, t);
                int es = t.byteSize();
                boolean async = rnd.nextBoolean();
                boolean inPlace = rnd.nextBoolean();
                String what = "n=" + n + " rank " + me + " " + t + " " + op + " count " + count;
                { // allReduce
                    MemorySegment send = arena.allocate(Math.max(1, count * es));
                    for (long i = 0; i < count; i++) ReductionCollectivesTest.put(send, t, i, ReductionCollectivesTest.input(t, op, me, k, i));
                    MemorySegment recv = inPlace ? send : arena.allocate(Math.max(1, count * es));
                    if (async) c.allReduceAsync(send, recv, count, t, op).await();
                    else c.allReduce(send, recv, count, t, op);
                    ReductionCollectivesTest.check(recv, 0, t, op, n, k, 0, count, "allReduce " + what);
                    k++;
                }
                { // reduceScatter
                    long per = Math.min(count, 30_011);
                    MemorySegment send = arena.allocate(Math.max(1, per * n * es));
                    for (long i = 0; i < per * n; i++) ReductionCollectivesTest.put(send, t, i, ReductionCollectivesTest.input(t, op, me, k, i));
                    MemorySegment recv = arena.allocate(Math.max(1, per * es));
                    if (async) c.reduceScatterAsync(send, recv, per, t, op).await();
                    else c.reduceScatter(send, recv, per, t, op);
                    ReductionCollectivesTest.check(recv, 0, t, op, n, k, me * per, per, "reduceScatter " + what);
                    k++;
                }
                { // reduceScatterV: rank r gets (count * (r + 1)) % 5003, every third rank nothing
                    long[] counts = new long[n];
                    long total = 0;
                    for (int r = 0; r < n; r++) total += counts[r] = r % 3 == 1 ? 0 : (count * (r + 1)) % 5003;
                    long from = 0;
                    for (int r = 0; r < me; r++) from += counts[r];
                    MemorySegment send = arena.allocate(Math.max(1, total * es));
                    for (long i = 0; i < total; i++) ReductionCollectivesTest.put(send, t, i, ReductionCollectivesTest.input(t, op, me, k, i));
                    MemorySegment recv = arena.allocate(Math.max(1, counts[me] * es));
                    if (async) c.reduceScatterVAsync(send, recv, counts, t, op).await();
                    else c.reduceScatterV(send, recv, counts, t, op);
                    ReductionCollectivesTest.check(recv, 0, t, op, n, k, from, counts[me], "reduceScatterV " + what);
                    k++;
                }
                { // broadcast
                    int root = rnd.nextInt(n);
                    long blk = count * es;
                    MemorySegment buf = arena.allocate(Math.max(1, blk)).asSlice(0, blk);
                    if (me == root) DataMovementCollectivesTest.fill(buf, 0, blk, root, k);
                    if (async) c.broadcastAsync(buf, count, t, root).await();
                    else c.broadcast(buf, count, t, root);
                    DataMovementCollectivesTest.check(buf, 0, blk, root, k, "broadcast root " + root + " " + what);
                    k++;
                }
                { // allGather
                    long small = Math.min(count, 40_000);
                    long blk = small * es;
                    MemorySegment recv = arena.allocate(Math.max(1, blk * n));
                    MemorySegment send;
                    if (inPlace) {
                        send = recv;
                        DataMovementCollectivesTest.fill(recv, me * blk, blk, me, k);
                    } else {
                        send = arena.allocate(Math.max(1, blk));
                        DataMovementCollectivesTest.fill(send, 0, blk, me, k);
                    }
                    if (async) c.allGatherAsync(send, recv, small, t).await();
                    else c.allGather(send, recv, small, t);
                    for (int r = 0; r < n; r++) DataMovementCollectivesTest.check(recv, r * blk, blk, r, k, "allGather " + what);
                    k++;
                }
            }
            // 8 MB: the levels' pipelined algorithms (chain broadcasts, multi-chunk rings)
            long big = 1_000_003;
            DataType t = DataType.INT64;
            MemorySegment data = arena.allocate(big * 8);
            for (long i = 0; i < big; i++) ReductionCollectivesTest.put(data, t, i, ReductionCollectivesTest.input(t, ReduceOp.SUM, me, k, i));
            c.allReduce(data, data, big, t, ReduceOp.SUM);
            ReductionCollectivesTest.check(data, 0, t, ReduceOp.SUM, n, k, 0, big, "allReduce n=" + n + " rank " + me + " 8 MB");
            k++;
            int root = n - 1;
            if (me == root) DataMovementCollectivesTest.fill(data, 0, big * 8, root, k);
            c.broadcast(data, big, t, root);
            DataMovementCollectivesTest.check(data, 0, big * 8, root, k, "broadcast n=" + n + " rank " + me + " 8 MB");
        }
    }

    /** Runs {@code body} on ranks placed on hosts as {@code layout} (labels per rank), with {@code algo} forced. */
    static void onHosts(String layout, String algo, java.util.function.Consumer<Hcomm> body) throws Exception {
        int[] labels = labels(layout);
        Ranks.runThreadsPerRank(labels.length, TIMEOUT, (r, b) -> b.hostId("host-" + labels[r]).algo(algo), h -> {
            assertTopology(h.world(), labels);
            body.accept(h);
        });
    }

    /**
     * Forced on every placement: contiguous and interleaved 2+2, uneven 3+1 and 1+3 (one channel: the leaders), three
     * hosts 2+2+1 interleaved, the degenerate one host (no level between hosts) and one rank per host (no level
     * within), and larger ones whose levels pick the other flat algorithms: 4+1 (a reduce to the leader within the
     * host), 4 hosts x 2 interleaved (recursive doubling, halving-doubling and Bruck between hosts), 4+4
     * (halving-doubling within hosts, chain broadcasts).
     */
    @ParameterizedTest(name = "hosts of the ranks: {0}")
    @ValueSource(strings = {"0,0,1,1", "0,1,0,1", "0,0,0,1", "0,1,1,1", "0,1,1,0,2", "0,0,0", "0,1,2", "0,0,0,0,1",
            "0,1,2,3,0,1,2,3", "0,0,0,0,1,1,1,1"})
    void forcedOnEveryPlacement(String layout) throws Exception {
        onHosts(layout, FORCE, h -> {
            hierSequence(h.world(), 4_2026L + layout.hashCode());
            // the seeded random mix of the flat tests too, with the two-level algorithms under it
            ReductionCollectivesTest.sequence(h.world(), 5_2026L + layout.hashCode(), 12);
        });
    }

    /** Without HCOMM_ALGO, 2+2 ranks on two hosts take the two-level algorithms (the model's choice) and get it right. */
    @Test
    void costModelChoosesItAcrossHosts() throws Exception {
        onHosts("0,0,1,1", "", h -> {
            Tuner model = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Tuner.LinkCost.SHM, Map.of());
            Tuner.Shape shape = Tuner.Shape.of(h.world().topology());
            assertThat(model.choose(Tuner.Op.ALLREDUCE, 1 << 20, shape)).isEqualTo(Tuner.Algo.HIERARCHICAL);
            assertThat(model.choose(Tuner.Op.ALLREDUCE, 4096, shape)).isEqualTo(Tuner.Algo.HIERARCHICAL);
            hierSequence(h.world(), 6_2026L);
            DataMovementCollectivesTest.sequence(h.world(), 7_2026L, 20);
        });
    }

    /** Same-host pairs talk through shared memory, the others through TCP. */
    @Test
    void sameHostPairsUseSharedMemory() throws Exception {
        int[] labels = labels("0,1,1,0");
        onHosts("0,1,1,0", "", h -> {
            Communicator c = h.world();
            touchEveryPeer(c);
            for (int p = 0; p < c.size(); p++) {
                if (p != c.rank()) {
                    assertThat(h.transportTo(p)).as("rank %d to %d", c.rank(), p).isEqualTo(labels[p] == labels[c.rank()] ? "shm" : "tcp");
                }
            }
            c.barrier();
        });
    }

    /** One small message to and from every other rank, so that every connection exists. */
    public static void touchEveryPeer(Communicator c) {
        byte[] out = {(byte) c.rank()};
        CommFuture<?>[] fs = new CommFuture<?>[2 * c.size()];
        byte[][] in = new byte[c.size()][1];
        for (int p = 0; p < c.size(); p++) {
            if (p == c.rank()) continue;
            fs[2 * p] = c.recvAsync(in[p], p, 77);
            fs[2 * p + 1] = c.sendAsync(out, p, 77);
        }
        for (CommFuture<?> f : fs) if (f != null) f.await();
        for (int p = 0; p < c.size(); p++) if (p != c.rank()) assertThat(in[p][0]).isEqualTo((byte) p);
    }

    /** A split's topology is the parent's restricted to its members, and its two-level collectives work. */
    @Test
    void splitsRestrictTheTopology() throws Exception {
        // hosts 0: ranks 0, 2, 4; host 1: ranks 1, 3; host 2: rank 5
        int[] labels = labels("0,1,0,1,0,2");
        onHosts("0,1,0,1,0,2", FORCE, h -> {
            Communicator w = h.world();
            // even ranks: all on host 0; odd ranks: 1, 3 on host 1 and 5 on host 2; reversed by key
            try (Communicator s = w.split(w.rank() % 2, -w.rank())) {
                int[] members = w.rank() % 2 == 0 ? new int[] {4, 2, 0} : new int[] {5, 3, 1};
                int[] sub = Arrays.stream(members).map(r -> labels[r]).toArray();
                assertThat(s.rank()).isEqualTo(Arrays.stream(members).boxed().toList().indexOf(w.rank()));
                assertTopology(s, sub);
                assertThat(s.topology().hosts()).isEqualTo(w.rank() % 2 == 0 ? 1 : 2);
                hierSequence(s, 8_2026L + w.rank() % 2);
            }
            try (Communicator d = w.dup()) {
                assertThat(d.topology()).isEqualTo(w.topology());
            }
        });
    }
}
