package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.FailureWorker;
import io.hcomm4j.testing.Ranks;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A rank killed with SIGKILL surfaces as PeerFailedException on the ranks waiting for it, within seconds, over shared
 * memory (the end of the pair's doorbell socket) and over TCP.
 */
class PeerFailureTest {
    @ParameterizedTest
    @CsvSource({"2, shm", "4, shm", "2, tcp", "4, tcp"})
    void killedPeerIsReportedWithinSeconds(int n, String transport) throws Exception {
        killAndExpectDetection(n, Map.of("HCOMM_TIMEOUT", "120s", "HCOMM_TRANSPORT", transport), transport);
    }

    /** Kills the last of {@code n} ranks (started with {@code env}) while the others wait for it; each must report it. */
    static void killAndExpectDetection(int n, Map<String, String> env, String transport) throws Exception {
        try (Ranks.Job job = Ranks.start(n, FailureWorker.class, env)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while (!(Files.readString(job.logs.get(n - 1)).contains("READY") && allWaiting(job, n))) {
                if (System.nanoTime() > deadline) throw new AssertionError("job did not get ready:\n" + job.outputs());
                for (Process p : job.processes) {
                    if (!p.isAlive()) throw new AssertionError("a rank exited early:\n" + job.outputs());
                }
                Thread.sleep(20);
            }
            Thread.sleep(200); // let the survivors enter their receive
            job.processes.get(n - 1).destroyForcibly();
            for (int r = 0; r < n - 1; r++) {
                Process p = job.processes.get(r);
                assertThat(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).as("rank %d finished", r).isTrue();
                String out = Files.readString(job.logs.get(r));
                assertThat(p.exitValue()).as("rank %d exit; output:\n%s", r, job.outputs()).isZero();
                Matcher m = Pattern.compile("DETECTED (\\d+) ms ranks=\\[(\\d+)]").matcher(out);
                assertThat(m.find()).as("rank %d output: %s", r, out).isTrue();
                assertThat(Long.parseLong(m.group(1))).as("detection time ms").isLessThan(10_000);
                System.out.printf("PeerFailureTest n=%d %s: rank %d saw rank %d fail after %s ms%n", n, transport, r, n - 1, m.group(1));
                assertThat(out).contains("rank " + r + " transport to " + (n - 1) + ": " + transport);
                assertThat(Integer.parseInt(m.group(2))).isEqualTo(n - 1);
                if (n > 2) assertThat(out).contains("SURVIVORS OK");
            }
        }
    }

    private static boolean allWaiting(Ranks.Job job, int n) throws Exception {
        for (int r = 0; r < n - 1; r++) if (!Files.readString(job.logs.get(r)).contains("WAITING")) return false;
        return true;
    }

}
