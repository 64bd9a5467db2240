package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code hcomm launch --max-restarts N}: a rank that fails is replaced by a process that joins the running job, the
 * others go on; past N failures the job is stopped as without the option.
 */
@Timeout(120)
class ElasticLaunchTest {
    private final Captured io = new Captured();

    /** A rank of the shell job: fails once as rank 1, its replacement reports what the launcher gave it. */
    private static final String FAILS_ONCE = "if [ \"$HCOMM_JOIN\" = 1 ]; then"
            + " echo \"replacement RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE restart=$HCOMM_RESTART_COUNT\";"
            + " exit ${REPLACEMENT_EXIT:-0}; fi; if [ \"$RANK\" = 1 ]; then exit 3; fi; echo \"rank $RANK done\"";

    private LocalLauncher launcher(int restarts) {
        return new LocalLauncher("hcomm launch", io.out, io.err).storeHost(new RecordingStoreHost())
                .gracePeriod(Duration.ofSeconds(2)).maxRestarts(restarts);
    }

    @Test
    void aFailedRankIsReplacedByAProcessThatJoinsWhileTheOthersGoOn() {
        int code = launcher(1).run(LocalLauncher.Job.local(3, "elastic-test-secret1"), List.of("sh", "-c", FAILS_ONCE));

        assertThat(code).as(io.toString()).isZero();
        assertThat(io.outLines()).as(io.toString()).containsExactlyInAnyOrder(
                "[rank 0] rank 0 done", "[rank 2] rank 2 done",
                "[rank 1] replacement RANK=1 LOCAL_RANK=1 WORLD_SIZE=3 restart=1");
        assertThat(io.errLines()).as(io.toString()).contains(
                "hcomm launch: rank 1 exited with code 3; starting a replacement that joins the running job (restart 1 of 1)");
    }

    @Test
    void pastTheRestartsTheJobStopsWithTheFailuresCode() {
        LocalLauncher launcher = launcher(1).environment(Map.of("REPLACEMENT_EXIT", "4"));
        int code = launcher.run(LocalLauncher.Job.local(2, "elastic-test-secret1"), List.of("sh", "-c", FAILS_ONCE + "; sleep 30"));

        assertThat(code).as(io.toString()).isEqualTo(4);
        assertThat(io.errLines()).as(io.toString()).contains(
                "hcomm launch: rank 1 exited with code 3; starting a replacement that joins the running job (restart 1 of 1)",
                "hcomm launch: rank 1 exited with code 4 after 1 of 1 restarts; stopped the other ranks");
    }

    @Test
    void withoutRestartsTheFirstFailureStopsTheJob() {
        int code = launcher(0).run(LocalLauncher.Job.local(2, "elastic-test-secret1"), List.of("sh", "-c", FAILS_ONCE + "; sleep 30"));

        assertThat(code).as(io.toString()).isEqualTo(3);
        assertThat(io.errLines()).as(io.toString()).contains("hcomm launch: rank 1 exited with code 3; stopped the other ranks")
                .noneMatch(l -> l.contains("replacement"));
    }

    /**
     * The real thing: 3 ranks in JVMs all-reduce and check; rank 2's JVM is killed (SIGKILL); the launcher starts a
     * replacement, the survivors shrink and grow back to 3 with it, and all 3 all-reduce again and check every element.
     */
    @Test
    void aKilledRankIsReplacedAndTheJobGrowsBackThroughTheCli() {
        List<String> args = new ArrayList<>(List.of("launch", "-n", "3", "--max-restarts", "1", "--grace-period", "2s", "--"));
        List<String> rank = new ArrayList<>(LocalLauncher.javaCommand(ElasticRank.class.getName(), List.of()));
        rank.addAll(1, List.of("-Dhcomm.init.timeout=60s", "-Dhcomm.timeout=60s"));
        args.addAll(rank);

        int code = HcommCli.execute(args.toArray(String[]::new), io.out, io.err, Map.of());

        assertThat(code).as(io.toString()).isZero();
        assertThat(io.outLines()).as(io.toString()).containsExactlyInAnyOrder(
                "[rank 2] rank 2: round 0 all correct; killing this JVM",
                "[rank 0] rank 0: round 0 all correct, lost [2], shrunk to 2, grown to 3 as rank 0, round 2 all correct",
                "[rank 1] rank 1: round 0 all correct, lost [2], shrunk to 2, grown to 3 as rank 1, round 2 all correct",
                "[rank 2] replacement 1: rank 2 of 3, round 2 all correct");
        assertThat(io.errLines()).as(io.toString()).contains(
                "hcomm launch: rank 2 exited with code 137; starting a replacement that joins the running job (restart 1 of 1)");
    }

