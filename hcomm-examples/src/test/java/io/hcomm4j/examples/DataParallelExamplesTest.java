package io.hcomm4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.examples.ExamplesTest.Result;
import io.hcomm4j.examples.RankJobs.Outcome;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The data-parallel examples on hcomm-ddp as real jobs (every rank a JVM, torchrun's variables, rank 0 serving the
 * store): {@link DataParallelTraining} on 4 ranks (its 2-rank run with the same defaults is {@link DeployRecipesTest}'s
 * Slurm job, checked with {@link #checkTraining} too) and the GPT of {@link GptTraining} on 2: every rank exits 0 and
 * prints one result line that ends in OK, and what the lines say adds up across ranks; a rank whose check fails exits
 * non-zero. (Out of {@link ExamplesTest} so that the module's two test JVMs share the examples' jobs evenly.)
 */
@Timeout(200)
class DataParallelExamplesTest {
    /**
     * 4 ranks here; the same program with the same defaults on 2 ranks is {@link DeployRecipesTest}'s Slurm job, whose
     * result lines {@link #checkTraining} checks the same way.
     */
    @Test
    void dataParallelTrainingLowersTheLossWithBitIdenticalReplicas() throws Exception {
        checkTraining(ExamplesTest.passed("training", 4, RankJobs.torchrun(4, DataParallelTraining.class)), 4);
    }

    /**
     * What the result lines of a {@link DataParallelTraining} job of {@code n} ranks with the default options must say:
     * 1000 steps on {@code n} ranks, the loss from about log 2 to the bound or below, the same weights hash on every
     * rank, and the weights within float rounding of the single-process reference.
     */
    static void checkTraining(List<Result> results, int n) {
        Pattern detail = Pattern.compile("1000 steps x (\\d+) ranks x 32 samples, loss ([\\d.]+) -> ([\\d.]+) \\(bound ([\\d.]+)\\),"
                + " weights bit-identical on all (\\d+) ranks \\(hash ([0-9a-f]{16})\\), max \\|w - single-process reference\\| (\\S+)");
        assertThat(results).hasSize(n);
        String hash = null;
        for (Result r : results) {
            Matcher m = detail.matcher(r.detail());
            assertThat(m.matches()).as(r.detail()).isTrue();
            assertThat(Integer.parseInt(m.group(1))).isEqualTo(n);
            assertThat(Double.parseDouble(m.group(2))).isGreaterThan(0.6);          // log 2 at the start, about
            assertThat(Double.parseDouble(m.group(3))).isLessThanOrEqualTo(Double.parseDouble(m.group(4)));
            assertThat(Integer.parseInt(m.group(5))).isEqualTo(n);
            assertThat(Double.parseDouble(m.group(7))).isLessThanOrEqualTo(DataParallelTraining.REFERENCE_TOLERANCE);
            if (hash == null) hash = m.group(6);
            assertThat(m.group(6)).as("every rank prints the same hash").isEqualTo(hash);
        }
    }

    @Test
    void gptTrainingOnHcommDdpLowersTheLossWithBitIdenticalReplicas() throws Exception {
        // a small GPT, so that it learns within the test's time on 2 busy cores: 120 steps of 2 ranks x 8 windows
        List<Result> results = ExamplesTest.passed("gpt", 2, RankJobs.torchrun(2, GptTraining.class, "--layers", "1", "--dim", "64",
                "--heads", "4", "--context", "32", "--steps", "120", "--lr", "0.003", "--loss-bound", "3.2",
                "--bucket-cap-mb", "0.1"));
        Pattern detail = Pattern.compile("gpt-l1-d64-h4-c32-v256-b8, (\\d+) params, 120 steps x 2 ranks x 8 sequences in .*, "
                + "(\\d+) buckets, .* loss ([\\d.]+) -> ([\\d.]+) \\(mean of the last 10 steps; bound 3.2000\\), "
                + "parameters bit-identical on all 2 ranks \\(hash ([0-9a-f]{16})\\)");
        String hash = null;
        for (Result r : results) {
            Matcher m = detail.matcher(r.detail());
            assertThat(m.matches()).as(r.detail()).isTrue();
            assertThat(Integer.parseInt(m.group(2))).as("several buckets").isGreaterThan(1);
            assertThat(Double.parseDouble(m.group(3))).as("ln 256 = 5.55 at the start, about").isGreaterThan(5.0);
            assertThat(Double.parseDouble(m.group(4))).isLessThan(3.2);
            if (hash == null) hash = m.group(5);
            assertThat(m.group(5)).as("every rank prints the same hash").isEqualTo(hash);
        }
    }

    @Test
    void aRankWhoseCheckFailsExitsNonZero() throws Exception {
        // 20 steps cannot bring the loss under the bound: every rank says FAILED and exits with 1
        List<Outcome> outcomes = RankJobs.torchrun(2, DataParallelTraining.class, "--steps", "20");

        for (Outcome o : outcomes) assertThat(o.exitCode()).as(o.output()).isEqualTo(1);
        for (Result r : ExamplesTest.results("training", 2, outcomes)) {
            assertThat(r.ok()).isFalse();
            assertThat(r.detail()).contains("20 steps", "(bound 0.1200)", "bit-identical on all 2 ranks");
        }
    }
}
