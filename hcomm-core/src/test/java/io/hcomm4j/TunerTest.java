package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.algo.Tuner;
import io.hcomm4j.algo.Tuner.Algo;
import io.hcomm4j.algo.Tuner.LinkCost;
import io.hcomm4j.algo.Tuner.Levels;
import io.hcomm4j.algo.Tuner.Op;
import io.hcomm4j.algo.Tuner.Shape;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TunerTest {
    @Test
    void parsesForcedAlgorithms() {
        assertThat(Tuner.parse("allreduce=ring;broadcast=tree")).containsEntry(Op.ALLREDUCE, Algo.RING).containsEntry(Op.BROADCAST, Algo.TREE);
        assertThat(Tuner.parse(" AllReduce = RD , allgather=bruck ")).containsEntry(Op.ALLREDUCE, Algo.RECURSIVE_DOUBLING)
                .containsEntry(Op.ALLGATHER, Algo.BRUCK);
        assertThat(Tuner.parse("reduce_scatter=ring")).containsEntry(Op.REDUCESCATTER, Algo.RING);
        assertThat(Tuner.parse("allreduce=halving-doubling;reducescatter=HD;alltoall=bruck"))
                .containsEntry(Op.ALLREDUCE, Algo.HALVING_DOUBLING).containsEntry(Op.REDUCESCATTER, Algo.HALVING_DOUBLING)
                .containsEntry(Op.ALLTOALL, Algo.BRUCK);
        assertThat(Tuner.parse("allreduce=Rabenseifner")).containsEntry(Op.ALLREDUCE, Algo.HALVING_DOUBLING);
        assertThat(Tuner.parse("")).isEmpty();
    }

    @Test
    void badValuesFailInitListingTheValidOnes() {
        assertThatThrownBy(() -> Tuner.parse("allreduce=magic")).hasMessageContaining("'magic' is not an algorithm of allreduce")
                .hasMessageContaining("[ring, recursive_doubling, halving_doubling, hierarchical]");
        assertThatThrownBy(() -> Tuner.parse("broadcast=hd")).hasMessageContaining("'hd' is not an algorithm of broadcast");
        assertThatThrownBy(() -> Tuner.parse("alltoallv=bruck")).hasMessageContaining("unknown op 'alltoallv'");
        assertThatThrownBy(() -> Tuner.parse("teleport=ring")).hasMessageContaining("unknown op 'teleport'").hasMessageContaining("allreduce=ring|recursive_doubling");
        assertThatThrownBy(() -> Tuner.parse("allreduce")).hasMessageContaining("not op=algorithm");
        assertThatThrownBy(() -> CommConfig.builder().algo("broadcast=ring").build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("HCOMM_ALGO").hasMessageContaining("valid: [tree, chain, hierarchical]");
    }

    @Test
    void costModelPicksLatencyAlgorithmsSmallAndBandwidthAlgorithmsLarge() {
        Tuner t = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Map.of());
        assertThat(t.choose(Op.ALLREDUCE, 4096, 4)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        assertThat(t.choose(Op.ALLREDUCE, 64L << 20, 4)).isEqualTo(Algo.RING);
        assertThat(t.choose(Op.ALLGATHER, 1024, 8)).isEqualTo(Algo.BRUCK);
        assertThat(t.choose(Op.ALLGATHER, 64L << 20, 8)).isEqualTo(Algo.RING);
        assertThat(t.choose(Op.BROADCAST, 1024, 8)).isEqualTo(Algo.TREE);
        assertThat(t.choose(Op.BROADCAST, 256L << 20, 8)).isEqualTo(Algo.CHAIN);
        Tuner forced = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Tuner.parse("allreduce=ring"));
        assertThat(forced.choose(Op.ALLREDUCE, 8, 4)).isEqualTo(Algo.RING);
    }

    /** The algorithms the model picks for {@code op} on {@code n} ranks as the size grows from 8 B to 1 GiB, in order. */
    private static List<Algo> sweep(Tuner t, Op op, int n) {
        List<Algo> seen = new ArrayList<>();
        for (long bytes = 8; bytes <= 1L << 30; bytes += Math.max(8, bytes / 16)) {
            Algo a = t.choose(op, bytes, n);
            if (seen.isEmpty() || seen.getLast() != a) seen.add(a);
        }
        return seen;
    }

    @Test
    void rabenseifnerTakesTheMiddleOfAllReduceOnFourToEightRanks() {
        Tuner t = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Map.of());
        // fewer messages than the ring, fewer bytes than recursive doubling; the ring's pipelined reduction wins large
        for (int n : new int[] {4, 6, 7, 8}) {
            assertThat(sweep(t, Op.ALLREDUCE, n)).as("%d ranks", n)
                    .containsExactly(Algo.RECURSIVE_DOUBLING, Algo.HALVING_DOUBLING, Algo.RING);
        }
        assertThat(t.choose(Op.ALLREDUCE, 256 << 10, 4)).isEqualTo(Algo.HALVING_DOUBLING);
        assertThat(t.choose(Op.ALLREDUCE, 256 << 10, 8)).isEqualTo(Algo.HALVING_DOUBLING);
        assertThat(t.choose(Op.ALLREDUCE, 64L << 20, 8)).isEqualTo(Algo.RING);
        // on two ranks both move the same bytes in the same messages, and the ring overlaps its reduction;
        // on three the fold costs a whole extra vector
        assertThat(sweep(t, Op.ALLREDUCE, 2)).containsExactly(Algo.RECURSIVE_DOUBLING, Algo.RING);
        assertThat(sweep(t, Op.ALLREDUCE, 3)).doesNotContain(Algo.HALVING_DOUBLING);
        // the cost follows Thakur et al.: on a power of two exactly the ring's bytes, with log2 p instead of p-1 steps
        for (long m : new long[] {4096, 1 << 20}) {
            double a = Tuner.LinkCost.TCP_LOOPBACK.alpha();
            assertThat(t.cost(Op.ALLREDUCE, Algo.RING, m, 8) - t.cost(Op.ALLREDUCE, Algo.HALVING_DOUBLING, m, 8))
                    .isCloseTo(2 * (7 - 3) * a, org.assertj.core.data.Offset.offset(1e-12));
        }
    }

    @Test
    void recursiveHalvingTakesSmallToMidReduceScatterOnPowersOfTwo() {
        Tuner t = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Map.of());
        assertThat(sweep(t, Op.REDUCESCATTER, 8)).containsExactly(Algo.HALVING_DOUBLING, Algo.RING);
        assertThat(sweep(t, Op.REDUCESCATTER, 4)).containsExactly(Algo.HALVING_DOUBLING, Algo.RING);
        assertThat(t.choose(Op.REDUCESCATTER, 64 << 10, 8)).isEqualTo(Algo.HALVING_DOUBLING);
        assertThat(t.choose(Op.REDUCESCATTER, 256L << 20, 8)).isEqualTo(Algo.RING);
        // the fold's extra vector outweighs a step saved on 3 and 5 ranks; on 2 the two are the same exchange
        for (int n : new int[] {2, 3, 5}) assertThat(sweep(t, Op.REDUCESCATTER, n)).as("%d ranks", n).containsExactly(Algo.RING);
    }

    @Test
    void bruckTakesSmallAllToAll() {
        Tuner t = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Map.of());
        for (int n : new int[] {4, 5, 8}) {
            assertThat(sweep(t, Op.ALLTOALL, n)).as("%d ranks", n).containsExactly(Algo.BRUCK, Algo.PAIRWISE);
        }
        assertThat(t.choose(Op.ALLTOALL, 1024, 8)).isEqualTo(Algo.BRUCK);
        assertThat(t.choose(Op.ALLTOALL, 1L << 20, 8)).isEqualTo(Algo.PAIRWISE);
        // two or three ranks: as many rounds as pairwise steps, so pairwise (no packing) always
        assertThat(sweep(t, Op.ALLTOALL, 2)).containsExactly(Algo.PAIRWISE);
        assertThat(sweep(t, Op.ALLTOALL, 3)).containsExactly(Algo.PAIRWISE);
        Tuner forced = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Tuner.parse("alltoall=bruck"));
        assertThat(forced.choose(Op.ALLTOALL, 64L << 20, 8)).isEqualTo(Algo.BRUCK);
    }

    // ------------------------------------------------------------------------------------ two levels

    private static final Tuner HOSTS = new Tuner(LinkCost.TCP_LOOPBACK, LinkCost.SHM, Map.of());
    private static final Op[] TWO_LEVEL_OPS = {Op.ALLREDUCE, Op.REDUCESCATTER, Op.ALLGATHER, Op.BROADCAST};

    private static List<Algo> sweep(Tuner t, Op op, Shape s) {
        List<Algo> seen = new ArrayList<>();
        for (long bytes = 8; bytes <= 1L << 30; bytes += Math.max(8, bytes / 16)) {
            Algo a = t.choose(op, bytes, s);
            if (seen.isEmpty() || seen.getLast() != a) seen.add(a);
        }
        return seen;
    }

    @Test
    void hierarchicalIsForcedByItsNameOrHier() {
        assertThat(Tuner.parse("allreduce=hier;broadcast=hierarchical;allgather=HIER;reduce_scatter=two-level"))
                .containsEntry(Op.ALLREDUCE, Algo.HIERARCHICAL).containsEntry(Op.BROADCAST, Algo.HIERARCHICAL)
                .containsEntry(Op.ALLGATHER, Algo.HIERARCHICAL).containsEntry(Op.REDUCESCATTER, Algo.HIERARCHICAL);
        assertThatThrownBy(() -> Tuner.parse("reduce=hier")).hasMessageContaining("'hier' is not an algorithm of reduce")
                .hasMessageContaining("allreduce=ring|recursive_doubling|halving_doubling|hierarchical");
        assertThatThrownBy(() -> Tuner.parse("alltoall=hierarchical")).hasMessageContaining("valid: [pairwise, bruck]");
        // forced, it runs even where it has a single level (one host, or one rank per host)
        Tuner forced = new Tuner(LinkCost.TCP_LOOPBACK, LinkCost.SHM, Tuner.parse("allreduce=hier"));
        assertThat(forced.choose(Op.ALLREDUCE, 1 << 20, Shape.oneHost(4))).isEqualTo(Algo.HIERARCHICAL);
        assertThat(forced.choose(Op.ALLREDUCE, 1 << 20, new Shape(4, 4, 1, 1))).isEqualTo(Algo.HIERARCHICAL);
        assertThat(forced.choose(Op.BROADCAST, 1 << 20, Shape.oneHost(4))).isNotEqualTo(Algo.HIERARCHICAL);
    }

    @Test
    void neverOnOneHostNorWithOneRankPerHost() {
        for (int n = 1; n <= 9; n++) {
            for (Op op : TWO_LEVEL_OPS) {
                assertThat(sweep(HOSTS, op, Shape.oneHost(n))).as("%s on %d ranks of one host", op, n).doesNotContain(Algo.HIERARCHICAL);
                assertThat(sweep(HOSTS, op, new Shape(n, n, 1, 1))).as("%s on %d hosts of one rank", op, n).doesNotContain(Algo.HIERARCHICAL);
                // and on one host the choice is the flat one of before
                assertThat(sweep(HOSTS, op, Shape.oneHost(n))).isEqualTo(sweep(new Tuner(LinkCost.TCP_LOOPBACK, Map.of()), op, n));
            }
        }
        assertThat(new Shape(4, 2, 2, 2).multiLevel()).isTrue();
        assertThat(new Shape(4, 1, 4, 4).multiLevel()).isFalse();
        assertThat(new Shape(4, 4, 1, 1).multiLevel()).isFalse();
    }

    @Test
    void allReduceAcrossHostsIsHierarchicalAtEverySizeWhenHostsAreEven() {
        // fewer messages over TCP at small sizes; at large ones every rank's TCP link carries 1/C of the vector
        for (Shape s : new Shape[] {new Shape(4, 2, 2, 2), new Shape(8, 2, 4, 4), new Shape(8, 4, 2, 2), new Shape(16, 2, 8, 8)}) {
            assertThat(sweep(HOSTS, Op.ALLREDUCE, s)).as("%s", s).containsExactly(Algo.HIERARCHICAL);
        }
        // 3+1: one channel (the leaders carry everything between hosts): only small vectors gain
        assertThat(sweep(HOSTS, Op.ALLREDUCE, new Shape(4, 2, 1, 3))).first().isEqualTo(Algo.HIERARCHICAL);
        assertThat(HOSTS.choose(Op.ALLREDUCE, 4096, new Shape(4, 2, 1, 3))).isEqualTo(Algo.HIERARCHICAL);
        assertThat(HOSTS.choose(Op.ALLREDUCE, 64L << 20, new Shape(4, 2, 1, 3))).isEqualTo(Algo.RING);
    }

    @Test
    void otherOpsTakeItSmallAndLeaveLargeOnesToTheFlatPipelines() {
        Shape s = new Shape(4, 2, 2, 2);
        for (Op op : TWO_LEVEL_OPS) {
            assertThat(HOSTS.choose(op, 4096, s)).as("%s 4 KiB", op).isEqualTo(Algo.HIERARCHICAL);
        }
        // the flat chain pipelines a large broadcast through every rank; the two levels pass it twice in a row
        assertThat(HOSTS.choose(Op.BROADCAST, 256L << 20, s)).isEqualTo(Algo.CHAIN);
        // a large all-gather through the leaders moves more than the flat ring
        assertThat(HOSTS.choose(Op.ALLGATHER, 64L << 20, s)).isEqualTo(Algo.RING);
        // with TCP within hosts too (HCOMM_TRANSPORT=tcp), only the message count differs: reduce-scatter stays flat
        Tuner tcp = new Tuner(LinkCost.TCP_LOOPBACK, LinkCost.TCP_LOOPBACK, Map.of());
        assertThat(sweep(tcp, Op.REDUCESCATTER, s)).doesNotContain(Algo.HIERARCHICAL);
    }

    @Test
    void hierarchicalCostIsTheSumOfItsLevels() {
        Tuner shm = new Tuner(LinkCost.SHM, Map.of());
        Tuner tcp = new Tuner(LinkCost.TCP_LOOPBACK, Map.of());
        Shape s = new Shape(4, 2, 2, 2);
        for (long m : new long[] {4096, 1 << 20, 64L << 20}) {
            Levels lv = HOSTS.levels(Op.ALLREDUCE, m, s, 2);
            Algo inter = tcp.choose(Op.ALLREDUCE, m / 2, 2);
            assertThat(lv.inter()).isEqualTo(inter);
            double sum = shm.cost(Op.REDUCESCATTER, lv.intraBefore(), m, 2) + tcp.cost(Op.ALLREDUCE, inter, m / 2, 2)
                    + shm.cost(Op.ALLGATHER, Algo.RING, m, 2);
            assertThat(HOSTS.cost(Op.ALLREDUCE, Algo.HIERARCHICAL, m, s)).isCloseTo(sum, org.assertj.core.data.Offset.offset(sum * 1e-9));
        }
        // 4 KiB: recursive doubling between the hosts; 1 MiB: rings at both levels
        assertThat(HOSTS.levels(Op.ALLREDUCE, 4096, s, 2)).isEqualTo(new Levels(Algo.RING, Algo.RECURSIVE_DOUBLING, Algo.RING));
        assertThat(HOSTS.levels(Op.ALLREDUCE, 1 << 20, s, 2)).isEqualTo(new Levels(Algo.RING, Algo.RING, Algo.RING));
        // 3+1: one channel, so a reduce to the leader and a broadcast from it on the host of three
        Levels uneven = HOSTS.levels(Op.ALLREDUCE, 4096, new Shape(4, 2, 1, 3), 3);
        assertThat(uneven.intraBefore()).isIn(Algo.TREE, Algo.RING);
        assertThat(uneven.intraAfter()).isIn(Algo.TREE, Algo.CHAIN);
        assertThat(HOSTS.levels(Op.BROADCAST, 4096, s, 2).intraBefore()).isNull();
        // Bruck between leaders only when every host has as many ranks (equal blocks)
        assertThat(HOSTS.levels(Op.ALLGATHER, 64, new Shape(5, 3, 1, 2), 2).inter()).isEqualTo(Algo.RING);
        assertThat(HOSTS.levels(Op.ALLGATHER, 64, new Shape(16, 8, 2, 2), 2).inter()).isEqualTo(Algo.BRUCK);
    }
}
