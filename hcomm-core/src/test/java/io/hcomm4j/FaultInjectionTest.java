package io.hcomm4j;

import io.hcomm4j.testing.ClosedClean;
import io.hcomm4j.testing.ShmDir;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.FaultWorker;
import io.hcomm4j.testing.Ranks;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Faults injected into real rank processes, over TCP and shared memory, with HCOMM_HEARTBEAT_TIMEOUT=2s (or
 * {@code -Dhcomm.test.heartbeat.timeout=10s}: the default) and
 * HCOMM_TIMEOUT=120s (so nothing here can be a timeout): a rank killed with SIGKILL during all-reduces, a rank stopped
 * with SIGSTOP (then continued), a rank that never talked to the dead one, and a rank busy longer than the heartbeat
 * timeout (before the stop, in the same job over TCP). For each: no hang, the survivors' exception type, failed ranks and detection time, their health and its
 * listener, and after close no hcomm thread, no extra descriptor and no shared-memory file left. Detection times are
 * printed (docs/reliability.md quotes them).
 */
class FaultInjectionTest {
    /** HCOMM_HEARTBEAT_TIMEOUT of the jobs: 2s, or -Dhcomm.test.heartbeat.timeout=10s to measure the default. */
    private static final String HEARTBEAT_TIMEOUT = System.getProperty("hcomm.test.heartbeat.timeout", "2s");
    private static final long HEARTBEAT_TIMEOUT_MS = CommConfig.parseDuration(HEARTBEAT_TIMEOUT).toMillis();
    /** What the loaded test machine (2 cores, several JVMs) may add to a bound. */
    private static final long SLACK_MS = 1_000;
    /**
     * How long the default reconnect attempts (HCOMM_RETRY_MAX 5 from HCOMM_RETRY_INTERVAL 100ms, each window twice the
     * last, at most 8 times the first) may take before a peer that answers no new connection is declared failed.
     */
    private static final long RETRY_BUDGET_MS = 100 + 200 + 400 + 800 + 800;
    private static final Pattern CAUGHT = Pattern.compile("CAUGHT (\\w+) at=(\\d+) ranks=(\\S+) msg=(.*)");
    private static final Pattern HEALTH = Pattern.compile("HEALTH (\\w+) (\\[[^]]*]) at=(\\d+) thread=(\\S+)");

    @RegisterExtension
    final ShmDir shm = new ShmDir("hcomm-fault-test-");

    private Map<String, String> env(String transport) {
        return env(transport, 5);
    }

    private Map<String, String> env(String transport, int retryMax) {
        return Map.of("HCOMM_TRANSPORT", transport, "HCOMM_HEARTBEAT_TIMEOUT", HEARTBEAT_TIMEOUT, "HCOMM_TIMEOUT", "120s",
                "HCOMM_SHM_DIR", shm.path().toString(), "HCOMM_RETRY_MAX", String.valueOf(retryMax));
    }

    /**
     * With reconnects on (the default) the end of a killed process's connection is first taken for a dropped connection:
     * the reconnect is refused at once (nothing listens at its address any more), so detection stays as fast as without.
     * HCOMM_RETRY_MAX=0 only over TCP: a link over shared memory is never re-established (it keeps no resend log, see
     * Connections.reliable), so over shm the setting changes nothing and "2, shm, 5" is that case already.
     */
    @ParameterizedTest
    @CsvSource({"2, tcp, 5", "4, tcp, 5", "2, shm, 5", "4, shm, 5", "2, tcp, 0"})
    void sigkillDuringAllReduce(int n, String transport, int retryMax) throws Exception {
        try (Ranks.Job job = Ranks.start(n, FaultWorker.class, env(transport, retryMax), "allreduce")) {
            job.awaitAll(n, "RUNNING");
            long t0 = System.currentTimeMillis();
            job.processes.get(n - 1).destroyForcibly();
            List<Long> times = survivorsReport(job, n, n - 1, t0, "SIGKILL " + transport + " HCOMM_RETRY_MAX=" + retryMax);
            // a dead process closes its connections: noticed at once, well within the heartbeat timeout
            assertThat(times).allSatisfy(ms -> assertThat(ms).isLessThan(HEARTBEAT_TIMEOUT_MS + SLACK_MS));
        }
        shm.assertEmpty();
    }