    /**
     * {@code --nnodes 2:3}: two nodes' launchers form the job (node 0 waits 1 s for a third that does not come); node
     * 1's rank dies and, without restarts, its launcher ends (the node leaves); node 0's rank shrinks and waits to grow;
     * a third launcher comes late, its rank joins as a replacement, and both check every element again.
     */
    @Test
    void nodesFormWithinMinMaxLeaveAndALateNodeJoins() throws Exception {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> rank = new ArrayList<>(LocalLauncher.javaCommand(ElasticRank.class.getName(), List.of()));
        rank.addAll(1, List.of("-Dhcomm.init.timeout=60s", "-Dhcomm.timeout=60s"));
        // each launcher in a JVM of its own, as on three machines: a launcher adopts and stops the processes its JVM
        // started that it does not know (Subreaper), so two in one JVM would stop each other's ranks
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("hcomm-elastic-nodes");
        Process[] launchers = new Process[3];
        ProcessBuilder[] builders = new ProcessBuilder[3];
        for (int i = 0; i < 3; i++) {
            List<String> args = new ArrayList<>(List.of("launch", "-n", "1", "--nnodes", "2:3", "--nodes-wait", "1s",
                    "--master-addr", "127.0.0.1", "--master-port", Integer.toString(port), "--secret", "elastic-nodes-secret",
                    "--grace-period", "2s"));
            if (i == 0) args.addAll(List.of("--node-rank", "0"));
            args.add("--");
            args.addAll(rank);
            builders[i] = new ProcessBuilder(LocalLauncher.javaCommand(HcommCli.class.getName(), args))
                    .redirectOutput(dir.resolve("node" + i + ".out").toFile()).redirectError(dir.resolve("node" + i + ".err").toFile());
            builders[i].environment().put("HCOMM_INIT_TIMEOUT", "60s");
        }
        launchers[0] = builders[0].start();
        launchers[1] = builders[1].start();
        launchers[1].waitFor(90, java.util.concurrent.TimeUnit.SECONDS);
        launchers[2] = builders[2].start(); // after node 1 has left
        launchers[0].waitFor(90, java.util.concurrent.TimeUnit.SECONDS);
        launchers[2].waitFor(90, java.util.concurrent.TimeUnit.SECONDS);
        int[] codes = new int[3];
        List<List<String>> out = new ArrayList<>();
        List<List<String>> err = new ArrayList<>();
        StringBuilder all = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            if (launchers[i].isAlive()) launchers[i].destroyForcibly().waitFor();
            codes[i] = launchers[i].exitValue();
            out.add(java.nio.file.Files.readAllLines(dir.resolve("node" + i + ".out")));
            err.add(java.nio.file.Files.readAllLines(dir.resolve("node" + i + ".err")));
            all.append("--- node ").append(i).append(", exit ").append(codes[i]).append("\nstdout:\n")
                    .append(String.join("\n", out.get(i))).append("\nstderr:\n").append(String.join("\n", err.get(i))).append('\n');
        }

        assertThat(codes).as(all.toString()).containsExactly(0, 137, 0);
        assertThat(err.get(0)).as(all.toString()).contains("hcomm launch: the job formed with 2 node(s) (--nnodes 2:3): 2 ranks");
        assertThat(err.get(1)).as(all.toString()).contains("hcomm launch: this is node 1; the job formed with 2 node(s)");
        assertThat(err.get(2)).as(all.toString()).contains("hcomm launch: this is node 2; the job formed with 2 node(s): this node"
                + " came late, its ranks join the running job as replacements");
        assertThat(out.get(1)).as(all.toString()).containsExactly("[rank 1] rank 1: round 0 all correct; killing this JVM");
        assertThat(out.get(0)).as(all.toString()).containsExactly(
                "[rank 0] rank 0: round 0 all correct, lost [1], shrunk to 1, grown to 2 as rank 0, round 2 all correct");
        assertThat(out.get(2)).as(all.toString()).containsExactly("[rank 2] replacement 0: rank 1 of 2, round 2 all correct");
    }
}
