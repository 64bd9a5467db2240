package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.algo.Tuner;
import io.hcomm4j.algo.Tuner.Algo;
import io.hcomm4j.algo.Tuner.Op;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TunerTest {
    @Test
    void parsesForcedAlgorithms() {
        assertThat(Tuner.parse("allreduce=ring;broadcast=tree")).containsEntry(Op.ALLREDUCE, Algo.RING).containsEntry(Op.BROADCAST, Algo.TREE);
        assertThat(Tuner.parse(" AllReduce = RD , allgather=bruck ")).containsEntry(Op.ALLREDUCE, Algo.RECURSIVE_DOUBLING)
                .containsEntry(Op.ALLGATHER, Algo.BRUCK);
        assertThat(Tuner.parse("reduce_scatter=ring")).containsEntry(Op.REDUCESCATTER, Algo.RING);
        assertThat(Tuner.parse("")).isEmpty();
    }

    @Test
    void badValuesFailInitListingTheValidOnes() {
        assertThatThrownBy(() -> Tuner.parse("allreduce=magic")).hasMessageContaining("'magic' is not an algorithm of allreduce")
                .hasMessageContaining("[ring, recursive_doubling]");
        assertThatThrownBy(() -> Tuner.parse("teleport=ring")).hasMessageContaining("unknown op 'teleport'").hasMessageContaining("allreduce=ring|recursive_doubling");
        assertThatThrownBy(() -> Tuner.parse("allreduce")).hasMessageContaining("not op=algorithm");
        assertThatThrownBy(() -> CommConfig.builder().algo("broadcast=ring").build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("HCOMM_ALGO").hasMessageContaining("valid: [tree, chain]");
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
}