    /**
     * Over TCP the job first runs the busy scenario ({@link #aRankBusyLongerThanTheHeartbeatTimeoutIsNotDeclaredFailed}'s
     * checks, on the output up to the stop's scenario): one start of the ranks' JVMs for both, which were two jobs.
     */
    @ParameterizedTest
    @CsvSource({"3, tcp", "3, shm"})
    void sigstopIsDetectedByHeartbeats(int n, String transport) throws Exception {
        String[] scenarios = transport.equals("tcp") ? new String[] {"busy", "allreduce"} : new String[] {"allreduce"};
        try (Ranks.Job job = Ranks.start(n, FaultWorker.class, env(transport), scenarios)) {
            job.awaitAll(n, "RUNNING");
            Process victim = job.processes.get(n - 1);
            long t0 = System.currentTimeMillis();
            signal(victim, "STOP");
            List<Long> times;
            try {
                times = survivorsReport(job, n, n - 1, t0, "SIGSTOP " + transport);
            } finally {
                signal(victim, "CONT");
            }
            // nothing closed: only the silence reveals it; over TCP the silent connection is replaced after half the
            // heartbeat timeout, which a stopped process cannot answer, so it is declared failed when the silence
            // reaches the timeout: within it either way
            assertThat(times).allSatisfy(ms -> assertThat(ms).isBetween(HEARTBEAT_TIMEOUT_MS / 2, HEARTBEAT_TIMEOUT_MS + SLACK_MS));
            // continued, the stopped rank finds itself left out: its ops fail, it does not hang
            assertThat(victim.waitFor(30, TimeUnit.SECONDS)).as("the continued rank ends; output:\n%s", job.outputs()).isTrue();
            String out = Files.readString(job.logs.get(n - 1));
            assertThat(out).as(out).containsPattern("CAUGHT (CommAbortedException|PeerFailedException)");
            // FAILED when it reads the notice about itself first; DEGRADED (naming every peer) when the peers' closed
            // connections reach it first — a race on a loaded machine, which the reconnect work resolves
            assertThat(out).as(out).containsPattern("FINAL (FAILED|DEGRADED \\[0, 1\\])");
            System.out.printf("FaultInjectionTest SIGSTOP %s: the continued rank: %s%n", transport, line(out, "CAUGHT"));
            if (scenarios.length > 1) {
                for (int r = 0; r < n; r++) {
                    String o = Files.readString(job.logs.get(r));
                    busyChecks(r, o.substring(0, o.indexOf("SCENARIO allreduce")));
                }
            }
        }
        shm.assertEmpty();
    }

    @Test
    void aRankThatNeverTalkedToTheDeadOneLearnsOfIt() throws Exception {
        int n = 4;
        try (Ranks.Job job = Ranks.start(n, FaultWorker.class, env("tcp"), "isolated")) {
            job.awaitAll(n, "READY");
            Thread.sleep(300);
            long t0 = System.currentTimeMillis();
            job.processes.get(n - 1).destroyForcibly();
            for (int r = 0; r < n - 1; r++) {
                Process p = job.processes.get(r);
                assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("rank %d ends; output:\n%s", r, job.outputs()).isTrue();
                assertThat(p.exitValue()).as("rank %d exit; output:\n%s", r, job.outputs()).isZero();
            }
            String out = Files.readString(job.logs.get(1));
            Matcher m = Pattern.compile("LEARNED at=(\\d+) failed=\\[3] transport to victim: (\\w+)").matcher(out);
            assertThat(m.find()).as(out).isTrue();
            assertThat(m.group(2)).as("rank 1 never connected to rank 3").isEqualTo("none");
            long ms = Long.parseLong(m.group(1)) - t0;
            System.out.printf("FaultInjectionTest isolated: rank 1 (never connected to rank 3) learned of its SIGKILL after %d ms%n", ms);
            assertThat(ms).isLessThan(HEARTBEAT_TIMEOUT_MS + SLACK_MS);
            Matcher c = CAUGHT.matcher(out);
            assertThat(c.find()).as(out).isTrue();
            assertThat(c.group(1)).isEqualTo("PeerFailedException");
            assertThat(c.group(3)).isEqualTo("[3]");
            for (int r = 0; r < n - 1; r++) {
                String o = Files.readString(job.logs.get(r));
                assertThat(o).as(o).contains("SURVIVORS OK");
                ClosedClean.assertIn(o, "rank " + r, 3);
            }
        }
    }

