package io.hcomm4j.algo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.algo.Tuner.Algo;
import io.hcomm4j.algo.Tuner.LinkCost;
import io.hcomm4j.algo.Tuner.Op;
import io.hcomm4j.algo.Tuner.Shape;
import io.hcomm4j.algo.TuningTable.Entry;
import io.hcomm4j.algo.TuningTable.Signature;
import io.hcomm4j.algo.TuningTable.Step;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The tuning table's format, its strict reading, the steps built from a sweep, and the tuner consulting it. */
class TuningTableTest {
    private static final Signature TWO_HOSTS = new Signature(2, 2, 1, 1, "none", "tcp", 1.9);

    private static Entry entry(Signature s, Map<Op, List<Step>> choices) {
        return new Entry(s, new LinkCost(48e-6, 1 / 1.9e9, 1 / 5e9), null, choices, new long[] {8, 64},
                Map.of(Op.ALLREDUCE, new EnumMap<>(Map.of(Algo.RING, new double[] {5.1e-5, 5.3e-5},
                        Algo.RECURSIVE_DOUBLING, new double[] {4.0e-5, Double.NaN}))));
    }

    @Test
    void writesAndReadsBackEveryField(@TempDir Path dir) throws Exception {
        Map<Op, List<Step>> choices = new EnumMap<>(Op.class);
        choices.put(Op.ALLREDUCE, List.of(new Step(8192, Algo.RECURSIVE_DOUBLING), new Step(Long.MAX_VALUE, Algo.RING)));
        choices.put(Op.BROADCAST, List.of(new Step(Long.MAX_VALUE, Algo.CHAIN)));
        TuningTable t = TuningTable.of(List.of(entry(TWO_HOSTS, choices)));
        Path f = dir.resolve("t.json");
        Files.writeString(f, t.toJson());
        TuningTable back = TuningTable.read(f);
        assertThat(back.toJson()).isEqualTo(t.toJson());
        assertThat(back.fingerprint()).hasSize(16).isEqualTo(TuningTable.sha256(Files.readAllBytes(f)));
        Entry e = back.entries().getFirst();
        assertThat(e.signature()).isEqualTo(TWO_HOSTS);
        assertThat(e.between().alpha()).isCloseTo(48e-6, org.assertj.core.data.Offset.offset(1e-12));
        assertThat(1 / e.between().beta()).isCloseTo(1.9e9, org.assertj.core.data.Offset.offset(1e3));
        assertThat(e.within()).isNull();
        assertThat(e.choices()).isEqualTo(choices);
        assertThat(e.sizes()).containsExactly(8, 64);
        assertThat(e.measured().get(Op.ALLREDUCE).get(Algo.RING)).containsExactly(5.1e-5, 5.3e-5);
        assertThat(e.measured().get(Op.ALLREDUCE).get(Algo.RECURSIVE_DOUBLING)[1]).isNaN();
        assertThat(e.choice(Op.ALLREDUCE, 8)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        assertThat(e.choice(Op.ALLREDUCE, 8192)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        assertThat(e.choice(Op.ALLREDUCE, 8193)).isEqualTo(Algo.RING);
        assertThat(e.choice(Op.ALLGATHER, 8193)).isNull();
        // one byte more is another file: another fingerprint
        Files.writeString(f, t.toJson() + " ");
        assertThat(TuningTable.read(f).fingerprint()).isNotEqualTo(back.fingerprint());
    }

    @Test
    void badFilesAreRefusedNamingFileAndPlace(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("bad.json");
        Files.writeString(f, "{\"format\": \"other/2\", \"entries\": []}");
        assertThatThrownBy(() -> TuningTable.read(f)).hasMessageContaining(f.toString()).hasMessageContaining("HCOMM_TUNING_FILE")
                .hasMessageContaining("format is other/2");
        Files.writeString(f, "{\"format\": \"hcomm4j-tuning/1\", \"entries\": [ {");
        assertThatThrownBy(() -> TuningTable.read(f)).hasMessageContaining("offset");
        String sig = "\"signature\": {\"ranks\": 2, \"hosts\": 2, \"min_per_host\": 1, \"max_per_host\": 1, \"within\": \"none\", \"between\": \"tcp\"}";
        Files.writeString(f, "{\"format\": \"hcomm4j-tuning/1\", \"entries\": [ {" + sig
                + ", \"choices\": {\"allreduce\": [{\"up_to\": null, \"algo\": \"bruck\"}]}} ]}");
        assertThatThrownBy(() -> TuningTable.read(f)).hasMessageContaining("entries[0]")
                .hasMessageContaining("'bruck' is not an algorithm of allreduce");
        Files.writeString(f, "{\"format\": \"hcomm4j-tuning/1\", \"entries\": [ {" + sig
                + ", \"choices\": {\"allreduce\": [{\"up_to\": 64, \"algo\": \"ring\"}, {\"up_to\": 8, \"algo\": \"ring\"}]}} ]}");
        assertThatThrownBy(() -> TuningTable.read(f)).hasMessageContaining("up_to must increase, 8 after 64");
        Files.writeString(f, "{\"format\": \"hcomm4j-tuning/1\", \"entries\": [ {" + sig
                + ", \"choices\": {\"allreduce\": [{\"up_to\": 64, \"algo\": \"ring\"}]}} ]}");
        assertThatThrownBy(() -> TuningTable.read(f)).hasMessageContaining("the last step needs \"up_to\": null");
        Files.writeString(f, "{\"format\": \"hcomm4j-tuning/1\", \"entries\": [ {\"signature\": {\"ranks\": 2}} ]}");
        assertThatThrownBy(() -> TuningTable.read(f)).hasMessageContaining("entries[0].signature.hosts");
        assertThatThrownBy(() -> TuningTable.read(dir.resolve("missing.json"))).hasMessageContaining("cannot read it");
    }

    @Test
    void stepsJoinEqualChoicesWithBoundsHalfway() {
        long[] sizes = {8, 64, 512, 4096, 32768};
        assertThat(TuningTable.steps(sizes, new Algo[] {Algo.RECURSIVE_DOUBLING, Algo.RECURSIVE_DOUBLING, null, Algo.RING, Algo.RING}))
                .containsExactly(new Step(512, Algo.RECURSIVE_DOUBLING), // sqrt(64 * 4096): size 512 has no choice
                        new Step(Long.MAX_VALUE, Algo.RING));
        assertThat(TuningTable.steps(sizes, new Algo[] {Algo.RING, Algo.BRUCK, Algo.RING, Algo.RING, Algo.RING}))
                .containsExactly(new Step(22, Algo.RING), new Step(181, Algo.BRUCK), new Step(Long.MAX_VALUE, Algo.RING));
        assertThat(TuningTable.steps(sizes, new Algo[5])).isEmpty();
    }

    @Test
    void tunerTakesTheEntryOfTheShapeAfterTheForcedAndTheModelElsewhere() {
        Map<Op, List<Step>> choices = new EnumMap<>(Op.class);
        // the opposite of what the model picks on loopback costs: recursive doubling for large, ring for small
        choices.put(Op.ALLREDUCE, List.of(new Step(4096, Algo.RING), new Step(Long.MAX_VALUE, Algo.RECURSIVE_DOUBLING)));
        TuningTable table = TuningTable.of(List.of(entry(new Signature(4, 2, 2, 2, "shm", "tcp", 1.9), choices)));
        Tuner model = new Tuner(LinkCost.TCP_LOOPBACK, LinkCost.SHM, Map.of());
        Tuner tuned = new Tuner(LinkCost.TCP_LOOPBACK, LinkCost.SHM, Map.of(), table, "shm", "tcp");
        Shape match = new Shape(4, 2, 2, 2);
        assertThat(model.choose(Op.ALLREDUCE, 64 << 20, match)).isNotEqualTo(Algo.RECURSIVE_DOUBLING);
        assertThat(tuned.choose(Op.ALLREDUCE, 64 << 20, match)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        assertThat(tuned.choose(Op.ALLREDUCE, 8, match)).isEqualTo(Algo.RING);
        // no entry for the op, another shape, or another transport within the hosts: the model
        for (long bytes : new long[] {8, 4096, 1 << 20, 64 << 20}) {
            assertThat(tuned.choose(Op.ALLGATHER, bytes, match)).isEqualTo(model.choose(Op.ALLGATHER, bytes, match));
            assertThat(tuned.choose(Op.ALLREDUCE, bytes, new Shape(4, 1, 4, 4)))
                    .isEqualTo(model.choose(Op.ALLREDUCE, bytes, new Shape(4, 1, 4, 4)));
        }
        Tuner tcpWithin = new Tuner(LinkCost.TCP_LOOPBACK, LinkCost.TCP_LOOPBACK, Map.of(), table, "tcp", "tcp");
        assertThat(tcpWithin.entry(match)).isNull();
        assertThat(tuned.entry(match)).isSameAs(table.entries().getFirst());
        // HCOMM_ALGO wins over the table
        Tuner forced = new Tuner(LinkCost.TCP_LOOPBACK, LinkCost.SHM, Map.of(Op.ALLREDUCE, Algo.HALVING_DOUBLING), table, "shm", "tcp");
        assertThat(forced.choose(Op.ALLREDUCE, 64 << 20, match)).isEqualTo(Algo.HALVING_DOUBLING);
        // and `hcomm tune`'s switch wins over both while it measures
        try {
            Tuner.forceForTuning(Op.ALLREDUCE, Algo.RING);
            assertThat(tuned.choose(Op.ALLREDUCE, 64 << 20, match)).isEqualTo(Algo.RING);
            assertThat(tuned.forced(Op.ALLREDUCE)).isEqualTo(Algo.RING);
        } finally {
            Tuner.forceForTuning(Op.ALLREDUCE, null);
        }
        assertThat(tuned.choose(Op.ALLREDUCE, 64 << 20, match)).isEqualTo(Algo.RECURSIVE_DOUBLING);
    }

    @Test
    void laterEntryOfTheSameTopologyWins() {
        Map<Op, List<Step>> ring = Map.of(Op.ALLREDUCE, List.of(new Step(Long.MAX_VALUE, Algo.RING)));
        Map<Op, List<Step>> rd = Map.of(Op.ALLREDUCE, List.of(new Step(Long.MAX_VALUE, Algo.RECURSIVE_DOUBLING)));
        TuningTable t = TuningTable.of(List.of(entry(TWO_HOSTS, ring),
                entry(new Signature(2, 2, 1, 1, "none", "tcp", 9.5), rd)));
        assertThat(t.find(new Signature(2, 2, 1, 1, "none", "tcp", 0)).choice(Op.ALLREDUCE, 1)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        assertThat(t.find(new Signature(3, 2, 1, 2, "shm", "tcp", 0))).isNull();
    }

    @Test
    void aMeasuredLinkSpeedTakesTheNearestEntryWithinAFactorOfTwo() {
        Map<Op, List<Step>> ring = Map.of(Op.ALLREDUCE, List.of(new Step(Long.MAX_VALUE, Algo.RING)));
        Map<Op, List<Step>> rd = Map.of(Op.ALLREDUCE, List.of(new Step(Long.MAX_VALUE, Algo.RECURSIVE_DOUBLING)));
        Signature any = new Signature(2, 2, 1, 1, "none", "tcp", 0);
        TuningTable t = TuningTable.of(List.of(entry(TWO_HOSTS, ring), // 1.9 GB/s
                entry(new Signature(2, 2, 1, 1, "none", "tcp", 9.5), rd)));
        assertThat(t.find(any, 1.5).choice(Op.ALLREDUCE, 1)).isEqualTo(Algo.RING);
        assertThat(t.find(any, 3.7).choice(Op.ALLREDUCE, 1)).isEqualTo(Algo.RING); // 1.95x off 1.9, 2.6x off 9.5
        assertThat(t.find(any, 5.0).choice(Op.ALLREDUCE, 1)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        assertThat(t.find(any, 18).choice(Op.ALLREDUCE, 1)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        assertThat(t.find(any, 0.9)).as("2.1x slower than the slowest entry").isNull();
        assertThat(t.find(any, 20)).as("2.1x faster than the fastest entry").isNull();
        assertThat(t.find(any, 0).choice(Op.ALLREDUCE, 1)).as("not measured: the last entry").isEqualTo(Algo.RECURSIVE_DOUBLING);
        // an entry without a speed matches any measured one
        TuningTable unknown = TuningTable.of(List.of(entry(any, ring)));
        assertThat(unknown.find(any, 1000).choice(Op.ALLREDUCE, 1)).isEqualTo(Algo.RING);
        // the tuner's lookups follow the measured speed
        Tuner tuner = new Tuner(LinkCost.TCP_LOOPBACK, LinkCost.SHM, Map.of(), t, "shm", "tcp");
        Shape two = new Shape(2, 2, 1, 1);
        assertThat(tuner.entry(two).choice(Op.ALLREDUCE, 1)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        tuner.useLinkSpeed(2.0);
        assertThat(tuner.entry(two).choice(Op.ALLREDUCE, 1)).isEqualTo(Algo.RING);
        tuner.useLinkSpeed(100);
        assertThat(tuner.entry(two)).isNull();
    }
}
