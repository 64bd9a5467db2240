package io.hcomm4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.examples.RankJobs.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code gpt-bench} as a real 2-rank job (two JVMs, torchrun's variables) on a tiny GPT: every row it was asked for is
 * in its CSV with the peer's columns, the figures are consistent with each other, the rows that train the same way
 * reach the same loss, the replicas stay identical, and {@code --trace} prints every step of every row on every rank.
 */
@Timeout(200)
class GptBenchTest {
    @Test
    void printsEveryRequestedRowWithConsistentFiguresAndTracesEveryStep() throws Exception {
        List<Outcome> outcomes = RankJobs.torchrun(2, GptBench.class, "--layers", "1", "--dim", "32", "--heads", "2",
                "--context", "16", "--batch", "2", "--steps", "3", "--warmup-steps", "1", "--overlap", "both",
                "--hook", "none,bf16", "--bucket-cap-mb", "0.01", "--naive", "yes", "--trace", "yes");
        for (Outcome o : outcomes) assertThat(o.exitCode()).as("rank %d:\n%s", o.index(), o.output()).isZero();

        List<String> out = outcomes.getFirst().lines();
        assertThat(out).contains("params identical on all ranks: yes");
        int header = out.indexOf(GptBench.CSV_COLS);
        assertThat(header).as("CSV header in:\n%s", outcomes.getFirst().output()).isNotNegative();
        String[] cols = GptBench.CSV_COLS.split(",");
        List<Map<String, String>> rows = new ArrayList<>();
        for (String line : out.subList(header + 1, out.size())) {
            if (!line.startsWith("hcomm4j,")) continue;
            String[] v = line.split(",");
            assertThat(v).as(line).hasSameSizeAs(cols);
            Map<String, String> row = new java.util.HashMap<>();
            for (int i = 0; i < cols.length; i++) row.put(cols[i], v[i]);
            rows.add(row);
        }
        // per hook: overlap then blocking; then the naive row
        assertThat(rows).extracting(r -> r.get("mode") + " " + r.get("hook") + " " + r.get("overlap"))
                .containsExactly("overlap none yes", "blocking none no", "overlap bf16 yes", "blocking bf16 no",
                        "naive none no");
        for (Map<String, String> r : rows) {
            assertThat(r.get("model")).isEqualTo("gpt-l1-d32-h2-c16-v256-b2");
            assertThat(r.get("ranks")).isEqualTo("2");
            long params = Long.parseLong(r.get("params"));
            assertThat(params).isPositive();
            assertThat(Long.parseLong(r.get("grad_bytes"))).isEqualTo(params * 4);
            assertThat(r.get("bucket_mb")).isEqualTo(r.get("mode").equals("overlap") ? "0.01" : "0");
            double step = num(r, "step_ms"), compute = num(r, "compute_ms"), exposed = num(r, "exposed_comm_ms");
            assertThat(step).isPositive();
            assertThat(compute).isPositive();
            assertThat(num(r, "allreduce_ms")).isPositive();
            // four significant digits each: exposed = step - compute up to that rounding
            assertThat(Math.abs(exposed - (step - compute))).as(r.toString()).isLessThanOrEqualTo(1e-3 * (step + compute) + 1e-3);
            assertThat(num(r, "loss_first")).as("ln 256 = 5.55 at the start, about").isBetween(4.5, 6.5);
            assertThat(num(r, "loss_last")).isFinite();
            assertThat(r.get("transport")).isIn("shm", "tcp");
        }
        // the same training in every row without compression: overlap, one bucket and per-tensor all-reduces give the
        // same mean gradients, so the same losses
        for (int i : new int[] {1, 4}) {
            assertThat(rows.get(i).get("loss_last")).as("row %d", i).isEqualTo(rows.getFirst().get("loss_last"));
        }

        for (Outcome o : outcomes) {
            int rank = o.index();
            long traced = o.lines().stream().filter(l -> l.startsWith("trace ") && l.contains(" rank " + rank + " step ")).count();
            assertThat(traced).as("(1 warm-up + 3 timed steps) x 5 rows on rank %d:\n%s", rank, o.output()).isEqualTo(20);
            assertThat(o.lines()).anyMatch(l -> l.matches("trace overlap bf16 0\\.01 MB rank " + rank + " step 3: synced step "
                    + "[\\d.]+ ms \\(forward\\+backward [\\d.]+, synchronize [\\d.]+, optimizer [\\d.]+; CPU: training thread "
                    + "[\\d.]+, HComm4J's threads [\\d.]+\\), compute [\\d.]+ ms"));
        }
    }

    private static double num(Map<String, String> row, String col) {
        return Double.parseDouble(row.get(col));
    }
}
