package io.hcomm4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.examples.RankJobs.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The examples as real jobs (every rank a JVM, torchrun's variables, rank 0 serving the store): the parameter server
 * and the inference fan-out with 2 and 4 ranks: every rank exits 0 and prints one result line that ends in OK, and what
 * the lines say adds up across ranks; a parameter server job without workers is refused. The elastic example runs with
 * 4 ranks, one of which kills itself; the test starts its replacement. The data-parallel training examples are
 * {@link DataParallelExamplesTest}'s; the result-line helpers here serve every example's test.
 */
@Timeout(200)
class ExamplesTest {
    /** {@code <example> rank R/N[ (role)]: <detail>: OK|FAILED}, as {@link Examples#result} prints it. */
    static final Pattern RESULT = Pattern.compile("(training|gpt|parameter-server|rma-parameter-server|inference|elastic|kv-cache|seed) rank (\\d+)/(\\d+)(?: \\(([^)]*)\\))?: (.*): (OK|FAILED)");

    /** One parsed result line. */
    record Result(String example, int rank, int size, String role, String detail, boolean ok) {
    }

    /** The result lines in one process's output. */
    static List<Result> resultLines(Outcome o) {
        List<Result> mine = new ArrayList<>();
        for (String line : o.lines()) {
            Matcher m = RESULT.matcher(line);
            if (m.matches()) {
                mine.add(new Result(m.group(1), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)),
                        m.group(4) == null ? "" : m.group(4), m.group(5), m.group(6).equals("OK")));
            }
        }
        return mine;
    }

    /** The result line of every rank, in rank order; asserts there is exactly one per rank. */
    static List<Result> results(String example, int n, List<Outcome> outcomes) {
        assertThat(outcomes).hasSize(n);
        List<Result> results = new ArrayList<>();
        for (Outcome o : outcomes) {
            List<Result> mine = resultLines(o);
            assertThat(mine).as("result lines of rank %d:\n%s", o.index(), o.output()).hasSize(1);
            Result r = mine.getFirst();
            assertThat(r.example()).isEqualTo(example);
            assertThat(r.rank()).isEqualTo(o.index());
            assertThat(r.size()).isEqualTo(n);
            results.add(r);
        }
        return results;
    }

    /** Asserts every rank exited 0 and reported OK; returns the results. */
    static List<Result> passed(String example, int n, List<Outcome> outcomes) {
        for (Outcome o : outcomes) assertThat(o.exitCode()).as("exit code of rank %d:\n%s", o.index(), o.output()).isZero();
        List<Result> results = results(example, n, outcomes);
        for (Result r : results) assertThat(r.ok()).as("rank %d: %s", r.rank(), r.detail()).isTrue();
        return results;
    }

    /**
     * 2 ranks with the defaults (10 rounds); 4 ranks (2 servers, 2 workers) with 5 rounds: each round repeats the same
     * pull, push and apply.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void parameterServerEndsWithTheSequentialParameters(int n) throws Exception {
        int rounds = n == 2 ? 10 : 5;
        List<Result> results = passed("parameter-server", n, n == 2 ? RankJobs.torchrun(n, ParameterServer.class)
                : RankJobs.torchrun(n, ParameterServer.class, "--rounds", String.valueOf(rounds)));

        int servers = n / 2;
        int workers = n - servers;
        for (Result r : results) {
            if (r.rank() < servers) {
                assertThat(r.role()).isEqualTo("server " + r.rank() + " of " + servers);
                long from = (long) ParameterServer.PARAMS * r.rank() / servers;
                long to = (long) ParameterServer.PARAMS * (r.rank() + 1) / servers;
                assertThat(r.detail()).isEqualTo(rounds + " rounds, " + rounds * workers + " updates of params [" + from + ", " + to
                        + ") applied, shard equals bit for bit the sequential result");
            } else {
                assertThat(r.role()).isEqualTo("worker " + (r.rank() - servers) + " of " + workers);
                Matcher m = Pattern.compile(rounds + " rounds, squared error on its 16 rows (\\S+) -> (\\S+), pulled parameters equal"
                        + " bit for bit the sequential result").matcher(r.detail());
                assertThat(m.matches()).as(r.detail()).isTrue();
                assertThat(Double.parseDouble(m.group(2))).isLessThan(Double.parseDouble(m.group(1)) / 10);
            }
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void inferenceFanOutReturnsEveryResultToTheFrontEnd(int n) throws Exception {
        List<Result> results = passed("inference", n, RankJobs.torchrun(n, InferenceFanOut.class));

        int total = 0;
        for (int b = 0; b < 12; b++) total += InferenceFanOut.batchSize(b);
        Result front = results.getFirst();
        assertThat(front.role()).isEqualTo("front end");
        assertThat(front.detail()).startsWith("12 batches, " + total + " requests (300 to 1499 per batch) fanned out to "
                        + (n - 1) + " worker")
                .endsWith("every result equals the local computation");
        long served = 0;
        Pattern worker = Pattern.compile("served (\\d+) requests in 12 batches, every row carried the id of its place in the batch");
        for (Result r : results.subList(1, n)) {
            assertThat(r.role()).isEqualTo("worker");
            Matcher m = worker.matcher(r.detail());
            assertThat(m.matches()).as(r.detail()).isTrue();
            long mine = Long.parseLong(m.group(1));
            // uneven shares: per batch a worker gets n / workers or one more
            assertThat(mine).isBetween((long) total / (n - 1) - 12, (long) total / (n - 1) + 12);
            served += mine;
        }
        assertThat(served).isEqualTo(total);
    }

    @Test
    void elasticTrainingLosesARankShrinksToThreeAndGrowsBackToFour() throws Exception {
        List<Outcome> outcomes = RankJobs.elastic(4, ElasticTraining.class, List.of("--replacement", "1"));

        // processes 0..3 are the ranks as started, 4 the replacement the test started when rank 3 was killed
        assertThat(outcomes).hasSize(5);
        for (Outcome o : outcomes) {
            // what the ranks said, with the shrink and grow times (docs/reliability.md quotes them)
            o.lines().stream().filter(l -> l.startsWith("elastic rank")).forEach(l -> System.out.println("ExamplesTest elastic, process " + o.index() + ": " + l));
        }
        Outcome victim = outcomes.get(3);
        assertThat(victim.exitCode()).as(victim.output()).isEqualTo(137);
        assertThat(victim.output()).contains("elastic rank 3/4: step 100: killing this process with SIGKILL");
        assertThat(victim.lines()).noneMatch(l -> RESULT.matcher(l).matches());

        Pattern detail = Pattern.compile("steps 0-99 on 4 ranks, 100-199 on 3 ranks, 200-299 on 4 ranks; every step's all-reduced"
                + " gradient equals the average of its members' \\(max \\|diff\\| (\\S+)\\), loss ([\\d.]+) -> ([\\d.]+) \\(bound ([\\d.]+)\\),"
                + " weights bit-identical on all 4 ranks \\(hash ([0-9a-f]{16})\\), max \\|w - single-process replay\\| (\\S+)");
        String hash = null;
        int[] processOfRank = {0, 1, 2, 4};
        for (int rank = 0; rank < 4; rank++) {
            Outcome o = outcomes.get(processOfRank[rank]);
            assertThat(o.exitCode()).as("process %d:\n%s", o.index(), o.output()).isZero();
            List<Result> mine = resultLines(o);
            assertThat(mine).as("result lines of process %d:\n%s", o.index(), o.output()).hasSize(1);
            Result r = mine.getFirst();
            assertThat(r.ok()).as(r.detail()).isTrue();
            assertThat(r.example()).isEqualTo("elastic");
            assertThat(r.rank()).isEqualTo(rank);
            assertThat(r.size()).isEqualTo(4);
            assertThat(r.role()).isEqualTo(rank == 3 ? "replacement" : "");
            Matcher m = detail.matcher(r.detail());
            assertThat(m.matches()).as(r.detail()).isTrue();
            assertThat(Double.parseDouble(m.group(1))).isLessThanOrEqualTo(ElasticTraining.STEP_TOLERANCE);
            assertThat(Double.parseDouble(m.group(2))).isGreaterThan(0.6);
            assertThat(Double.parseDouble(m.group(3))).isLessThanOrEqualTo(Double.parseDouble(m.group(4)));
            assertThat(Double.parseDouble(m.group(6))).isLessThanOrEqualTo(ElasticTraining.REPLAY_TOLERANCE);
            if (hash == null) hash = m.group(5);
            assertThat(m.group(5)).as("every rank, the replacement too, ends with the same weights").isEqualTo(hash);
            if (rank < 3) {
                assertThat(o.output()).contains("elastic rank " + rank + "/4: step 100: lost rank(s) [3]",
                        "elastic rank " + rank + "/3: shrunk to 3 ranks in", "going on from step 100",
                        "elastic rank " + rank + "/4: grown back to 4 ranks in");
            } else {
                assertThat(o.output()).contains("elastic rank 3/4: joined the running job as a replacement",
                        "elastic rank 3/4: going on from step 200 with 4 ranks");
            }
        }
    }

    @Test
    void aJobWithoutWorkersIsRefused() throws Exception {
        List<Outcome> outcomes = RankJobs.torchrun(2, ParameterServer.class, "--servers", "2");

        for (Outcome o : outcomes) {
            assertThat(o.exitCode()).as(o.output()).isEqualTo(1);
            assertThat(o.output()).contains("a parameter server job needs at least one server and one worker: 2 ranks, 2 servers");
        }
    }
}
