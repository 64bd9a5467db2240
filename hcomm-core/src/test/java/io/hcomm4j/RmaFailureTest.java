package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.RmaFailureWorker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A window's target killed with SIGKILL while the others read, write and fetchAndOp it: each of them gets
 * PeerFailedException naming it (no hang), and still reaches the live members through the same window.
 */
class RmaFailureTest {
    @ParameterizedTest
    @CsvSource({"alloc, shm", "create, shm", "alloc, tcp"})
    void killedTargetFailsTheOpsOnIt(String windows, String transport) throws Exception {
        killTargetAndExpectFailures(windows, transport, Map.of());
    }

    /** The test above with {@code extraEnv} in every rank's environment (UcxTransportTest: UCX_TLS). */
    static void killTargetAndExpectFailures(String windows, String transport, Map<String, String> extraEnv) throws Exception {
        int n = 3;
        Path flag = Files.createTempFile("rma-killed", ".flag");
        Files.delete(flag);
        Map<String, String> env = new java.util.HashMap<>(extraEnv);
        env.putAll(Map.of("HCOMM_TIMEOUT", "120s", "HCOMM_TRANSPORT", transport, "RMA_KILLED_FLAG", flag.toString()));
        try (Ranks.Job job = Ranks.start(n, RmaFailureWorker.class, env, windows)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while (!(Files.readString(job.logs.get(n - 1)).contains("READY") && allWaiting(job, n))) {
                if (System.nanoTime() > deadline) throw new AssertionError("job did not get ready:\n" + job.outputs());
                for (Process p : job.processes) {
                    if (!p.isAlive()) throw new AssertionError("a rank exited early:\n" + job.outputs());
                }
                Thread.sleep(20);
            }
            job.processes.get(n - 1).destroyForcibly();
            Files.writeString(flag, "killed");
            for (int r = 0; r < n - 1; r++) {
                Process p = job.processes.get(r);
                assertThat(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).as("rank %d finished; output:\n%s", r, job.outputs()).isTrue();
                String out = Files.readString(job.logs.get(r));
                assertThat(p.exitValue()).as("rank %d exit; output:\n%s", r, job.outputs()).isZero();
                Matcher m = Pattern.compile("DETECTED (\\d+) ms ranks=\\[(\\d+)]").matcher(out);
                assertThat(m.find()).as("rank %d output: %s", r, out).isTrue();
                assertThat(Integer.parseInt(m.group(2))).isEqualTo(n - 1);
                assertThat(out).contains("SURVIVORS OK");
                System.out.printf("RmaFailureTest %s %s: rank %d saw rank %d fail about %s ms after the kill%n", windows, transport,
                        r, n - 1, m.group(1));
            }
        } finally {
            Files.deleteIfExists(flag);
        }
    }

    private static boolean allWaiting(Ranks.Job job, int n) throws Exception {
        for (int r = 0; r < n - 1; r++) if (!Files.readString(job.logs.get(r)).contains("WAITING")) return false;
        return true;
    }
}
