package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.algo.Tuner;
import io.hcomm4j.algo.Tuner.Algo;
import io.hcomm4j.algo.Tuner.Op;
import io.hcomm4j.algo.TuningTable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hcomm tune} as a command: two rank JVMs measure every algorithm (checked results), the ops in the order
 * {@code --ops} gives, and rank 0 writes a table that reads back with a choice per op, the measured times and the link,
 * in place of the entry of its own topology the file had, beside the entry of another topology it keeps; bad options are
 * usage errors naming them.
 */
@Timeout(240)
class TuneCommandTest {
    @TempDir
    Path tmp;

    @Test
    void twoRanksWriteATableThatReadsBackAndMergesByTopology() throws Exception {
        Path file = tmp.resolve("tuning.json");
        // an entry of another topology, which the run must keep, and an older one of the run's own topology (2 ranks on
        // one host, allreduce at 8 bytes only, as "--ops allreduce -b 8 -e 8" writes it), which it must replace: one run
        // of rank JVMs for both (a second tune run cost 10-15 s here, most of it the JIT warm-up every run starts with)
        String tables = """
                {"format": "hcomm4j-tuning/1", "entries": [ {
                  "signature": {"ranks": 8, "hosts": 2, "min_per_host": 4, "max_per_host": 4, "within": "shm", "between": "tcp"},
                  "choices": {"allreduce": [{"up_to": null, "algo": "hierarchical"}]} }, {
                  "signature": {"ranks": 2, "hosts": 1, "min_per_host": 2, "max_per_host": 2, "within": "shm", "between": "none"},
                  "choices": {"allreduce": [{"up_to": null, "algo": "ring"}]},
                  "measured": {"sizes": [8], "allreduce": {"ring": [0.000009]}} } ]}
                """;
        Files.writeString(file, tables);
        TuningTable before = TuningTable.read(file);
        assertThat(before.entries()).hasSize(2);
        assertThat(before.entries().get(1).choices().keySet()).containsExactly(Op.ALLREDUCE);
        assertThat(before.entries().get(1).sizes()).containsExactly(8);
        Captured io = new Captured();
        // the five ops in an order of their own: the launcher passes --ops on, and the ranks measure in its order; a short
        // warm-up (the default 20 s of the library's, and a second per algorithm, ran to their ends on a loaded machine)
        int code = HcommCli.execute(new String[] {"tune", "-n", "2", "-o", file.toString(), "-b", "8", "-e", "512", "-f", "8",
                "--ops", "alltoall,reducescatter,allgather,broadcast,allreduce", "--warmup", "2s"}, io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        assertThat(io.errLines()).as(io.toString()).filteredOn(l -> l.startsWith("[rank 0] # measured "))
                .extracting(l -> l.substring("[rank 0] # measured ".length(), l.indexOf(':')))
                .containsExactly("alltoall", "reducescatter", "allgather", "broadcast", "allreduce");
        TuningTable t = TuningTable.read(file);
        assertThat(t.entries()).hasSize(2);
        assertThat(t.entries().getFirst().signature().ranks()).isEqualTo(8);
        assertThat(t.fingerprint()).isNotEqualTo(before.fingerprint());
        TuningTable.Entry e = t.entries().get(1);
        assertThat(e.signature()).isEqualTo(new TuningTable.Signature(2, 1, 2, 2, "shm", "none", 0));
        assertThat(e.sizes()).containsExactly(8, 64, 512);
        assertThat(e.choices().keySet()).containsExactlyInAnyOrder(Op.ALLREDUCE, Op.BROADCAST, Op.ALLGATHER, Op.REDUCESCATTER, Op.ALLTOALL);
        assertThat(e.measured().get(Op.ALLREDUCE).keySet())
                .containsExactlyInAnyOrder(Algo.RING, Algo.RECURSIVE_DOUBLING, Algo.HALVING_DOUBLING);
        assertThat(e.measured().get(Op.ALLTOALL).keySet()).containsExactlyInAnyOrder(Algo.PAIRWISE, Algo.BRUCK);
        for (Map<Algo, double[]> per : e.measured().values()) {
            for (double[] secs : per.values()) {
                assertThat(secs).hasSize(3);
                for (double s : secs) assertThat(s).isPositive().isLessThan(1.0);
            }
        }
        Tuner model = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Tuner.LinkCost.SHM, Map.of());
        for (Op op : e.choices().keySet()) {
            for (int k = 0; k < 3; k++) {
                long size = e.sizes()[k];
                Algo chosen = e.choice(op, size);
                int at = k;
                double best = e.measured().get(op).values().stream().mapToDouble(s -> s[at]).min().orElseThrow();
                // the model's choice, or the fastest measured
                if (chosen != model.choose(op, size, Tuner.Shape.oneHost(2))) {
                    assertThat(e.measured().get(op).get(chosen)[k]).as("%s at %d bytes", op, size).isEqualTo(best);
                }
            }
        }
        assertThat(e.within()).as("the within-host link was probed").isNotNull();
        assertThat(e.between()).isNull();
        assertThat(io.out()).contains("# hcomm tune: 2 ranks on 1 hosts", "# allreduce", "# alltoall", "# wrote " + file);
        // what "--ops allreduce -b 8 -e 8" measures (the launcher and the ranks both take the ops and sizes from these)
        assertThat(TuneCommand.ops(List.of("allreduce"))).containsExactly(Op.ALLREDUCE);
        assertThat(TuneCommand.sizes(8, 8, 8)).containsExactly(8L);
    }

