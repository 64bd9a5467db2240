package io.hcomm4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.examples.ExamplesTest.Result;
import io.hcomm4j.examples.RankJobs.Outcome;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link RmaParameterServer} as real jobs (rank JVMs, torchrun's variables): 2 servers and 2 workers, bulk-synchronous
 * and with bounded staleness, over shared memory (same-host workers map the servers' windows) and over TCP ({@code
 * HCOMM_TRANSPORT=tcp}: the servers' progress engines apply every operation); and 3 colocated workers of which 2 also
 * serve: every rank passes its own check, and what the lines say adds up (the bytes moved, the staleness bound, the same
 * final parameters on every worker and, in the synchronous mode, the hash of the single-process run computed here).
 */
@Timeout(200)
class RmaParameterServerTest {
    static final int STEPS = 20;
    /** One worker line, as {@code RmaParameterServer.Worker.finish} prints it. */
    static final Pattern WORKER = Pattern.compile("(sync|ssp \\(staleness (\\d+)\\)) over (shm|tcp|self), " + STEPS
            + " steps, ([\\d.]+) steps/s, moved ([\\d.]+) MB \\(([\\d.]+) MB/s\\)(?:, (\\d+) clock ops, waited for the slowest"
            + " worker at (\\d+) steps \\((\\d+) ms\\), at most (\\d+) steps ahead of it)?, squared error on its 16 rows (\\S+) -> (\\S+),"
            + " every pull's push counters right, pulled parameters \\(hash ([0-9a-f]{16})\\) equal bit for bit"
            + " (the single-process result|the sum of every worker's pushes)");

    @ParameterizedTest(name = "{0} over {1}")
    @CsvSource({"sync, shm", "ssp, tcp"}) // each mode and each transport once (the colocated job is sync over shm too): CI time
    void everyRankPassesItsCheck(String mode, String transport) throws Exception {
        // ssp: one worker per step sleeps 10 ms, so the other runs ahead and waits on the clocks
        String[] args = mode.equals("sync") ? new String[0] : new String[] {"--mode", "ssp", "--staleness", "2", "--jitter-ms", "10"};
        List<Outcome> outcomes = RankJobs.torchrun(4, Map.of("HCOMM_TRANSPORT", transport), RmaParameterServer.class, args);
        List<Result> results = ExamplesTest.passed("rma-parameter-server", 4, outcomes);
        for (Result r : results) System.out.println("RmaParameterServerTest " + mode + "/" + transport + ": rank " + r.rank() + " (" + r.role() + "): " + r.detail());
        check(results, new RmaParameterServer.Layout(2, 2, false), mode, transport);
    }

    /** 3 ranks, 2 of them servers: ranks 0 and 1 work and serve, rank 2 only works (and reaches both servers over shm). */
    @Test
    void colocatedWorkersAlsoServe() throws Exception {
        List<Outcome> outcomes = RankJobs.torchrun(3, RmaParameterServer.class, "--colocated", "1", "--servers", "2");
        List<Result> results = ExamplesTest.passed("rma-parameter-server", 3, outcomes);
        check(results, new RmaParameterServer.Layout(2, 3, true), "sync", "shm");
    }

    /** The mode is checked before the rank joins a job: one rank shows it. */
    @Test
    void anUnknownModeIsRefused() throws Exception {
        List<Outcome> outcomes = RankJobs.torchrun(1, RmaParameterServer.class, "--mode", "async");
        for (Outcome o : outcomes) {
            assertThat(o.exitCode()).as(o.output()).isEqualTo(1);
            assertThat(o.output()).contains("--mode is sync or ssp, not async");
        }
    }

    private static void check(List<Result> results, RmaParameterServer.Layout layout, String mode, String transport) {
        boolean sync = mode.equals("sync");
        String what = sync ? "the single-process result" : "the sum of every worker's pushes";
        String modeText = sync ? "sync" : "ssp (staleness 2)";
        long blocksBytes = 0;
        for (int s = 0; s < layout.servers(); s++) blocksBytes += layout.blockLongs(s) * Long.BYTES;
        Set<String> hashes = new HashSet<>();
        for (Result r : results) {
            int rank = r.rank();
            int worker = layout.workerOf(rank);
            String role = worker >= 0 ? "worker " + worker + " of " + layout.workers() : "";
            if (rank < layout.servers()) role += (role.isEmpty() ? "" : ", ") + "server " + rank + " of " + layout.servers();
            assertThat(r.role()).isEqualTo(role);
            String[] parts = r.detail().split("; ");
            assertThat(parts).hasSize(worker >= 0 && rank < layout.servers() ? 2 : 1);
            if (worker >= 0) {
                Matcher m = WORKER.matcher(parts[0]);
                assertThat(m.matches()).as(parts[0]).isTrue();
                assertThat(m.group(1)).isEqualTo(modeText);
                // the windows of the other servers are reached over the transport asked for
                assertThat(m.group(3)).isEqualTo(transport);
                assertThat(Double.parseDouble(m.group(4))).isPositive();
                // every pull reads each server's block (shard + counters); every push writes it; a clock op (read or bump) moves 8 bytes
                long clockOps = sync ? 0 : Long.parseLong(m.group(7));
                long bytes = (STEPS + 1) * blocksBytes + STEPS * blocksBytes + clockOps * Long.BYTES;
                assertThat(m.group(5)).isEqualTo(Examples.fmt("%.1f", bytes / 1e6));
                if (!sync) {
                    assertThat(m.group(7)).isNotNull();
                    assertThat(clockOps).isGreaterThanOrEqualTo((long) STEPS * (layout.workers() + 1));
                    assertThat(Integer.parseInt(m.group(10))).isBetween(0, 2);
                }
                assertThat(Double.parseDouble(m.group(12))).isLessThan(Double.parseDouble(m.group(11)) / 10);
                assertThat(m.group(14)).isEqualTo(what);
                hashes.add(m.group(13));
            }
            if (rank < layout.servers()) {
                long from = (long) RmaParameterServer.PARAMS * rank / layout.servers();
                long to = (long) RmaParameterServer.PARAMS * (rank + 1) / layout.servers();
                assertThat(parts[parts.length - 1]).isEqualTo(Examples.fmt("%s, %d steps: %d pushes into params [%d, %d) applied"
                                + " (%d from each of %d workers), shard equals bit for bit %s", modeText, STEPS, STEPS * layout.workers(),
                        from, to, STEPS, layout.workers(), what));
            }
        }
        assertThat(hashes).as("every worker pulls the same final parameters").hasSize(1);
        if (sync) {
            long reference = Examples.hash(RmaParameterServer.referenceTraining(layout.workers(), STEPS, 0.5f));
            assertThat(hashes).containsExactly(Examples.fmt("%016x", reference));
        }
    }
}
