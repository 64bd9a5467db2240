package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** The command line: options, usage errors and exit codes (nothing here needs the core). */
@Timeout(30)
class HcommCliTest {
    private final Captured io = new Captured();

    private int run(Map<String, String> env, String... args) {
        return HcommCli.execute(args, io.out, io.err, env);
    }

    private int run(String... args) {
        return run(Map.of(), args);
    }

    /** With --jit-warmup on, a p2p run first warms the JIT up with rounds of 8 B round trips until neither rank compiles. */
    @Test
    void p2pWarmsTheJitUpUntilCompilationSettles() {
        int code = run("perf", "p2p", "--algo", "pingpong", "-b", "8", "-e", "8", "--iters", "50", "--jit-warmup", "on",
                "--check", "--format", "csv");
        assertThat(code).as(io.toString()).isZero();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("# JIT warm-up: (\\d+) round trips of 8 B in ([0-9.]+) s \\((.*)\\)")
                .matcher(io.err());
        assertThat(m.find()).as(io.err()).isTrue();
        long trips = Long.parseLong(m.group(1));
        assertThat(m.group(3)).isIn("no compilation in the last round on either rank", "time limit");
        // whole rounds of 20,000 when the JIT settled; the time limit may end a round after any chunk of 1,000
        long unit = m.group(3).equals("time limit") ? 1_000 : 20_000;
        assertThat(trips).isPositive().isEqualTo(trips / unit * unit);
        // the rules (JitWarmUp.MIN, MAX), not a speed: it runs at least 0.5 s, and stops on the limit only after 10 s (when
        // the chunk that crosses it ends: seconds later on a loaded machine, so no upper bound)
        double seconds = Double.parseDouble(m.group(2));
        assertThat(seconds).isGreaterThanOrEqualTo(0.5);
        if (m.group(3).equals("time limit")) assertThat(seconds).isGreaterThanOrEqualTo(10.0);
        assertThat(io.out()).contains("p2p,pingpong,2,8,8,int8,none,-1,").doesNotContain(",-1\n");
    }

    @Test
    void versionNamesHcommAndJava() {
        assertThat(run("--version")).isZero();
        assertThat(io.out()).startsWith("hcomm 0.").contains("Java " + System.getProperty("java.version"));
    }

    @Test
    void helpListsTheCommands() {
        assertThat(run("--help")).isZero();
        assertThat(io.out()).contains("launch", "demo", "perf", "status", "store", "secret");
        for (String command : List.of("launch", "demo", "perf", "status", "store", "secret")) {
            Captured sub = new Captured();
            assertThat(HcommCli.execute(new String[] {command, "--help"}, sub.out, sub.err, Map.of())).isZero();
            assertThat(sub.out()).startsWith("Usage: hcomm " + command);
        }
    }

    /** Help speaks to a user: no path outside the repository, no internal class name (issue 17). */
    @Test
    void helpNamesNothingAUserDoesNotHave() {
        for (String command : List.of("launch", "demo", "perf", "status", "store", "tune")) {
            Captured sub = new Captured();
            assertThat(HcommCli.execute(new String[] {command, "--help"}, sub.out, sub.err, Map.of())).isZero();
            assertThat(sub.out()).as("hcomm %s --help", command).doesNotContain("../", "PerfPlan", "CollectiveBench", "RmaBench");
        }
        assertThat(run("perf", "--help")).isZero();
        assertThat(io.out().replaceAll("\\s+", " ")) // picocli wraps descriptions
                .contains("Factor between the sizes of a sweep (default: 2; 4 for the collectives' default sizes)");
    }

    @Test
    void noCommandIsAUsageError() {
        assertThat(run()).isEqualTo(2);
        assertThat(io.err()).contains("Missing command").contains("Usage: hcomm");
    }

    @Test
    void launchHelpSaysEveryNodeNeedsTheSameSecret() {
        assertThat(run("launch", "--help")).isZero();
        assertThat(io.out()).contains("the same secret", "HCOMM_SECRET", "RANK, LOCAL_RANK, WORLD_SIZE");
    }

    @Test
    void statusNeedsToKnowWhereTheStoreIs(@org.junit.jupiter.api.io.TempDir java.nio.file.Path runtime) {
        // no address, and no job of hcomm launch in this (empty) runtime directory to find
        assertThat(run(Map.of("XDG_RUNTIME_DIR", runtime.toString()), "status")).isEqualTo(2);
        assertThat(io.err()).contains("--init-method").contains("MASTER_ADDR")
                .contains("no job of hcomm launch runs on this machine for this user (no job file in " + runtime.resolve("hcomm"));
        Captured bad = new Captured();
        assertThat(HcommCli.execute(new String[] {"status", "--init-method", "udp://x:1"}, bad.out, bad.err, Map.of())).isEqualTo(2);
        assertThat(bad.err()).contains("is not tcp://host:port or file:///dir");
    }

    @Test
    void launchNeedsACommand() {
        assertThat(run("launch", "-n", "2")).isEqualTo(2);
        assertThat(io.err()).contains("COMMAND");
    }

    @Test
    void severalNodesNeedASecret() {
        assertThat(run("launch", "--nnodes", "2", "--master-addr", "10.0.0.1", "--master-port", "29500", "--", "true"))
                .isEqualTo(2);
        assertThat(io.err()).contains("same secret on every node").contains("HCOMM_SECRET");
    }