    /**
     * A rank busy longer than the heartbeat timeout is not declared failed: run by the TCP job of
     * {@link #sigstopIsDetectedByHeartbeats} before its stop; here the checks of its output up to there (every rank's
     * session then goes on, and ranks 0 and 1, the busy one, close clean at the end of that job).
     */
    private static void busyChecks(int rank, String out) {
        assertThat(out).as(out).contains("BUSY DONE").doesNotContain("CAUGHT");
        // no health change at all: nobody declared failed, nobody closed yet
        assertThat(out).as(out).doesNotContain("HEALTH ");
        System.out.printf("FaultInjectionTest busy: rank %d %s%n", rank, line(out, "BUSY DONE"));
    }

    /**
     * Every survivor ends on its own with exit 0, after PeerFailedException naming {@code victim}, a DEGRADED health
     * (listener on the event thread), later collectives failing at once and point-to-point among survivors working.
     * Returns each survivor's detection time after {@code t0}.
     */
    private List<Long> survivorsReport(Ranks.Job job, int n, int victim, long t0, String what) throws Exception {
        List<Long> times = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            if (r == victim) continue;
            Process p = job.processes.get(r);
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("rank %d ends (no hang); output:\n%s", r, job.outputs()).isTrue();
            String out = Files.readString(job.logs.get(r));
            assertThat(p.exitValue()).as("rank %d exit; output:\n%s", r, job.outputs()).isZero();
            Matcher m = CAUGHT.matcher(out);
            assertThat(m.find()).as("rank %d output:\n%s", r, out).isTrue();
            assertThat(m.group(1)).as(m.group()).isEqualTo("PeerFailedException");
            assertThat(m.group(3)).as(m.group()).isEqualTo("[" + victim + "]");
            long ms = Long.parseLong(m.group(2)) - t0;
            times.add(ms);
            Matcher h = HEALTH.matcher(out);
            assertThat(h.find()).as("rank %d health listener:\n%s", r, out).isTrue();
            assertThat(h.group(1)).isEqualTo("DEGRADED");
            assertThat(h.group(2)).isEqualTo("[" + victim + "]");
            assertThat(h.group(4)).isEqualTo("hcomm-events-" + r);
            long heard = Long.parseLong(h.group(3)) - t0;
            assertThat(out).contains("FINAL DEGRADED [" + victim + "]").contains("LATER COLLECTIVE [" + victim + "]").contains("SURVIVORS OK");
            System.out.printf("FaultInjectionTest %s n=%d: rank %d: %s after %d ms (health listener after %d ms): %s%n", what, n, r,
                    m.group(1), ms, heard, m.group(4));
            ClosedClean.assertIn(out, "rank " + r, 3);
        }
        return times;
    }


    static void signal(Process p, String sig) throws Exception {
        Process k = new ProcessBuilder("kill", "-" + sig, String.valueOf(p.pid())).inheritIO().start();
        assertThat(k.waitFor(10, TimeUnit.SECONDS)).isTrue();
    }

    private static String line(String out, String prefix) {
        return out.lines().filter(l -> l.startsWith(prefix)).findFirst().orElse("(none)");
    }
}