    @Test
    void anotherAlgorithmReplacesTheModelsOnlyIfItsSlowestRoundBeatsTheModelsFastestByTheMargin() {
        Map<Algo, double[][]> r = new java.util.LinkedHashMap<>();
        r.put(Algo.RING, new double[][] {{10, 11, 10}, {10, 10, 10}, {10, 10, 10}, {10, 30, 30}});
        r.put(Algo.RECURSIVE_DOUBLING, new double[][] {{8, 8.9, 8}, {5, 9.5, 5}, {9.5, 9.5, 9.5}, {5, 20, 20}});
        r.put(Algo.HALVING_DOUBLING, new double[][] {{12, 12, 12}, {12, 12, 12}, {9.6, 9.7, 9.8}, {12, 12, 12}});
        // slowest 8.9 is more than 10 % below the model's fastest 10: replaced
        assertThat(TuneCommand.choose(r, 0, Algo.RING)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        // fastest round 5, but one round at 9.5: the spread covers the lead, the model's stays
        assertThat(TuneCommand.choose(r, 1, Algo.RING)).isEqualTo(Algo.RING);
        // 5 % faster: noise
        assertThat(TuneCommand.choose(r, 2, Algo.RING)).isEqualTo(Algo.RING);
        // faster by far in each round side by side (5 < 10, 20 < 30, 20 < 30), but 20 is not below the model's 10: it stays
        assertThat(TuneCommand.choose(r, 3, Algo.RING)).isEqualTo(Algo.RING);
        // the model's is the fastest: it stays
        assertThat(TuneCommand.choose(r, 0, Algo.RECURSIVE_DOUBLING)).isEqualTo(Algo.RECURSIVE_DOUBLING);
        // a model's choice that was not measured (hierarchical on one host): the fastest
        assertThat(TuneCommand.choose(r, 1, Algo.HIERARCHICAL)).isEqualTo(Algo.RECURSIVE_DOUBLING);
    }

    @Test
    void badOptionsAreUsageErrorsNamingThem() {
        for (List<String> args : List.of(List.of("--ops", "reduce"), List.of("-b", "1M", "-e", "4K"), List.of("-f", "1"),
                List.of("-n", "1"), List.of("--warmup", "-1s"))) {
            Captured io = new Captured();
            String[] all = java.util.stream.Stream.concat(java.util.stream.Stream.of("tune", "-o", tmp.resolve("x.json").toString()),
                    args.stream()).toArray(String[]::new);
            int code = HcommCli.execute(all, io.out, io.err, Map.of());
            assertThat(code).as(io.toString()).isEqualTo(2);
            String want = switch (args.getFirst()) {
                case "--ops" -> "--ops: 'reduce' is not one of";
                case "-b" -> "--maxbytes 4096 is below --minbytes 1048576";
                case "-f" -> "--stepfactor must be >= 2";
                case "--warmup" -> "--warmup";
                default -> "tune needs at least 2 ranks";
            };
            assertThat(io.err()).contains(want);
            assertThat(tmp.resolve("x.json")).doesNotExist();
        }
    }
}
