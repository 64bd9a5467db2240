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
 * {@link Communicator#grow} and {@link Hcomm#join}: real rank processes, one killed (or two), the survivors shrink, new
 * processes started by the test join through the store and the job grows back to its size; every element of the
 * training loop's all-reduces and of the collectives on the grown communicator is checked, on old members and joiners.
 * Grow times are printed (docs/reliability.md quotes them). Up to the grow each job is the shrink job of its kind
 * (the same {@link ShrinkWorker} scenario: 2 of 5 killed; the last of 4 in a training loop), and the shrink's results
 * are asserted here too (they were a job of their own in {@link ShrinkTest}): the shrunk ranks and size, the old
 * communicator failing, the training on 3 ranks; shrink times are printed too.
 */
class GrowTest {
    private static final Pattern SHRUNK = Pattern.compile("SHRUNK rank=(\\d+) size=(\\d+) at=(\\d+) took=(\\d+)");
    private static final Pattern GROWN = Pattern.compile("GROWN rank=(\\d+) size=(\\d+) at=(\\d+) took=(\\d+)");
    private static final Pattern JOINED = Pattern.compile("JOINED rank=(\\d+) size=(\\d+) at=(\\d+) took=(\\d+)");

    @RegisterExtension
    final ShmDir shm = new ShmDir("hcomm-grow-test-");

    private Map<String, String> env() {
        return Map.of("HCOMM_HEARTBEAT_TIMEOUT", "5s", "HCOMM_TIMEOUT", "120s", "HCOMM_SHM_DIR", shm.path().toString());
    }

    @org.junit.jupiter.api.io.TempDir
    java.nio.file.Path recordings;

    /**
     * Also the JFR events of the failure and the membership changes (issue 19): every rank JVM records to a file; the
     * survivors' recordings hold a {@code io.hcomm4j.PeerFailure} naming rank 3 and a {@code Membership} event for the
     * shrink (4 ranks to 3) and the grow (3 to 4), with their fields.
     */
    @Test
    void trainingLoopLosesOneOfFourShrinksToThreeAndGrowsBackToFour() throws Exception {
        int n = 4;
        Map<String, String> env = new java.util.HashMap<>(env());
        env.put("JDK_JAVA_OPTIONS", "-XX:StartFlightRecording:filename=" + recordings + "/rank-%p.jfr,dumponexit=true");
        try (Ranks.Job job = Ranks.start(n, ShrinkWorker.class, env, "traingrow")) {
            awaitAll(job, n, "RUNNING");
            long killed = System.currentTimeMillis();
            job.processes.get(n - 1).destroyForcibly();
            awaitAll(job, n - 1, "GROWING");
            long t0 = System.currentTimeMillis();
            job.startJoiner(ShrinkWorker.class, env(), "joiner");
            for (int r = 0; r < n - 1; r++) {
                String out = output(job, r);
                // the shrink and the training on 3 ranks (TRAINED ... ranks=3) before the grow, then on 4 ranks
                assertThat(out).contains("CAUGHT [3]", "SHRUNK rank=" + r + " size=3", "TRAINED", "ranks=3", "FINAL", "ranks=4", "DONE");
                Matcher s = rankAndSize(SHRUNK, out, r, 3);
                System.out.printf("GrowTest training: rank %d shrank %d ms after the SIGKILL (shrink itself %s ms)%n", r,
                        Long.parseLong(s.group(3)) - killed, s.group(4));
                Matcher m = rankAndSize(GROWN, out, r, 4);
                System.out.printf("GrowTest training: rank %d grown %d ms after the joiner was started (grow call %s ms)%n", r,
                        Long.parseLong(m.group(3)) - t0, m.group(4));
            }
            String out = output(job, n);
            Matcher m = rankAndSize(JOINED, out, 3, 4);
            assertThat(out).contains("ids=[0, 1, 2, 3]", "CHECKED all", "FINAL", "DONE");
            System.out.printf("GrowTest training: the joiner joined %d ms after it was started (join call %s ms)%n",
                    Long.parseLong(m.group(3)) - t0, m.group(4));
            assertMembershipEvents(job, n);
        }
        shm.assertEmpty();
    }

    /** The survivors' (ranks 0-2) recordings: their pids name the files. */
    private void assertMembershipEvents(Ranks.Job job, int n) throws Exception {
        for (int i = 0; i < n - 1; i++) {
            int r = i;
            java.nio.file.Path f = recordings.resolve("rank-" + job.processes.get(r).pid() + ".jfr");
            List<jdk.jfr.consumer.RecordedEvent> events = jdk.jfr.consumer.RecordingFile.readAllEvents(f);
            var failures = events.stream().filter(e -> e.getEventType().getName().equals("io.hcomm4j.PeerFailure")).toList();
            assertThat(failures).as("rank %d's PeerFailure events", r).isNotEmpty()
                    .allSatisfy(e -> assertThat(e.getInt("rank")).isEqualTo(r));
            assertThat(failures).extracting(e -> e.getInt("peer")).containsOnly(n - 1);
            assertThat(failures.getFirst().getString("reason")).isNotBlank();
            var changes = events.stream().filter(e -> e.getEventType().getName().equals("io.hcomm4j.Membership"))
                    .sorted(java.util.Comparator.comparing(jdk.jfr.consumer.RecordedEvent::getStartTime)).toList();
            assertThat(changes).as("rank %d's Membership events", r).extracting(e -> e.getString("op")).containsExactly("shrink", "grow");
            var shrink = changes.get(0);
            assertThat(List.of(shrink.getInt("sizeBefore"), shrink.getInt("sizeAfter"), shrink.getInt("rank"))).containsExactly(n, n - 1, r);
            assertThat(shrink.getLong("communicator")).isZero();
            assertThat(shrink.getString("outcome")).isEqualTo("ok");
            var grow = changes.get(1);
            assertThat(List.of(grow.getInt("sizeBefore"), grow.getInt("sizeAfter"), grow.getInt("rank"))).containsExactly(n - 1, n, r);
            assertThat(grow.getLong("communicator")).isEqualTo(shrink.getLong("newCommunicator"));
            assertThat(grow.getString("outcome")).isEqualTo("ok");
        }
    }

    @Test
    void twoOfFiveKilledShrinkThenTwoJoinersGrowBackToFive() throws Exception {
        int n = 5;
        try (Ranks.Job job = Ranks.start(n, ShrinkWorker.class, env(), "kill", "1,3", "grow")) {
            awaitAll(job, n, "RUNNING");
            job.processes.get(1).destroyForcibly();
            job.processes.get(3).destroyForcibly();
            for (int r : new int[] {0, 2, 4}) awaitOne(job, r, "GROWING");
            job.startJoiner(ShrinkWorker.class, env(), "joiner");
            job.startJoiner(ShrinkWorker.class, env(), "joiner");
            int[] survivors = {0, 2, 4};
            for (int i = 0; i < survivors.length; i++) {
                String out = output(job, survivors[i]);
                // before the grow: the shrink to 3 (ranks 0, 2, 4 become 0, 1, 2), its collectives, the old communicator failing
                Matcher s = rankAndSize(SHRUNK, out, i, 3);
                assertThat(out).contains("OLD FAILS [1, 3]");
                System.out.printf("GrowTest 2 of 5 killed: rank %d -> %d, shrink took %s ms%n", survivors[i], i, s.group(4));
                Matcher m = rankAndSize(GROWN, out, i, 5);
                assertThat(out).contains("CHECKED all", "DONE");
                System.out.printf("GrowTest 2 joiners: rank %d grow took %s ms%n", survivors[i], m.group(4));
            }
            java.util.Set<String> joinedRanks = new java.util.TreeSet<>();
            for (int j = n; j < n + 2; j++) {
                String out = output(job, j);
                Matcher m = JOINED.matcher(out);
                assertThat(m.find()).as(out).isTrue();
                assertThat(m.group(2)).isEqualTo("5");
                joinedRanks.add(m.group(1));
                assertThat(out).contains("CHECKED all", "DONE");
            }
            assertThat(joinedRanks).containsExactly("3", "4");
        }
        shm.assertEmpty();
    }

    @Test
    void growWithoutAFailedRankToTakeOverFailsClearlyOnEveryRank() throws Exception {
        Ranks.runThreads(2, Duration.ofSeconds(120), h -> assertThatThrownBy(() -> h.world().grow(1))
                .isInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("only 0 failed world ranks [] can be taken over, not 1"));
    }

    private String output(Ranks.Job job, int i) throws Exception {
        Process p = job.processes.get(i);
        assertThat(p.waitFor(180, TimeUnit.SECONDS)).as("process %d ends; output:\n%s", i, job.outputs()).isTrue();
        String out = Files.readString(job.logs.get(i));
        assertThat(p.exitValue()).as("process %d exit; output:\n%s", i, job.outputs()).isZero();
        ClosedClean.assertIn(out, "process " + i, 0);
        return out;
    }

    private static void awaitOne(Ranks.Job job, int r, String word) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (!Files.readString(job.logs.get(r)).contains(word)) {
            if (System.nanoTime() > deadline) throw new AssertionError("rank " + r + " did not say " + word + ":\n" + job.outputs());
            if (!job.processes.get(r).isAlive()) throw new AssertionError("rank " + r + " exited early:\n" + job.outputs());
            Thread.sleep(20);
        }
    }

    private static void awaitAll(Ranks.Job job, int n, String word) throws Exception {
        for (int r = 0; r < n; r++) awaitOne(job, r, word);
    }

    /** The first match of {@code line} in {@code out}, whose first two groups must be {@code rank} and {@code size}. */
    private static Matcher rankAndSize(Pattern line, String out, int rank, int size) {
        Matcher m = line.matcher(out);
        assertThat(m.find()).as(out).isTrue();
        assertThat(m.group(1)).isEqualTo(String.valueOf(rank));
        assertThat(m.group(2)).isEqualTo(String.valueOf(size));
        return m;
    }
}
