package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.bootstrap.TcpStoreServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Jobs with the real core, ranks in child JVMs: {@code hcomm launch} serving the store with the core's
 * {@link TcpStoreServer} to ranks that exchange data, {@code hcomm demo}, and {@code hcomm perf p2p}.
 */
@Timeout(120)
class CoreJobTest {
    private final Captured io = new Captured();

    @Test
    void launchedRanksJoinThroughTheLaunchersStoreAndExchangeData() {
        List<String> args = new ArrayList<>(List.of("launch", "-n", "3", "--grace-period", "2s", "--"));
        // a rank that cannot reach the store fails in 30 s, not after the default 2 minutes
        args.addAll(neighbourRank("30s"));

        int code = HcommCli.execute(args.toArray(String[]::new), io.out, io.err, Map.of());

        assertThat(code).as(io.toString()).isZero();
        Matcher m = Pattern.compile("\\[rank 0] rank 0 of 3 \\(store hosted by the launcher: true, port (\\d+)\\): .*")
                .matcher(io.outLines().stream().filter(l -> l.startsWith("[rank 0] ")).findFirst().orElse(""));
        assertThat(m.matches()).as(io.toString()).isTrue();
        int port = Integer.parseInt(m.group(1));
        assertThat(port).isPositive();
        assertThat(io.outLines()).as(io.toString()).containsExactlyInAnyOrder(
                "[rank 0] rank 0 of 3 (store hosted by the launcher: true, port " + port + "): 400000 bytes from rank 2, all correct",
                "[rank 1] rank 1 of 3 (store hosted by the launcher: true, port " + port + "): 400000 bytes from rank 0, all correct",
                "[rank 2] rank 2 of 3 (store hosted by the launcher: true, port " + port + "): 400000 bytes from rank 1, all correct");
        // the launcher closed its store when the job ended
        assertThatThrownBy(() -> {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            }
        }).isInstanceOf(IOException.class);
    }

    /**
     * {@code --aot-cache}: the first run trains the JDK's AOT cache (local rank 0 writes it as its JVM exits), the
     * second starts every rank's JVM from it (the JVM's own log says it opened the cache) and the job still computes
     * every element right.
     */
    @Test
    @Timeout(240)
    void aotCacheIsTrainedOnceThenEveryRankStartsFromIt(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path cache = dir.resolve("job.aot");
        List<String> rank = jarsOnly(neighbourRank("60s"), dir);
        List<String> train = new ArrayList<>(List.of("launch", "-n", "2", "--aot-cache", cache.toString(), "--"));
        train.addAll(rank);
        int code = HcommCli.execute(train.toArray(String[]::new), io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        assertThat(io.outLines()).as(io.toString()).filteredOn(l -> l.endsWith("all correct")).hasSize(2);
        assertThat(io.errLines()).as(io.toString()).anyMatch(l -> l.startsWith("hcomm launch: training the AOT cache " + cache));
        assertThat(cache).as(io.toString()).isRegularFile();
        assertThat(java.nio.file.Files.size(cache)).isGreaterThan(1 << 20);

        Captured again = new Captured();
        List<String> use = new ArrayList<>(List.of("launch", "-n", "2", "--aot-cache", cache.toString(), "--"));
        rank.add(1, "-Xlog:aot=info"); // the JVM says whether it opened the cache
        use.addAll(rank);
        code = HcommCli.execute(use.toArray(String[]::new), again.out, again.err, Map.of());
        assertThat(code).as(again.toString()).isZero();
        assertThat(again.errLines()).as(again.toString()).contains("hcomm launch: ranks start from the AOT cache " + cache);
        for (int r = 0; r < 2; r++) {
            String prefix = "[rank " + r + "] ";
            String correct = prefix + "rank " + r + " of 2 ";
            assertThat(again.outLines()).as(again.toString())
                    .anyMatch(l -> l.startsWith(prefix) && l.contains("Opened AOT cache " + cache))
                    .anyMatch(l -> l.startsWith(correct) && l.endsWith("all correct"));
        }
    }

    /**
     * {@code command} with every directory of its class path packed into a jar in {@code dir}: the JDK writes an AOT
     * cache only for a class path of jars ("Cannot have non-empty directory in paths"), and tests run from
     * target/classes.
     */
    private static List<String> jarsOnly(List<String> command, java.nio.file.Path dir) {
        int cp = command.indexOf("-cp") + 1;
        List<String> jars = new ArrayList<>();
        for (String entry : command.get(cp).split(java.io.File.pathSeparator)) {
            java.nio.file.Path p = java.nio.file.Path.of(entry);
            if (!java.nio.file.Files.isDirectory(p)) {
                jars.add(entry);
                continue;
            }
            String jar = dir.resolve("cp" + jars.size() + ".jar").toString();
            var tool = java.util.spi.ToolProvider.findFirst("jar").orElseThrow();
            assertThat(tool.run(System.out, System.err, "--create", "--file", jar, "-C", entry, ".")).isZero();
            jars.add(jar);
        }
        List<String> out = new ArrayList<>(command);
        out.set(cp, String.join(java.io.File.pathSeparator, jars));
        return out;
    }

    private static List<String> neighbourRank(String timeout) {
        List<String> cmd = new ArrayList<>(LocalLauncher.javaCommand(NeighbourRank.class.getName(), List.of()));
        cmd.addAll(1, List.of("-Dhcomm.init.timeout=" + timeout, "-Dhcomm.timeout=" + timeout));
        return cmd;
    }

    @Test
    void aRankThatFailsToJoinFailsTheLaunch() {
        // rank 1 leaves without joining: rank 0's init times out, it exits with 1, and so does the launcher
        List<String> args = new ArrayList<>(List.of("launch", "-n", "2", "--grace-period", "2s", "--",
                "sh", "-c", "if [ \"$RANK\" = 1 ]; then exit 0; fi; exec \"$@\"", "sh"));
        args.addAll(neighbourRank("2s"));

        int code = HcommCli.execute(args.toArray(String[]::new), io.out, io.err, Map.of());

        assertThat(code).as(io.toString()).isEqualTo(1);
        assertThat(io.outLines()).as(io.toString()).noneMatch(l -> l.contains("all correct"));
        assertThat(io.errLines()).as(io.toString()).contains("[rank 0] neighbour rank failed:")
                .contains("hcomm launch: rank 0 exited with code 1; stopped the other ranks");
    }

    @Test
    void demoRunsTheSeedExampleOnFourRanks() {
        int code = HcommCli.execute(new String[] {"demo"}, io.out, io.err, Map.of());

        assertThat(code).as(io.toString()).isZero();
        List<String> out = io.outLines();
        Pattern ring = Pattern.compile("measure: ring exchange of 1 MiB: \\d+ us per step, data from the previous rank correct");
        for (int r = 0; r < 4; r++) {
            int prev = (r + 3) % 4;
            String prefix = "[rank " + r + "] ";
            assertThat(out).as(io.toString()).containsSubsequence(
                    prefix + "init: Hcomm.init() joined the job",
                    prefix + "communicator: world rank " + r + " of 4",
                    prefix + "check: all " + DemoRank.COUNT + " ints from rank " + prev + " are correct",
                    prefix + "finalize: done");
            assertThat(out).as(io.toString()).filteredOn(l -> l.startsWith(prefix + "measure: ring"))
                    .singleElement().satisfies(l -> assertThat(ring.matcher(l.substring(prefix.length())).matches()).as(l).isTrue());
        }
        // rank 0's summary comes last, after every rank's own lines, without prefix
        int summary = out.indexOf("HComm4J demo: 4 ranks on this host");
        assertThat(summary).as(io.toString()).isPositive();
        List<String> tail = out.subList(summary, out.size());
        assertThat(tail).noneMatch(l -> l.startsWith("[rank"));
        assertThat(tail).hasSize(6);
        assertThat(tail.get(2)).matches("  ping-pong, rank 0 <-> 1 +8 B +2000 +[0-9.]+ us one-way latency");
        assertThat(tail.get(3)).matches("  stream, rank 0 -> 1 +4 MiB +10 x 8 +[0-9.]+ GB/s");
        assertThat(tail.get(4)).matches("  ring exchange, all 4 ranks +1 MiB +20 +[0-9.]+ GB/s per rank \\(\\d+ us per step\\)");
        assertThat(tail.getLast()).isEqualTo("  every received byte checked on all 4 ranks: all correct");
        assertThat(io.err()).doesNotContain(LocalLauncher.INCUBATOR_WARNING).contains("hcomm demo: all 4 ranks finished");
    }

    @Test
    void perfP2pPrintsCheckedCsv() {
        int code = HcommCli.execute(new String[] {"perf", "p2p", "--format", "csv", "--check", "-b", "8", "-e", "64K",
                "-f", "64", "--iters", "20", "--warmup", "2"}, io.out, io.err, Map.of());

        assertThat(code).as(io.toString()).isZero();
        List<String> lines = io.outLines();
        assertThat(lines.getFirst()).isEqualTo("op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong");
        Pattern row = Pattern.compile("p2p,(pingpong|stream),2,(\\d+),\\2,int8,none,-1,([0-9.]+),([0-9.]+),\\4,0");
        List<String> rows = lines.subList(1, lines.size());
        assertThat(rows).as(io.toString()).hasSize(6).allSatisfy(l -> {
            Matcher m = row.matcher(l);
            assertThat(m.matches()).as(l).isTrue();
            double bytes = Double.parseDouble(m.group(2));
            double timeUs = Double.parseDouble(m.group(3));
            assertThat(timeUs).as("time of %s", l).isPositive();
            // algbw = bytes / time, to the printed precision
            assertThat(Double.parseDouble(m.group(4))).as("algbw of %s", l)
                    .isCloseTo(bytes / (timeUs * 1e3), org.assertj.core.data.Offset.offset(1e-4 + 1e-3 * bytes / (timeUs * 1e3)));
        });
        assertThat(rows).extracting(l -> l.split(",")[1] + " " + l.split(",")[3]).containsExactly(
                "pingpong 8", "stream 8", "pingpong 512", "stream 512", "pingpong 32768", "stream 32768");
    }

    @Test
    void perfP2pTableWithDefaultSizesChecked() {
        int code = HcommCli.execute(new String[] {"perf", "p2p", "--check", "--iters", "3", "--warmup", "1"},
                io.out, io.err, Map.of());

        assertThat(code).as(io.toString()).isZero();
        assertThat(io.out()).contains("time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong", "check on");
        List<String[]> rows = io.outLines().stream().filter(l -> !l.startsWith("#") && !l.isBlank())
                .map(l -> l.trim().split("\\s+")).toList();
        assertThat(rows).as(io.toString()).extracting(c -> c[0] + " " + c[9])
                .containsExactly("8 pingpong", "4096 pingpong", "4194304 stream", "67108864 stream");
        assertThat(rows).allSatisfy(c -> {
            assertThat(c[8]).as("#wrong").isEqualTo("0");
            assertThat(Double.parseDouble(c[5])).as("time (us)").isPositive();
        });
        // the progress lines are the table's comment lines, on stdout in order (issue 17), not prefixed on stderr
        assertThat(io.outLines()).contains("# p2p pingpong 8 B: 1 warmup + 3 round trips",
                "# p2p stream 64 MiB: 1 warmup + 3 windows of 4 messages");
        assertThat(io.err()).doesNotContain("[rank 0] #");
    }
}
