package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The launcher with real child processes ({@code sh -c}) and the real store server. */
@Timeout(30)
class LocalLauncherTest {
    private final Captured io = new Captured();
    private final RecordingStoreHost store = new RecordingStoreHost();

    private LocalLauncher launcher() {
        return new LocalLauncher("hcomm launch", io.out, io.err).storeHost(store).gracePeriod(Duration.ofSeconds(2));
    }

    private static List<String> sh(String script) {
        return List.of("sh", "-c", script);
    }

    @Test
    void everyRankGetsItsEnvironment() {
        LocalLauncher launcher = launcher().storeHost((bind, secret) -> {
            LocalLauncher.HostedStore hosted = store.start(bind, secret);
            // before any rank starts, the store serves clients that prove the job's secret
            store.checkServes("s3cret-launch-test-1");
            return hosted;
        });
        int code = launcher.run(LocalLauncher.Job.local(3, "s3cret-launch-test-1"), sh(
                "echo \"RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE"
                        + " NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT"
                        + " HCOMM_SECRET=$HCOMM_SECRET HCOMM_STORE_HOSTED=$HCOMM_STORE_HOSTED\""));

        assertThat(code).as(io.toString()).isZero();
        // the ranks got the port the store listened on
        int port = store.address.getPort();
        assertThat(port).isPositive();
        assertThat(io.outLines()).containsExactlyInAnyOrder(
                "[rank 0] RANK=0 LOCAL_RANK=0 WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 NODE_RANK=0 MASTER_ADDR=127.0.0.1"
                        + " MASTER_PORT=" + port + " HCOMM_SECRET=s3cret-launch-test-1 HCOMM_STORE_HOSTED=1",
                "[rank 1] RANK=1 LOCAL_RANK=1 WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 NODE_RANK=0 MASTER_ADDR=127.0.0.1"
                        + " MASTER_PORT=" + port + " HCOMM_SECRET=s3cret-launch-test-1 HCOMM_STORE_HOSTED=1",
                "[rank 2] RANK=2 LOCAL_RANK=2 WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 NODE_RANK=0 MASTER_ADDR=127.0.0.1"
                        + " MASTER_PORT=" + port + " HCOMM_SECRET=s3cret-launch-test-1 HCOMM_STORE_HOSTED=1");
        assertThat(io.err()).isEmpty();
        // node 0 hosted the store with the job's secret on the master address, and closed it at the end
        assertThat(store.starts).hasValue(1);
        assertThat(store.bind.getHostString()).isEqualTo("127.0.0.1");
        assertThat(store.bind.getPort()).isZero();
        assertThat(store.secret).isEqualTo("s3cret-launch-test-1");
        assertThat(store.closes).hasValue(1);
        assertThat(store.listening()).as("store listening after the job").isFalse();
    }

    @Test
    void anotherNodeRunsItsShareOfRanksAndHostsNoStore() {
        LocalLauncher.Job job = new LocalLauncher.Job(2, 3, 1, "10.1.2.3", 29500, "node-1-test-secret");
        int code = launcher().run(job, sh("echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $NODE_RANK"
                + " $MASTER_ADDR $MASTER_PORT $HCOMM_SECRET $HCOMM_STORE_HOSTED\""));

        assertThat(code).as(io.toString()).isZero();
        assertThat(io.outLines()).containsExactlyInAnyOrder(
                "[rank 2] 2 0 6 2 1 10.1.2.3 29500 node-1-test-secret 1",
                "[rank 3] 3 1 6 2 1 10.1.2.3 29500 node-1-test-secret 1");
        assertThat(store.starts).hasValue(0);
    }

