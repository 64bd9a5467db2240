package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * {@code hcomm perf put|get|accumulate|fetch_and_op|counter} as commands: each op, briefly and with {@code --check}, in
 * rank JVMs on this host (shared memory), with windows from allocateWindow (the origin maps the target's memory) and
 * createWindow (every access through the target's progress engine), and origin buffers off-heap, pooled and on the
 * heap. Every row must say 0 wrong and carry the columns the Open MPI baseline prints; times are only required to be
 * positive, never fast. Also: usage errors and the options the rank JVMs get.
 */
@Timeout(120)
class RmaPerfCliTest {
    private static final String HEADER = "op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong";
    private static final Pattern ROW = Pattern.compile(
            "([a-z_]+),(window-[a-z-]+),(\\d+),(\\d+),(\\d+),([a-z0-9]+),([a-z]+),(\\d+),([0-9.]+),([0-9.]+),([0-9.]+),(-?\\d+)");

    /** One parsed CSV row. */
    record Row(String op, String algo, int ranks, long bytes, long count, String dtype, String redop, int root, double timeUs,
               double algbw, double busbw, long wrong) {
    }

    /** Runs {@code hcomm perf ARGS --check --format csv}, expects exit code 0, returns the rows. */
    private static List<Row> run(String... args) {
        Captured io = new Captured();
        List<String> all = new ArrayList<>(List.of("perf"));
        all.addAll(List.of(args));
        all.addAll(List.of("--check", "--format", "csv"));
        int code = HcommCli.execute(all.toArray(String[]::new), io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        List<String> lines = io.outLines();
        assertThat(lines).as(io.toString()).isNotEmpty();
        assertThat(lines.getFirst()).isEqualTo(HEADER);
        List<Row> rows = new ArrayList<>();
        for (String l : lines.subList(1, lines.size())) {
            Matcher m = ROW.matcher(l);
            assertThat(m.matches()).as("row %s of%n%s", l, io).isTrue();
            Row r = new Row(m.group(1), m.group(2), Integer.parseInt(m.group(3)), Long.parseLong(m.group(4)),
                    Long.parseLong(m.group(5)), m.group(6), m.group(7), Integer.parseInt(m.group(8)),
                    Double.parseDouble(m.group(9)), Double.parseDouble(m.group(10)), Double.parseDouble(m.group(11)),
                    Long.parseLong(m.group(12)));
            assertThat(r.wrong()).as("wrong of %s", l).isZero();
            assertThat(r.timeUs()).as("time of %s", l).isPositive();
            assertThat(r.algbw()).as("algbw of %s", l).isCloseTo(r.bytes() / (r.timeUs() * 1e3), Offset.offset(1e-4 + 1e-3 * r.algbw()));
            assertThat(r.busbw()).as("busbw of %s", l).isEqualTo(r.algbw());
            rows.add(r);
        }
        return rows;
    }

    @Test
    void putAndGetOnBothKindsOfWindowAreChecked() {
        // alloc: the origin copies into the target's mapping; create: PUT/GET frames, 4.48 MB = a chunk of 4 MiB + a rest;
        // each window with one op (the other pairs are RmaProcessTest's): put from the heap, get into the pool
        for (String[] windowOp : new String[][] {{"alloc", "put"}, {"create", "get"}}) {
            String window = windowOp[0];
            {
                String op = windowOp[1];
                String mem = op.equals("put") ? "heap" : "pool";
                List<Row> rows = run(op, "-n", "2", "--window", window, "--mem", mem, "-b", "7", "-e", "5000000", "-f", "800",
                        "--iters", "20", "--warmup", "2");
                assertThat(rows).extracting(Row::bytes).containsExactly(7L, 5600L, 4480000L);
                assertThat(rows).allSatisfy(r -> {
                    assertThat(r.op()).isEqualTo(op);
                    assertThat(r.algo()).isEqualTo(window.equals("alloc") ? "window-shm" : "window-create-shm");
                    assertThat(r.ranks()).isEqualTo(2);
                    assertThat(r.count()).isEqualTo(r.bytes());
                    assertThat(r.dtype() + " " + r.redop() + " " + r.root()).isEqualTo("uint8 none 1");
                });
            }
        }
    }

    @Test
    void accumulateSumsEveryCallIntoEveryElement() {
        for (String window : new String[] {"alloc", "create"}) {
            // 1001 B: rounded down to 250 floats; 300300 B: two accumulate chunks through the progress engine
            List<Row> rows = run("accumulate", "-n", "2", "--window", window, "-b", "1001", "-e", "400000", "-f", "300",
                    "--iters", "30", "--warmup", "3");
            assertThat(rows).extracting(Row::bytes, Row::count)
                    .containsExactly(org.assertj.core.groups.Tuple.tuple(1000L, 250L), org.assertj.core.groups.Tuple.tuple(300300L, 75075L));
            assertThat(rows).allSatisfy(r -> assertThat(r.dtype() + " " + r.redop() + " " + r.root()).isEqualTo("float32 sum 1"));
        }
    }

    /** fetch_and_op: every fetched value checked; with --jit-warmup on the JIT warm-up comes first and says how it ended. */
    @Test
    void fetchAndOpFetchesEveryValueOnceAfterTheJitWarmUp() {
        Captured io = new Captured();
        int code = HcommCli.execute(new String[] {"perf", "fetch_and_op", "-n", "3", "--window", "create", "--iters", "200",
                "--jit-warmup", "on", "--check", "--format", "csv"}, io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        assertThat(io.outLines()).as(io.toString()).hasSize(2);
        assertThat(io.outLines().get(1)).startsWith("fetch_and_op,window-create-shm,3,8,1,int64,sum,1,").endsWith(",0");
        Matcher m = Pattern.compile("# JIT warm-up: (\\d+) calls of fetch_and_op \\+ flush\\(1\\) in ([0-9.]+) s \\((.*)\\)")
                .matcher(io.err());
        assertThat(m.find()).as(io.err()).isTrue();
        assertThat(m.group(3)).isIn("no compilation in the last round on either rank", "time limit");
        assertThat(io.err()).contains("# fetch_and_op 8 B: 50 warmup + 200 timed calls");

        List<Row> rows = run("fetch_and_op", "-n", "2", "--iters", "300", "--warmup", "7");
        assertThat(rows).singleElement().satisfies(r -> {
            assertThat(r.algo()).isEqualTo("window-shm");
            assertThat(r.bytes() + " " + r.count() + " " + r.dtype() + " " + r.redop() + " " + r.root()).isEqualTo("8 1 int64 sum 1");
        });
    }

    @Test
    void counterEndsExactlyAndEveryValueIsFetchedOnce() {
        for (String window : new String[] {"alloc", "create"}) {
            List<Row> rows = run("counter", "-n", "3", "--window", window, "--iters", "700", "--warmup", "5");
            assertThat(rows).singleElement().satisfies(r -> {
                assertThat(r.algo()).startsWith("window-").endsWith("shm");
                assertThat(r.ranks() + " " + r.bytes() + " " + r.count() + " " + r.dtype() + " " + r.redop() + " " + r.root())
                        .isEqualTo("3 8 2100 int64 sum 0");
            });
        }
    }

    @Test
    void usageErrors() {
        String[][] bad = {
            {"fetch_and_op", "-b", "4K"}, {"counter", "-e", "16"}, {"put", "--algo", "ring"}, {"get", "--in-place"},
            {"allreduce", "--window", "create"}, {"put", "-n", "1"}, {"put", "--window", "mmap"}, {"accumulate", "--iters", "0"},
        };
        String[] says = {
            "fetch_and_op works on one int64 (8 B): -b/-e do not apply", "counter works on one int64", "--algo does not apply to put",
            "--in-place applies to allreduce only, not to get", "--window applies to the one-sided ops only", "put needs at least 2 ranks",
            "--window", "--iters must be >= 1",
        };
        Captured.assertPerfUsageErrors(bad, says);
    }

    @Test
    void ranksGetTheOneSidedOptions() {
        Captured io = new Captured();
        CommandLine cl = HcommCli.commandLine(io.out, io.err, Map.of());
        PerfCommand perf = cl.parseArgs("perf", "accumulate", "-n", "4", "--window", "create", "--mem", "heap", "-b", "4K",
                "--iters", "9", "--check").subcommand().commandSpec().commandLine().getCommand();
        assertThat(perf.rankArgs()).containsExactly("perf", "accumulate", "--format", "table", "-b", "4096", "--iters", "9",
                "--check", "--mem", "heap", "--window", "create");
    }

    @Test
    void helpDescribesTheOneSidedOps() {
        Captured io = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "--help"}, io.out, io.err, Map.of())).isZero();
        assertThat(io.out()).contains("One-sided ops (put get accumulate fetch_and_op counter)", "flush(1) (remote",
                "--window=HOW", "scripts/compare-rma.sh", "Collectives: allreduce broadcast");
    }
}
