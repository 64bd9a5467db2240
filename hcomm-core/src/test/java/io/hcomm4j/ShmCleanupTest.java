package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.ShmKillWorker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Shared-memory files and a killed rank: a file left by a dead process is removed at init; a rank killed with SIGKILL
 * while its peers map its registered buffer surfaces as PeerFailedException on them; once the survivors have closed,
 * nothing is left in the shared-memory directory (rings were unlinked at setup, the survivors' files at close, the dead
 * rank's files by the survivors' sweep for files of dead processes).
 */
class ShmCleanupTest {
    private static List<String> list(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void killedRankLeavesNothingBehindOnceTheSurvivorsClose() throws Exception {
        int n = 3;
        Path dir = Files.createDirectory(Path.of("/dev/shm", "hcomm-kill-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime()));
        try {
            // what a killed job left: a file whose owner (a pid of this namespace that does not run) is dead
            String pidNs = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString().replaceAll("\\D", "");
            String stale = "hcomm4j-" + pidNs + "-" + Integer.MAX_VALUE + "-12345-7";
            Files.write(dir.resolve(stale), new byte[4096]);
            Map<String, String> env = Map.of("HCOMM_SHM_DIR", dir.toString(), "HCOMM_TRANSPORT", "shm", "HCOMM_TIMEOUT", "120s");
            try (Ranks.Job job = Ranks.start(n, ShmKillWorker.class, env)) {
                long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
                while (!(Files.readString(job.logs.get(n - 1)).contains("READY") && allWaiting(job, n))) {
                    if (System.nanoTime() > deadline) throw new AssertionError("job did not get ready:\n" + job.outputs());
                    for (Process p : job.processes) {
                        if (!p.isAlive()) throw new AssertionError("a rank exited early:\n" + job.outputs());
                    }
                    Thread.sleep(20);
                }
                assertThat(list(dir)).as("the stale file is removed at init").doesNotContain(stale);
                Matcher reg = Pattern.compile("REGISTERED (\\S+)").matcher(Files.readString(job.logs.get(n - 1)));
                assertThat(reg.find()).isTrue();
                String victimFile = reg.group(1);
                assertThat(list(dir)).contains(victimFile);
                Thread.sleep(200); // let the survivors enter their receive
                job.processes.get(n - 1).destroyForcibly(); // SIGKILL
                for (int r = 0; r < n - 1; r++) {
                    Process p = job.processes.get(r);
                    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("rank %d finished", r).isTrue();
                    String out = Files.readString(job.logs.get(r));
                    assertThat(p.exitValue()).as("rank %d exit; output:\n%s", r, job.outputs()).isZero();
                    assertThat(out).contains("rank " + r + " transport to " + (n - 1) + ": shm");
                    assertThat(out).as("rank %d read the victim's buffer in place", r).contains("MAPPED " + victimFile);
                    Matcher m = Pattern.compile("DETECTED (\\d+) ms ranks=\\[(\\d+)]").matcher(out);
                    assertThat(m.find()).as("rank %d output: %s", r, out).isTrue();
                    assertThat(Long.parseLong(m.group(1))).as("detection time ms").isLessThan(10_000);
                    assertThat(Integer.parseInt(m.group(2))).isEqualTo(n - 1);
                    assertThat(out).contains("SURVIVORS OK", "CLOSED");
                }
                assertThat(list(dir)).as("files left once the survivors closed").isEmpty();
            }
        } finally {
            for (String f : list(dir)) Files.deleteIfExists(dir.resolve(f));
            Files.deleteIfExists(dir);
        }
    }

    private static boolean allWaiting(Ranks.Job job, int n) throws Exception {
        for (int r = 0; r < n - 1; r++) if (!Files.readString(job.logs.get(r)).contains("WAITING")) return false;
        return true;
    }
}