    @Test
    void cpuSharesAreEqualContiguousAndDisjoint() {
        assertThat(CpuShares.parseCpuList("0-3,8,10-11")).containsExactly(0, 1, 2, 3, 8, 10, 11);
        List<Integer> cpus = CpuShares.parseCpuList("0-7");
        assertThat(CpuShares.cpuShare(cpus, 0, 2)).isEqualTo("0,1,2,3");
        assertThat(CpuShares.cpuShare(cpus, 1, 2)).isEqualTo("4,5,6,7");
        assertThat(CpuShares.cpuShare(cpus, 2, 3)).isEqualTo("4,5"); // 8 / 3: two each, CPUs 6 and 7 unused
        assertThat(CpuShares.cpuShare(List.of(0, 1), 1, 2)).isEqualTo("1");
        // more ranks than CPUs: one CPU each, round robin
        assertThat(CpuShares.cpuShare(List.of(0, 1), 0, 4)).isEqualTo("0");
        assertThat(CpuShares.cpuShare(List.of(0, 1), 1, 4)).isEqualTo("1");
        assertThat(CpuShares.cpuShare(List.of(0, 1), 2, 4)).isEqualTo("0");
        assertThat(CpuShares.cpuShare(List.of(4, 6), 3, 4)).isEqualTo("6");
        assertThat(CpuShares.cpuShare(List.of(), 0, 2)).isNull();
    }

    @Test
    void ranksRunOnCpusOfTheirOwnUnlessTold() {
        List<Integer> cpus = CpuShares.allowedCpus();
        String affinity = "grep Cpus_allowed_list /proc/self/status | tr -d '\\t' | cut -d: -f2";
        int code = launcher().run(LocalLauncher.Job.local(2, "launch-test-secret-1"), sh("echo \"cpus $(" + affinity + ")\""));
        assertThat(code).as(io.toString()).isZero();
        if (cpus.size() >= 2 && new java.io.File("/usr/bin/taskset").canExecute()) {
            assertThat(io.outLines()).containsExactlyInAnyOrder(
                    "[rank 0] cpus " + compact(CpuShares.cpuShare(cpus, 0, 2)),
                    "[rank 1] cpus " + compact(CpuShares.cpuShare(cpus, 1, 2)));
        }
        Captured unbound = new Captured();
        code = new LocalLauncher("hcomm launch", unbound.out, unbound.err).storeHost(store).cpuBind(LocalLauncher.CpuBind.NONE)
                .run(LocalLauncher.Job.local(2, "launch-test-secret-1"), sh("echo \"cpus $(" + affinity + ")\""));
        assertThat(code).as(unbound.toString()).isZero();
        List<Integer> seen = CpuShares.parseCpuList(unbound.outLines().getFirst().replaceAll(".*cpus ", ""));
        assertThat(seen).containsExactlyElementsOf(cpus);
    }

