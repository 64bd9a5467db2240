package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.CommConfig;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.cli.CollectiveBench.Coll;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code hcomm perf <collective>} as a command: a checked run of rank JVMs (CSV and plot), usage errors for bad
 * names, the options the rank JVMs get, {@code --algo} as {@code HCOMM_ALGO}, and the plot file.
 */
@Timeout(60)
class PerfCollectivesCliTest {
    private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

    private final Captured io = new Captured();

    @TempDir
    Path tmp;

    private int run(String... args) {
        return HcommCli.execute(args, io.out, io.err, Map.of());
    }

    @Test
    void checkedCsvAndPlotFromThreeRankJvms() throws IOException {
        Path png = tmp.resolve("plots/allgather.png");
        int code = run("perf", "allgather", "-n", "3", "--format", "csv", "--check", "-b", "1K", "-e", "64K", "-f", "8",
                "--iters", "3", "--warmup", "1", "--dtype", "int32", "--plot", png.toString());

        assertThat(code).as(io.toString()).isZero();
        List<String> lines = io.outLines();
        assertThat(lines.getFirst()).isEqualTo("op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong");
        Pattern row = Pattern.compile("allgather,auto,3,(\\d+),(\\d+),int32,none,-1,([0-9.]+),([0-9.]+),([0-9.]+),0");
        List<String> rows = lines.subList(1, lines.size());
        // 1K, 8K, 64K rounded down to whole blocks of int32 on 3 ranks
        assertThat(rows).as(io.toString()).hasSize(3).extracting(l -> l.split(",")[3] + "/" + l.split(",")[4])
                .containsExactly("1020/85", "8184/682", "65532/5461");
        for (String l : rows) {
            Matcher m = row.matcher(l);
            assertThat(m.matches()).as(l).isTrue();
            double bytes = Double.parseDouble(m.group(1));
            double timeUs = Double.parseDouble(m.group(3));
            double algbw = Double.parseDouble(m.group(4));
            assertThat(timeUs).as("time of %s", l).isPositive();
            assertThat(algbw).as("algbw of %s", l).isCloseTo(bytes / (timeUs * 1e3), Offset.offset(1e-4 + 1e-3 * algbw));
            // busbw = algbw * (n-1)/n, to the printed precision
            assertThat(Double.parseDouble(m.group(5))).as("busbw of %s", l).isCloseTo(algbw * 2 / 3, Offset.offset(1.5e-4));
        }
        assertThat(io.err()).contains("[rank 0] # allgather 1020 B int32: 1 warmup + 3 iters",
                "[rank 0] # allgather 65532 B int32: 1 warmup + 3 iters");
        assertValidPng(png);
    }