    @Test
    void secretPrintsANewRandomSecretEachTime() {
        assertThat(run("secret")).isZero();
        Captured again = new Captured();
        assertThat(HcommCli.execute(new String[] {"secret"}, again.out, again.err, Map.of())).isZero();
        assertThat(io.out()).matches("[0-9a-f]{48}\\R");
        assertThat(again.out()).matches("[0-9a-f]{48}\\R").isNotEqualTo(io.out());
        assertThat(io.err()).isEmpty();
    }

    /** Every command that takes a secret refuses one under 16 bytes, naming where it came from, before it starts anything. */
    @Test
    void secretsShorterThanSixteenBytesAreUsageErrors() {
        assertThat(run("launch", "--secret", "short", "--", "true")).isEqualTo(2);
        assertThat(io.err()).contains("--secret is 5 bytes long", "16 bytes required", "hcomm secret");
        assertThat(io.out()).as("no rank ran").isEmpty();
        for (String[] args : List.of(new String[] {"launch", "--", "true"},
                new String[] {"status", "--init-method", "tcp://127.0.0.1:1"}, new String[] {"store", "--port", "1"})) {
            Captured c = new Captured();
            assertThat(HcommCli.execute(args, c.out, c.err, Map.of("HCOMM_SECRET", "fifteen-bytes!!"))).as(c.toString()).isEqualTo(2);
            assertThat(c.err()).as(args[0]).contains("HCOMM_SECRET is 15 bytes long").doesNotContain("fifteen-bytes!!");
        }
    }

    @Test
    void severalNodesNeedTheMasterAddressAndPort() {
        assertThat(run("launch", "--nnodes", "2", "--secret", "cli-test-secret-0001", "--master-port", "29500", "--", "true")).isEqualTo(2);
        assertThat(io.err()).contains("--master-addr");
        Captured again = new Captured();
        assertThat(HcommCli.execute(new String[] {"launch", "--nnodes", "2", "--master-addr", "a", "--", "true"},
                again.out, again.err, Map.of("HCOMM_SECRET", "cli-test-secret-0001"))).isEqualTo(2);
        assertThat(again.err()).contains("--master-port");
    }

    @Test
    void aNodeRankOutsideTheJobIsAUsageError() {
        assertThat(run("launch", "--node-rank", "1", "--", "true")).isEqualTo(2);
        assertThat(io.err()).contains("node rank must be in 0..0");
    }

    @Test
    void launchOnASecondNodeRunsItsRanksWithTheSecretFromTheEnvironment() {
        // node 1 hosts no store, so this runs without the core's store server
        int code = run(Map.of("HCOMM_SECRET", "secret-from-the-env"), "launch", "-n", "2", "--nnodes", "2", "--node-rank", "1",
                "--master-addr", "127.0.0.1", "--master-port", "29999",
                "sh", "-c", "echo $RANK/$WORLD_SIZE $HCOMM_SECRET $MASTER_PORT", "--not-an-option-of-launch");

        assertThat(code).as(io.toString()).isZero();
        assertThat(io.outLines()).containsExactlyInAnyOrder("[rank 2] 2/4 secret-from-the-env 29999", "[rank 3] 3/4 secret-from-the-env 29999");
    }

    @Test
    void launchExitsWithTheFailingRanksCode() {
        int code = run("launch", "-n", "2", "--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1",
                "--master-port", "29999", "--secret", "cli-test-secret-0001", "--grace-period", "1s",
                "--", "sh", "-c", "if [ $RANK = 3 ]; then exit 5; fi; sleep 600");

        assertThat(code).isEqualTo(5);
        assertThat(io.err()).contains("hcomm launch: rank 3 exited with code 5; stopped the other ranks");
    }

    @Test
    void perfOfAnUnknownOpIsAUsageError() {
        assertThat(run("perf", "allreducev")).isEqualTo(2);
        assertThat(io.err()).contains("Unknown op 'allreducev'");
    }

    @Test
    void perfRejectsBadSizes() {
        assertThat(run("perf", "p2p", "-b", "4M", "-e", "1K")).isEqualTo(2);
        assertThat(io.err()).contains("smaller than -b");
        Captured again = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "p2p", "-b", "lots"}, again.out, again.err, Map.of())).isEqualTo(2);
        assertThat(again.err()).contains("not a size");
    }

    @Test
    void perfNeedsTwoRanks() {
        assertThat(run("perf", "p2p", "-n", "1")).isEqualTo(2);
        assertThat(io.err()).contains("at least 2 ranks");
    }

    @Test
    void perfRanksGetTheSameOptionsWithoutN() {
        CommandLine cl = HcommCli.commandLine(io.out, io.err, Map.of());
        CommandLine.ParseResult parsed = cl.parseArgs("perf", "p2p", "-n", "3", "-b", "1K", "-e", "4M", "-f", "4",
                "--algo", "stream", "--iters", "5", "--warmup", "1", "--format", "csv", "--check");
        PerfCommand perf = parsed.subcommand().commandSpec().commandLine().getCommand();

        assertThat(perf.rankArgs()).containsExactly("perf", "p2p", "--format", "csv", "-b", "1024", "-e", "4194304",
                "-f", "4", "--algo", "stream", "--iters", "5", "--warmup", "1", "--check");
        // and the ranks read them back to the same plan
        CommandLine again = HcommCli.commandLine(io.out, io.err, Map.of());
        PerfCommand rank = again.parseArgs(perf.rankArgs().toArray(String[]::new)).subcommand().commandSpec()
                .commandLine().getCommand();
        assertThat(rank.p2pTests()).isEqualTo(perf.p2pTests());
    }
}
