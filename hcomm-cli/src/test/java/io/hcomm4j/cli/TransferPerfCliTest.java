package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code hcomm perf transfer} as a command: the hcomm JVM (a process of its own, so that its ranks inherit
 * {@code HCOMM_TRANSPORT}) starts 2 ranks, each with a TransferEngine on the launcher's store; WRITE and READ batches,
 * briefly and with {@code --check}, on one host (shared memory: the target's pool segment copied in place) and over
 * TCP. Every row must say 0 wrong bytes and carry sane columns; times are only required to be positive, never fast.
 * Also: the plan, usage errors, the options the rank JVMs get, the help.
 */
@Timeout(180)
class TransferPerfCliTest {
    private static final String HEADER = "op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong";
    private static final Pattern ROW = Pattern.compile(
            "(transfer_write|transfer_read),(engine-[a-z]+),(\\d+),(\\d+),(\\d+),uint8,none,1,([0-9.]+),([0-9.]+),([0-9.]+),(-?\\d+)");

    /** One parsed CSV row. */
    record Row(String op, String algo, int ranks, long bytes, long count, double timeUs, double algbw, double busbw, long wrong) {
    }

    /** Runs {@code hcomm perf transfer ARGS --check --format csv} in a JVM of its own with {@code HCOMM_TRANSPORT=transport}. */
    private static List<Row> run(Path dir, String transport, String... args) throws IOException, InterruptedException {
        List<String> cli = new ArrayList<>(List.of("perf", "transfer"));
        cli.addAll(List.of(args));
        cli.addAll(List.of("--check", "--format", "csv"));
        ProcessBuilder pb = new ProcessBuilder(LocalLauncher.javaCommand(HcommCli.class.getName(), cli));
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("HCOMM_") || k.equals("RANK") || k.equals("WORLD_SIZE") || k.startsWith("MASTER_")
                || k.startsWith("OMPI_") || k.startsWith("SLURM_"));
        env.put("HCOMM_TRANSPORT", transport);
        Path out = dir.resolve(transport + ".out");
        Path err = dir.resolve(transport + ".err");
        Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        p.getOutputStream().close();
        boolean done = p.waitFor(150, TimeUnit.SECONDS);
        if (!done) p.destroyForcibly().waitFor();
        String stdout = Files.readString(out, StandardCharsets.UTF_8);
        String all = "stdout:\n" + stdout + "\nstderr:\n" + Files.readString(err, StandardCharsets.UTF_8);
        assertThat(done).as(all).isTrue();
        assertThat(p.exitValue()).as(all).isZero();
        List<String> lines = stdout.lines().toList();
        assertThat(lines).as(all).isNotEmpty();
        assertThat(lines.getFirst()).as(all).isEqualTo(HEADER);
        assertThat(all).contains("# transport to rank 1: " + (transport.equals("tcp") ? "tcp" : "shm"));
        List<Row> rows = new ArrayList<>();
        for (String l : lines.subList(1, lines.size())) {
            Matcher m = ROW.matcher(l);
            assertThat(m.matches()).as("row %s of%n%s", l, all).isTrue();
            Row r = new Row(m.group(1), m.group(2), Integer.parseInt(m.group(3)), Long.parseLong(m.group(4)), Long.parseLong(m.group(5)),
                    Double.parseDouble(m.group(6)), Double.parseDouble(m.group(7)), Double.parseDouble(m.group(8)),
                    Long.parseLong(m.group(9)));
            assertThat(r.wrong()).as("wrong of %s", l).isZero();
            assertThat(r.timeUs()).as("time of %s", l).isPositive();
            assertThat(r.algbw()).as("algbw of %s", l).isCloseTo(r.bytes() / (r.timeUs() * 1e3), Offset.offset(1e-4 + 1e-3 * r.algbw()));
            assertThat(r.busbw()).as("busbw of %s", l).isEqualTo(r.algbw());
            assertThat(r.ranks()).isEqualTo(2);
            rows.add(r);
        }
        return rows;
    }

    @Test
    void writeAndReadBatchesAreCheckedOnOneHostAndOverTcp(@TempDir Path dir) throws Exception {
        for (String transport : new String[] {"auto", "tcp"}) {
            // op sizes 3000 B (not a multiple of anything) and 4.8 MB (over TCP: PUTs/GETs of 4 MiB + a rest), 5 ops a batch;
            // the initiator's buffer in its engine's pool on one host, a Java array over TCP; per size and op 1 warm-up, 2
            // timed and 1 checked batch (each the same 5 ops: more timed batches only repeat them)
            List<Row> rows = run(dir, transport, "-b", "3000", "-e", "5000000", "-f", "1600", "--batch", "5", "--iters", "2",
                    "--warmup", "1", "--mem", transport.equals("tcp") ? "heap" : "pool");
            String algo = transport.equals("tcp") ? "engine-tcp" : "engine-shm";
            assertThat(rows).extracting(Row::op)
                    .containsExactly("transfer_write", "transfer_read", "transfer_write", "transfer_read");
            assertThat(rows).extracting(Row::bytes).containsExactly(15_000L, 15_000L, 24_000_000L, 24_000_000L);
            assertThat(rows).allSatisfy(r -> {
                assertThat(r.algo()).isEqualTo(algo);
                assertThat(r.count()).isEqualTo(5);
            });
        }
    }

    @Test
    void plansDefaultToTheIssuesBatch() {
        assertThat(TransferBench.plan(null, null, null, null, null, null, null)).containsExactly(
                new TransferBench.Test(TransferBench.Kind.WRITE, 1L << 20, 64, 0, 5),
                new TransferBench.Test(TransferBench.Kind.READ, 1L << 20, 64, 0, 5));
        assertThat(TransferBench.plan("READ", 4096L, 16384L, 4, 3, 7, 0)).containsExactly(
                new TransferBench.Test(TransferBench.Kind.READ, 4096, 3, 7, 0),
                new TransferBench.Test(TransferBench.Kind.READ, 16384, 3, 7, 0));
        assertThatThrownBy(() -> TransferBench.plan("ring", null, null, null, null, null, null)).hasMessageContaining("write or read");
        assertThatThrownBy(() -> TransferBench.plan(null, null, null, null, 0, null, null)).hasMessageContaining("--batch");
    }

    @Test
    void usageErrorsAndRankOptions() {
        String[][] bad = {{"transfer", "--window", "create"}, {"transfer", "--algo", "ring"}, {"put", "--batch", "4"},
            {"transfer", "-n", "1"}, {"transfer", "--batch", "0"}};
        String[] says = {"--window applies to the one-sided ops only", "write or read", "--batch applies to transfer only",
            "transfer needs at least 2 ranks", "--batch must be >= 1"};
        Captured.assertPerfUsageErrors(bad, says);
        Captured io = new Captured();
        CommandLine cl = HcommCli.commandLine(io.out, io.err, Map.of());
        PerfCommand perf = cl.parseArgs("perf", "transfer", "-n", "2", "--algo", "write", "--batch", "8", "-b", "1M", "--mem", "pool")
                .subcommand().commandSpec().commandLine().getCommand();
        assertThat(perf.rankArgs()).containsExactly("perf", "transfer", "--format", "table", "-b", "1048576", "--algo", "write",
                "--mem", "pool", "--batch", "8");
    }

    @Test
    void helpDescribesTheTransferBench() {
        Captured io = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "--help"}, io.out, io.err, Map.of())).isZero();
        assertThat(io.out()).contains("transfer: TransferEngine batches", "--batch=N", "transfer_write", "engine-shm");
    }
}