    /** --mem pool (every collective that may run in shared memory) and heap: checked runs in the rank JVMs. */
    @Test
    @Timeout(180)
    void registeredAndHeapBuffersAreChecked() {
        for (String mem : new String[] {"pool", "heap"}) {
            for (String op : mem.equals("heap") ? new String[] {"allreduce"} : new String[] {"allreduce", "reducescatter", "allgather", "broadcast"}) {
                Captured c = new Captured();
                int code = HcommCli.execute(new String[] {"perf", op, "-n", "2", "--mem", mem, "--check", "--format", "csv",
                        "-b", "4K", "-e", "256K", "-f", "64", "--iters", "3", "--warmup", "1"}, c.out, c.err, Map.of());
                assertThat(code).as(c.toString()).isZero();
                assertThat(c.outLines()).as(c.toString()).hasSize(3).allSatisfy(l -> {
                    if (!l.startsWith("op,")) assertThat(l).startsWith(op + ",auto,2,").endsWith(",0");
                });
            }
        }
        Captured bad = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "allreduce", "--mem", "gpu"}, bad.out, bad.err, Map.of())).isEqualTo(2);
        assertThat(bad.err()).contains("'gpu' is not a memory kind; choose native, pool or heap");
    }

    /**
     * --in-place: all-reduce into the send buffer, checked on pooled, heap and plain native buffers; other ops refuse it.
     * The native run prints the table, whose header says in place (one job of rank JVMs fewer than a table run of its own).
     */
    @Test
    @Timeout(180)
    void inPlaceAllReduceIsChecked() {
        for (String mem : new String[] {"pool", "heap", "native"}) {
            boolean csv = !mem.equals("native");
            Captured c = new Captured();
            List<String> args = new java.util.ArrayList<>(List.of("perf", "allreduce", "-n", "2", "--mem", mem, "--in-place",
                    "--check", "-b", "4K", "-e", "256K", "-f", "64", "--iters", "3", "--warmup", "1"));
            if (csv) args.addAll(List.of("--format", "csv"));
            int code = HcommCli.execute(args.toArray(String[]::new), c.out, c.err, Map.of());
            assertThat(code).as(c.toString()).isZero();
            if (csv) {
                assertThat(c.outLines()).as(c.toString()).hasSize(3).allSatisfy(l -> {
                    if (!l.startsWith("op,")) assertThat(l).startsWith("allreduce,auto,2,").endsWith(",0");
                });
                continue;
            }
            assertThat(c.out()).contains("# hcomm perf allreduce: 2 ranks, float32, redop sum, algo auto, check on, mem native",
                    "; in place (each call's output is the next one's input)");
            List<String[]> rows = c.outLines().stream().filter(l -> !l.startsWith("#") && !l.isBlank())
                    .map(l -> l.trim().split("\\s+")).toList();
            assertThat(rows).as(c.toString()).hasSize(2).allSatisfy(r -> {
                assertThat(r).hasSize(13);
                assertThat(r[8]).as("#wrong").isEqualTo("0");
                assertThat(r[9]).as("algo").isEqualTo("auto");
            });
        }
        for (String op : new String[] {"allgather", "p2p"}) {
            Captured bad = new Captured();
            assertThat(HcommCli.execute(new String[] {"perf", op, "--in-place"}, bad.out, bad.err, Map.of())).isEqualTo(2);
            assertThat(bad.err()).contains("--in-place applies to allreduce only");
        }
    }

    /**
     * The V forms (equal counts): checked on 2 ranks, root 1 for the rooted; pooled (zero copy) and plain native buffers
     * alternate over the ops, so each kind meets a gathering and a scattering form (ZeroCopyCollectivesTest checks every
     * V form with both kinds; here it is the command's plumbing).
     */
    @Test
    @Timeout(180)
    void vFormsAreChecked() {
        String[][] cases = {{"allgatherv", "pool"}, {"gatherv", "native"}, {"scatterv", "pool"}, {"alltoallv", "native"}};
        for (String[] oneCase : cases) {
            String op = oneCase[0];
            String mem = oneCase[1];
            {
                Captured c = new Captured();
                int code = HcommCli.execute(new String[] {"perf", op, "-n", "2", "--root", "1", "--mem", mem, "--check", "--format",
                        "csv", "-b", "3K", "-e", "192K", "-f", "64", "--iters", "3", "--warmup", "1"}, c.out, c.err, Map.of());
                assertThat(code).as(c.toString()).isZero();
                assertThat(c.outLines()).as(c.toString()).hasSize(3).allSatisfy(l -> {
                    if (!l.startsWith("op,")) assertThat(l).startsWith(op + ",auto,2,").endsWith(",0");
                });
            }
        }
        Captured bad = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "alltoallv", "--algo", "pairwise"}, bad.out, bad.err, Map.of())).isEqualTo(2);
        assertThat(bad.err()).contains("--algo does not apply to alltoallv");
    }

    @Test
    void tableSaysNotCheckedWithoutCheck() {
        int code = run("perf", "broadcast", "-n", "2", "--root", "1", "-b", "4K", "--iters", "2", "--warmup", "0",
                "--dtype", "bf16");

        assertThat(code).as(io.toString()).isZero();
        assertThat(io.out()).contains("# hcomm perf broadcast: 2 ranks, bfloat16, root 1, algo auto, check off",
                "busbw = algbw * 1 ", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong");
        List<String[]> rows = io.outLines().stream().filter(l -> !l.startsWith("#") && !l.isBlank())
                .map(l -> l.trim().split("\\s+")).toList();
        assertThat(rows).as(io.toString()).singleElement().satisfies(c -> {
            assertThat(c).hasSize(13);
            assertThat(c[0] + " " + c[1] + " " + c[2] + " " + c[3] + " " + c[4]).isEqualTo("4096 2048 bfloat16 none 1");
            assertThat(c[8]).as("#wrong").isEqualTo("N/A");
            assertThat(c[9]).as("algo").isEqualTo("auto");
            assertThat(Double.parseDouble(c[7])).as("busbw = algbw").isEqualTo(Double.parseDouble(c[6]));
        });
    }

    @Test
    void badNamesAreUsageErrors() {
        assertThat(run("perf", "allreduce", "--dtype", "float128")).isEqualTo(2);
        assertThat(io.err()).contains("'float128' is not a data type: one of int8 uint8 int32 int64 float16 bfloat16 float32 float64",
                "Usage: hcomm perf");

        Captured op = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "allreduce", "--op", "mean"}, op.out, op.err, Map.of())).isEqualTo(2);
        assertThat(op.err()).contains("'mean' is not a reduction: one of sum prod min max avg");

        Captured name = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "allreduce_ring"}, name.out, name.err, Map.of())).isEqualTo(2);
        assertThat(name.err()).contains("Unknown op 'allreduce_ring': one of p2p, allreduce, broadcast, reduce, allgather,"
                + " reducescatter, gather, scatter, alltoall, sendrecv, allgatherv, gatherv, scatterv, alltoallv");
    }

    @Test
    void badCombinationsAreUsageErrors() {
        assertThat(run("perf", "sendrecv", "--algo", "ring")).isEqualTo(2);
        assertThat(io.err()).contains("--algo does not apply to sendrecv");
        Captured root = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "gather", "-n", "3", "--root", "3"}, root.out, root.err, Map.of()))
                .isEqualTo(2);
        assertThat(root.err()).contains("--root 3 is out of range for 3 ranks");
        Captured one = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "sendrecv", "-n", "1"}, one.out, one.err, Map.of())).isEqualTo(2);
        assertThat(one.err()).contains("sendrecv needs at least 2 ranks");
        Captured algo = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "allreduce", "--algo", "ring,x"}, algo.out, algo.err, Map.of()))
                .isEqualTo(2);
        assertThat(algo.err()).contains("--algo 'ring,x' is not an algorithm name");
        Captured p2p = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "p2p", "--algo", "ring"}, p2p.out, p2p.err, Map.of())).isEqualTo(2);
        assertThat(p2p.err()).contains("p2p --algo must be pingpong or stream");
    }

    @Test
    void ranksGetTheSameCollectiveOptionsWithoutN() {
        CommandLine cl = HcommCli.commandLine(io.out, io.err, Map.of());
        PerfCommand perf = cl.parseArgs("perf", "reduce", "-n", "3", "-b", "1K", "-e", "4M", "--algo", "tree",
                "--iters", "5", "-d", "half", "-o", "max", "-r", "2", "--check", "--plot", "p.png")
                .subcommand().commandSpec().commandLine().getCommand();

        assertThat(perf.rankArgs()).containsExactly("perf", "reduce", "--format", "table", "-b", "1024", "-e", "4194304",
                "--algo", "tree", "--iters", "5", "--check", "--dtype", "float16", "--op", "max", "--root", "2",
                "--plot", Path.of("p.png").toAbsolutePath().toString());
        PerfCommand rank = HcommCli.commandLine(io.out, io.err, Map.of()).parseArgs(perf.rankArgs().toArray(String[]::new))
                .subcommand().commandSpec().commandLine().getCommand();
        assertThat(rank.collectiveTests()).isEqualTo(perf.collectiveTests()).hasSize(13).allSatisfy(t -> {
            assertThat(t.type()).isEqualTo(DataType.FLOAT16);
            assertThat(t.op()).isEqualTo(ReduceOp.MAX);
            assertThat(t.root()).isEqualTo(2);
            assertThat(t.iters()).isEqualTo(5);
            assertThat(t.warmup()).isEqualTo(1);
        });
    }

    @Test
    void defaultSweepIs4KTo64MTimes4WithIterationsBySize() {
        List<CollectiveBench.Test> plan = PerfPlan.collectivePlan(Coll.ALLREDUCE, null, null, null, DataType.FLOAT32,
                ReduceOp.SUM, 0, null, null);

        assertThat(plan).extracting(CollectiveBench.Test::bytes)
                .containsExactly(4L << 10, 16L << 10, 64L << 10, 256L << 10, 1L << 20, 4L << 20, 16L << 20, 64L << 20);
        assertThat(plan).extracting(CollectiveBench.Test::iters).containsExactly(1000, 1000, 1000, 1000, 1000, 1000, 256, 64);
        assertThat(plan).extracting(CollectiveBench.Test::warmup).containsExactly(200, 200, 200, 200, 200, 200, 51, 12);
        // an explicit sweep steps by 2 unless -f says otherwise
        assertThat(PerfPlan.collectivePlan(Coll.ALLREDUCE, 1024L, 8192L, null, DataType.FLOAT32, ReduceOp.SUM, 0, null, null))
                .extracting(CollectiveBench.Test::bytes).containsExactly(1024L, 2048L, 4096L, 8192L);
        assertThat(PerfPlan.collectivePlan(Coll.ALLREDUCE, null, null, 16, DataType.FLOAT32, ReduceOp.SUM, 0, null, null))
                .extracting(CollectiveBench.Test::bytes).containsExactly(4L << 10, 64L << 10, 1L << 20, 16L << 20);
    }

    @Test
    void algoReachesTheRanksAsHcommAlgo() {
        Captured launch = new Captured();
        int code = new LocalLauncher("hcomm perf", launch.out, launch.err).gracePeriod(Duration.ofSeconds(2))
                .storeHost((bind, secret) -> new LocalLauncher.HostedStore(new java.net.InetSocketAddress("127.0.0.1", 1), () -> { }))
                .environment(Map.of(PerfCommand.ALGO_ENV, "allreduce=ring"))
                .run(LocalLauncher.Job.local(2, "launch-test-secret-1"), List.of("sh", "-c", "echo \"$HCOMM_ALGO\""));

        assertThat(code).as(launch.toString()).isZero();
        assertThat(launch.outLines()).containsExactlyInAnyOrder("[rank 0] allreduce=ring", "[rank 1] allreduce=ring");
    }

    @Test
    void halvingDoublingAndBruckNamesPassTheCliAndTheLibrary() {
        String[][] named = {{"allreduce", "halving_doubling"}, {"allreduce", "rabenseifner"}, {"allreduce", "hd"},
                {"reducescatter", "halving-doubling"}, {"alltoall", "bruck"}};
        for (String[] n : named) {
            PerfCommand perf = HcommCli.commandLine(io.out, io.err, Map.of()).parseArgs("perf", n[0], "--algo", n[1])
                    .subcommand().commandSpec().commandLine().getCommand();
            assertThat(perf.collectiveTests()).as("%s --algo %s", n[0], n[1]).isNotEmpty();
            assertThat(perf.rankArgs()).containsSequence("--algo", n[1]);
            // what the ranks get as HCOMM_ALGO (or hcomm.algo); init validates it with these same rules
            String forced = Coll.of(n[0]).orElseThrow().cliName() + "=" + n[1];
            assertThat(CommConfig.builder().algo(forced).build().algo()).isEqualTo(forced);
        }
        assertThatThrownBy(() -> CommConfig.builder().algo("broadcast=hd").build())
                .hasMessageContaining("valid: [tree, chain, hierarchical]");
    }

    @Test
    void algoColumnSaysWhatIsForced() {
        assertThat(PerfCommand.algoLabel(Coll.ALLREDUCE, "ring", Map.of())).isEqualTo("ring");
        assertThat(PerfCommand.algoLabel(Coll.ALLREDUCE, null, Map.of())).isEqualTo("auto");
        assertThat(PerfCommand.algoLabel(Coll.ALLGATHER, null, Map.of("HCOMM_ALGO", "allreduce=ring,allgather=bruck"))).isEqualTo("bruck");
        assertThat(PerfCommand.algoLabel(Coll.BROADCAST, null, Map.of("HCOMM_ALGO", "allreduce=ring"))).isEqualTo("auto");
        assertThat(PerfCommand.algoLabel(Coll.SENDRECV, null, Map.of())).isEqualTo("p2p");
    }

    @Test
    void plotIsAPngWithALinePerOpAndAlgo() throws IOException {
        Path png = tmp.resolve("busbw.png");
        List<PerfReport.Row> rows = List.of(
                new PerfReport.Row("allreduce", "ring", 4, 4096, 1024, "float32", "sum", -1, 100, 0.041, 0.061, 0),
                new PerfReport.Row("allreduce", "ring", 4, 1 << 20, 1 << 18, "float32", "sum", -1, 1000, 1.05, 1.57, 0),
                new PerfReport.Row("allreduce", "rd", 4, 4096, 1024, "float32", "sum", -1, 50, 0.082, 0.123, 0),
                new PerfReport.Row("allreduce", "rd", 4, 1 << 20, 1 << 18, "float32", "sum", -1, 3000, 0.35, 0.52, 0));

        PerfPlot.write(png, "test", rows);

        assertValidPng(png);
    }

    private static void assertValidPng(Path png) throws IOException {
        assertThat(png).exists();
        assertThat(Files.size(png)).isPositive();
        byte[] head = new byte[PNG_SIGNATURE.length];
        try (var in = Files.newInputStream(png)) {
            assertThat(in.readNBytes(head, 0, head.length)).isEqualTo(head.length);
        }
        assertThat(head).isEqualTo(PNG_SIGNATURE);
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image).isNotNull();
        assertThat(image.getWidth()).isEqualTo(PerfPlot.WIDTH);
        assertThat(image.getHeight()).isEqualTo(PerfPlot.HEIGHT);
    }
}
