package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.cli.CollectiveBench.Coll;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * {@code hcomm perf}'s warm-up follows what the user asked (issue 17: {@code --iters 20} ran 27,600 warm-up calls):
 * per size {@code -w} untimed calls, by default a fifth of {@code --iters}, and the JIT warm-up only without
 * {@code --iters} and {@code -w} or with {@code --jit-warmup on}. The calls are counted by the rank's
 * {@code Communicator.metrics()}, which perf prints on its last line.
 */
@Timeout(120)
class PerfWarmUpCliTest {
    private static final Pattern CALLS = Pattern.compile("# rank 0 called allreduce (\\d+) times: (\\d+) timed, (\\d+) warm-up");

    /** Two rank JVMs, 4K, 8K, 16K with --iters 20: 3 x (4 + 20) all-reduces on rank 0, by its metrics. */
    @Test
    void itersTwentyMakesFourWarmUpCallsPerSizeAndNoJitWarmUp() {
        Captured io = new Captured();
        int code = HcommCli.execute(new String[] {"perf", "allreduce", "-n", "2", "-b", "4K", "-e", "16K", "-f", "2",
            "--iters", "20"}, io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        String all = io.out(); // the table's comment lines are on stdout
        Matcher m = CALLS.matcher(all);
        assertThat(m.find()).as(all).isTrue();
        assertThat(Long.parseLong(m.group(1))).as("all-reduce calls on rank 0").isEqualTo(3 * (4 + 20));
        assertThat(Long.parseLong(m.group(2))).isEqualTo(3 * 20);
        assertThat(Long.parseLong(m.group(3))).isEqualTo(3 * 4);
        assertThat(all).contains(JitWarmUp.NONE, "# allreduce 4 KiB float32 sum: 4 warmup + 20 iters",
                "# allreduce 16 KiB float32 sum: 4 warmup + 20 iters").doesNotContain("Communicator.warmUp");
    }

    /** -w 0 makes none at all: every call the metrics count is a timed one. */
    @Test
    void warmupIterationsZeroMakesOnlyTimedCalls() {
        Captured io = new Captured();
        int code = HcommCli.execute(new String[] {"perf", "allreduce", "-n", "2", "-b", "64K", "-e", "64K", "--iters", "30",
            "--warmup-iters", "0", "--format", "csv"}, io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        Matcher m = CALLS.matcher(io.err());
        assertThat(m.find()).as(io.err()).isTrue();
        assertThat(m.group(1) + " " + m.group(2) + " " + m.group(3)).isEqualTo("30 30 0");
    }

    @Test
    void jitWarmUpRunsOnlyWhenNoCountIsGivenOrWhenAskedFor() {
        assertThat(parse("allreduce").jitWarmUp()).isTrue();
        assertThat(parse("allreduce", "--iters", "20").jitWarmUp()).isFalse();
        assertThat(parse("p2p", "-w", "3").jitWarmUp()).isFalse();
        assertThat(parse("put", "--iters", "20", "--jit-warmup", "on").jitWarmUp()).isTrue();
        assertThat(parse("allreduce", "--jit-warmup", "OFF").jitWarmUp()).isFalse();
        // the rank JVMs decide alike: they get the option when it is not auto
        assertThat(parse("allreduce", "--iters", "20", "--jit-warmup", "on").rankArgs()).containsSubsequence("--jit-warmup", "on");
        assertThat(parse("allreduce", "--iters", "20").rankArgs()).doesNotContain("--jit-warmup");
    }

    @Test
    void warmupDefaultsAreAFunctionOfIters() {
        List<CollectiveBench.Test> plan = PerfPlan.collectivePlan(Coll.ALLREDUCE, 4096L, 1L << 20, 16, null, null, 0, 20, null);
        assertThat(plan).extracting(CollectiveBench.Test::warmup).containsOnly(4);
        assertThat(PerfPlan.collectivePlan(Coll.ALLREDUCE, 4096L, 4096L, null, null, null, 0, 2000, null).getFirst().warmup())
                .isEqualTo(200);
        assertThat(PerfPlan.collectivePlan(Coll.ALLREDUCE, 4096L, 4096L, null, null, null, 0, 3, null).getFirst().warmup())
                .isEqualTo(1);
        // p2p: pingpong a tenth (at least 2); small streams a quarter once --iters is given
        List<PerfCommand.P2pTest> p2p = PerfPlan.p2pPlan(8L, 8L, 2, null, 20, null);
        assertThat(p2p).extracting(PerfCommand.P2pTest::warmup).containsExactly(2, 5);
    }

    @Test
    void aBadJitWarmUpValueIsAUsageErrorNamingTheOption() {
        Captured io = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "allreduce", "--jit-warmup", "sometimes"}, io.out, io.err, Map.of()))
                .isEqualTo(2);
        assertThat(io.err()).contains("--jit-warmup").contains("sometimes");
    }

    private static PerfCommand parse(String... args) {
        Captured io = new Captured();
        CommandLine cl = HcommCli.commandLine(io.out, io.err, Map.of());
        String[] all = new String[args.length + 1];
        all[0] = "perf";
        System.arraycopy(args, 0, all, 1, args.length);
        return cl.parseArgs(all).subcommand().commandSpec().commandLine().getCommand();
    }
}