    /** The kernel's form of a CPU list: runs of consecutive CPUs as a-b. */
    private static String compact(String list) {
        List<Integer> c = CpuShares.parseCpuList(list);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < c.size(); ) {
            int j = i;
            while (j + 1 < c.size() && c.get(j + 1) == c.get(j) + 1) j++;
            if (b.length() > 0) b.append(',');
            b.append(c.get(i));
            if (j > i) b.append('-').append(c.get(j));
            i = j + 1;
        }
        return b.toString();
    }

    @Test
    void rankEnvironmentFollowsTorchrun() {
        LocalLauncher.Job job = new LocalLauncher.Job(4, 2, 1, "node0", 29500, "launcher-test-secret");
        assertThat(LocalLauncher.rankEnvironment(job, 3, 29500)).containsExactlyInAnyOrderEntriesOf(Map.of(
                "RANK", "7", "LOCAL_RANK", "3", "WORLD_SIZE", "8", "LOCAL_WORLD_SIZE", "4", "NODE_RANK", "1",
                "MASTER_ADDR", "node0", "MASTER_PORT", "29500", "HCOMM_SECRET", "launcher-test-secret", "HCOMM_STORE_HOSTED", "1"));
    }

    @Test
    void everyLineIsPrefixedWholeAndInOrder() {
        int lines = 400;
        int code = launcher().run(LocalLauncher.Job.local(3, "launch-test-secret-1"), sh(
                "i=0; while [ $i -lt " + lines + " ]; do echo \"out $RANK $i\"; echo \"err $RANK $i\" >&2; i=$((i+1)); done;"
                        + " printf 'last line without newline'"));

        assertThat(code).as(io.toString()).isZero();
        checkPrefixed(io.outLines(), "out", lines);
        checkPrefixed(io.errLines(), "err", lines);
        assertThat(io.outLines()).contains("[rank 0] last line without newline", "[rank 2] last line without newline");
    }

    private static void checkPrefixed(List<String> output, String stream, int lines) {
        Pattern line = Pattern.compile("\\[rank (\\d)] " + stream + " (\\d) (\\d+)");
        int[] next = new int[3];
        for (String l : output) {
            if (l.endsWith("last line without newline")) continue;
            Matcher m = line.matcher(l);
            assertThat(m.matches()).as("line '%s'", l).isTrue();
            assertThat(m.group(2)).as("line '%s' carries its own rank's prefix", l).isEqualTo(m.group(1));
            int rank = Integer.parseInt(m.group(1));
            assertThat(Integer.parseInt(m.group(3))).as("order of rank %d's lines", rank).isEqualTo(next[rank]);
            next[rank]++;
        }
        assertThat(next).containsExactly(lines, lines, lines);
    }

    @Test
    void rank0StdoutCanBeTheJobsOutput() {
        int code = launcher().rank0StdoutRaw(true).dropStderrLine("noise")
                .run(LocalLauncher.Job.local(2, "launch-test-secret-1"), sh("echo \"result of $RANK\"; echo noise >&2; echo \"note $RANK\" >&2"));

        assertThat(code).as(io.toString()).isZero();
        assertThat(io.outLines()).containsExactlyInAnyOrder("result of 0", "[rank 1] result of 1");
        assertThat(io.errLines()).containsExactlyInAnyOrder("[rank 0] note 0", "[rank 1] note 1");
    }

    @Test
    void aFailingRankStopsTheOthersAndNamesItself() throws Exception {
        long start = System.nanoTime();
        LocalLauncher launcher = launcher();
        // ranks 0 and 2 sleep in a child of their shell; rank 1 fails once they have said who they are
        int code = launcher.run(LocalLauncher.Job.local(3, "launch-test-secret-1"), sh(
                "if [ $RANK = 1 ]; then sleep 1; echo 'rank 1 fails' >&2; exit 3; fi;"
                        + " sleep 600 & echo \"shell pid=$$ sleep pid=$!\"; wait"));
        Duration took = Duration.ofNanos(System.nanoTime() - start);

        assertThat(code).as(io.toString()).isEqualTo(3);
        assertThat(io.errLines()).contains("[rank 1] rank 1 fails");
        assertThat(io.errLines().getLast())
                .isEqualTo("hcomm launch: rank 1 exited with code 3; stopped the other ranks");
        assertThat(took).isLessThan(Duration.ofSeconds(10));
        List<Long> pids = Processes.pidsIn(io.out());
        assertThat(pids).hasSize(4);
        assertThat(launcher.startedProcesses()).hasSize(3);
        for (ProcessHandle p : launcher.startedProcesses()) assertThat(p.isAlive()).as("rank process %d", p.pid()).isFalse();
        for (long pid : pids) assertThat(Processes.alive(pid)).as("process %d", pid).isFalse();
        assertThat(store.closes).hasValue(1);
    }

    @Test
    void ranksThatIgnoreSigtermAreKilledAfterTheGracePeriod() {
        long start = System.nanoTime();
        LocalLauncher launcher = launcher().gracePeriod(Duration.ofMillis(300));
        int code = launcher.run(LocalLauncher.Job.local(2, "launch-test-secret-1"), sh(
                "if [ $RANK = 1 ]; then sleep 1; exit 7; fi;"
                        + " trap '' TERM; sleep 600 & echo \"pid=$$ pid=$!\"; wait"));
        Duration took = Duration.ofNanos(System.nanoTime() - start);

        assertThat(code).as(io.toString()).isEqualTo(7);
        assertThat(io.err()).contains("hcomm launch: rank 1 exited with code 7; stopped the other ranks");
        assertThat(took).isLessThan(Duration.ofSeconds(8));
        List<Long> pids = Processes.pidsIn(io.out());
        assertThat(pids).hasSize(2);
        for (long pid : pids) assertThat(Processes.alive(pid)).as("process %d", pid).isFalse();
    }

    @Test
    void aRankKilledBySignalFailsTheJob() {
        int code = launcher().run(LocalLauncher.Job.local(2, "launch-test-secret-1"), sh("if [ $RANK = 0 ]; then kill -KILL $$; fi; sleep 600"));

        assertThat(code).as(io.toString()).isEqualTo(137);
        assertThat(io.err()).contains("hcomm launch: rank 0 exited with code 137; stopped the other ranks");
    }

    @Test
    void processesARankLeavesBehindAreStoppedWithTheJob() {
        // each rank starts a sleep and exits at once: the sleep is orphaned, and adopted by the launcher
        int code = launcher().run(LocalLauncher.Job.local(2, "launch-test-secret-1"), sh("sleep 600 >/dev/null 2>&1 & echo \"pid=$!\""));

        assertThat(code).as(io.toString()).isZero();
        List<Long> pids = Processes.pidsIn(io.out());
        assertThat(pids).hasSize(2);
        for (long pid : pids) assertThat(Processes.alive(pid)).as("process %d", pid).isFalse();
    }

    @Test
    void allRanksSucceedingIsSuccess() {
        LocalLauncher launcher = launcher();
        int code = launcher.run(LocalLauncher.Job.local(4, "launch-test-secret-1"), sh("exit 0"));

        assertThat(code).isZero();
        assertThat(io.err()).isEmpty();
        assertThat(launcher.startedProcesses()).hasSize(4).noneMatch(ProcessHandle::isAlive);
    }

    @Test
    void aCommandThatCannotStartIsReported() {
        int code = launcher().run(LocalLauncher.Job.local(2, "launch-test-secret-1"), List.of("/nonexistent/hcomm-test-command"));

        assertThat(code).isEqualTo(1);
        assertThat(io.err()).contains("hcomm launch: cannot start rank 0 (/nonexistent/hcomm-test-command)");
        assertThat(store.closes).hasValue(1);
    }

    @Test
    void aStoreThatCannotStartIsReported() throws Exception {
        // the master port is taken by another listener, so the store server cannot bind it
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByAddress(new byte[] {127, 0, 0, 1}))) {
            int port = taken.getLocalPort();
            LocalLauncher launcher = launcher();
            int code = launcher.run(new LocalLauncher.Job(1, 1, 0, "127.0.0.1", port, "launch-test-secret-1"), sh("exit 0"));

            assertThat(code).isEqualTo(1);
            assertThat(io.err()).contains("hcomm launch: cannot host the store on 127.0.0.1:" + port)
                    .contains("Address already in use");
            assertThat(store.starts).hasValue(1);
            assertThat(store.closes).hasValue(0);
            assertThat(launcher.startedProcesses()).isEmpty();
        }
    }

    @Test
    void jobsAreValidated() {
        assertThatThrownBy(() -> new LocalLauncher.Job(0, 1, 0, "a", 0, "launch-test-secret-1")).hasMessageContaining("ranks per node");
        assertThatThrownBy(() -> new LocalLauncher.Job(1, 2, 2, "a", 1, "launch-test-secret-1")).hasMessageContaining("node rank must be in 0..1");
        assertThatThrownBy(() -> new LocalLauncher.Job(1, 2, 0, "a", 0, "launch-test-secret-1")).hasMessageContaining("master port");
        assertThatThrownBy(() -> new LocalLauncher.Job(1, 1, 0, "a", 70000, "launch-test-secret-1")).hasMessageContaining("0..65535");
        LocalLauncher.Job job = new LocalLauncher.Job(4, 3, 2, "a", 1, "launch-test-secret-1");
        assertThat(job.worldSize()).isEqualTo(12);
        assertThat(job.firstRank()).isEqualTo(8);
        assertThat(job.hostsStore()).isFalse();
    }

    @Test
    void javaCommandRunsThisJvmWithTheRankFlags() {
        List<String> cmd = LocalLauncher.javaCommand("a.b.Main", List.of("x", "y"));

        assertThat(cmd.getFirst()).endsWith("java");
        assertThat(cmd).containsSequence(LocalLauncher.RANK_JVM_FLAGS);
        assertThat(cmd).containsSequence("a.b.Main", "x", "y");
        String cp = cmd.get(cmd.indexOf("-cp") + 1);
        assertThat(cp.split(java.io.File.pathSeparator)).allSatisfy(e -> assertThat(java.nio.file.Path.of(e)).isAbsolute());
    }
}
