package io.hcomm4j;

import io.hcomm4j.testing.ClosedClean;
import io.hcomm4j.testing.ShmDir;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.ShrinkWorker;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link Communicator#shrink()}: real rank processes killed with SIGKILL (2 of 5; the last of 4 in a training loop), the
 * survivors shrink and check every element of their collectives on the shrunk communicator; in-process ranks for a
 * shrink without failure (like dup) and for a member that never calls shrink (a timeout naming it). Shrink times are
 * printed (docs/reliability.md quotes them).
 */
class ShrinkTest {
    private static final Pattern SHRUNK = Pattern.compile("SHRUNK rank=(\\d+) size=(\\d+) at=(\\d+) took=(\\d+)");

    @RegisterExtension
    final ShmDir shm = new ShmDir("hcomm-shrink-test-");

    private Map<String, String> env() {
        return Map.of("HCOMM_HEARTBEAT_TIMEOUT", "5s", "HCOMM_TIMEOUT", "120s", "HCOMM_SHM_DIR", shm.path().toString());
    }

    @Test
    void twoOfFiveKilledTheThreeSurvivorsShrink() throws Exception {
        int n = 5;
        try (Ranks.Job job = Ranks.start(n, ShrinkWorker.class, env(), "kill", "1,3")) {
            job.awaitAll(n, "RUNNING");
            job.processes.get(1).destroyForcibly();
            job.processes.get(3).destroyForcibly();
            int[] survivors = {0, 2, 4};
            for (int i = 0; i < survivors.length; i++) {
                String out = survivorOutput(job, survivors[i]);
                Matcher m = SHRUNK.matcher(out);
                assertThat(m.find()).as(out).isTrue();
                assertThat(m.group(1)).isEqualTo(String.valueOf(i));
                assertThat(m.group(2)).isEqualTo("3");
                assertThat(out).contains("CHECKED all", "OLD FAILS [1, 3]", "DONE");
                System.out.printf("ShrinkTest 2 of 5 killed: rank %d -> %d, shrink took %s ms%n", survivors[i], i, m.group(4));
            }
        }
        shm.assertEmpty();
    }

    @Test
    void trainingLoopLosesOneOfFourShrinksToThreeAndGoesOn() throws Exception {
        int n = 4;
        try (Ranks.Job job = Ranks.start(n, ShrinkWorker.class, env(), "train")) {
            job.awaitAll(n, "RUNNING");
            long t0 = System.currentTimeMillis();
            job.processes.get(n - 1).destroyForcibly();
            for (int r = 0; r < n - 1; r++) {
                String out = survivorOutput(job, r);
                Matcher m = SHRUNK.matcher(out);
                assertThat(m.find()).as(out).isTrue();
                assertThat(m.group(1)).isEqualTo(String.valueOf(r));
                assertThat(m.group(2)).isEqualTo("3");
                assertThat(out).contains("CAUGHT [3]", "TRAINED", "ranks=3", "DONE");
                System.out.printf("ShrinkTest training: rank %d shrank %d ms after the SIGKILL (shrink itself %s ms)%n", r,
                        Long.parseLong(m.group(3)) - t0, m.group(4));
            }
        }
        shm.assertEmpty();
    }

    @Test
    void shrinkWithoutFailureIsLikeDup() throws Exception {
        Ranks.runThreads(3, Duration.ofSeconds(120), h -> {
            Communicator w = h.world();
            Communicator s = w.shrink();
            assertThat(s.size()).isEqualTo(3);
            assertThat(s.rank()).isEqualTo(w.rank());
            assertThat(s.health().state()).isEqualTo(Health.State.READY);
            // messages of the two never mix: the same tag on both, received in the opposite order
            int peer = (w.rank() + 1) % 3, from = (w.rank() + 2) % 3;
            w.send(new int[] {1}, peer, 5);
            s.send(new int[] {2}, peer, 5);
            int[] a = new int[1], b = new int[1];
            s.recv(b, from, 5);
            w.recv(a, from, 5);
            assertThat(a[0]).isEqualTo(1);
            assertThat(b[0]).isEqualTo(2);
            int[] x = {w.rank() + 1};
            s.allReduce(x, ReduceOp.SUM);
            assertThat(x[0]).isEqualTo(6);
            s.close();
        });
    }

    @Test
    void aMemberThatNeverCallsShrinkIsNamedInATimeout() throws Exception {
        // nobody closes its session (rank 0's ends the store) before every rank is done: ranks 0 and 1 time out at
        // about the same moment, and the later one must still reach the store
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(3);
        Ranks.runThreads(3, Duration.ofSeconds(120), b -> b.timeout(Duration.ofSeconds(2)), h -> {
            Communicator w = h.world();
            try {
                if (w.rank() == 2) {
                    try {
                        Thread.sleep(4000);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    return;
                }
                long t0 = System.nanoTime();
                assertThatThrownBy(w::shrink).isInstanceOf(CommTimeoutException.class)
                        .hasMessageContaining("rank 2 has neither called shrink nor been found failed").hasMessageContaining("HCOMM_TIMEOUT");
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isBetween(1900L, 3900L);
            } finally {
                done.countDown();
                try {
                    done.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
    }

    private String survivorOutput(Ranks.Job job, int r) throws Exception {
        Process p = job.processes.get(r);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("rank %d ends; output:\n%s", r, job.outputs()).isTrue();
        String out = Files.readString(job.logs.get(r));
        assertThat(p.exitValue()).as("rank %d exit; output:\n%s", r, job.outputs()).isZero();
        ClosedClean.assertIn(out, "rank " + r, 0);
        return out;
    }

}
