package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.CommConfig;
import io.hcomm4j.monitor.Json;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 19, item 7: {@code hcomm perf}'s table carries p50, p99 and max per call beside the mean for every bench that
 * times calls one by one, {@code --format json} carries the run's settings and every row, the CSV keeps its columns,
 * and {@code --plot --compare} overlays saved runs. Real small runs (rank JVMs under perf's launcher, or ranks as
 * threads); the figures are checked for order among themselves, never against the clock.
 */
@Timeout(300)
class PerfJsonAndCompareTest {
    /** The CSV header as it was before the per-call figures: existing tools parse exactly this. */
    private static final String CSV_HEADER = "op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong";

    private static final byte[] PNG_MAGIC = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

    @TempDir
    Path dir;

    @Test
    void tableHasP50P99MaxForCollectivesAndP2p() {
        List<String[]> coll = tableRows("perf", "allreduce", "-n", "2", "-b", "4K", "-e", "8K", "--iters", "20", "-w", "2");
        assertThat(coll).extracting(c -> c[0] + " " + c[9]).containsExactly("4096 auto", "8192 auto");
        // mean timing: time = max over ranks of each rank's mean; p50/p99/max = the largest over ranks of each rank's
        coll.forEach(c -> assertOrdered(c[5], c[10], c[11], c[12], true));

        List<String[]> p2p = tableRows("perf", "p2p", "-n", "2", "-b", "8", "-e", "1K", "-f", "128", "--algo", "pingpong",
                "--iters", "50", "-w", "5");
        assertThat(p2p).extracting(c -> c[0] + " " + c[9]).containsExactly("8 pingpong", "1024 pingpong");
        // median timing: time = median of the round trips / 2, p50 its nearest-rank (lower) form
        p2p.forEach(c -> {
            assertOrdered(c[5], c[10], c[11], c[12], true);
            assertThat(Double.parseDouble(c[5])).as("median >= lower median p50").isGreaterThanOrEqualTo(Double.parseDouble(c[10]));
        });

        // transfer's engines find each other through the job's store: a real job, not ranks as threads
        List<String[]> xfer = tableRows("perf", "transfer", "-n", "2", "-b", "4K", "-e", "4K", "--batch", "4", "--iters", "20",
                "-w", "2");
        assertThat(xfer).extracting(c -> c[0] + " " + c[1]).containsExactly("16384 4", "16384 4");
        xfer.forEach(c -> {
            assertOrdered(c[5], c[10], c[11], c[12], true);
            assertThat(Double.parseDouble(c[5])).as("median >= lower median p50").isGreaterThanOrEqualTo(Double.parseDouble(c[10]));
        });
    }

    @Test
    void oneSidedRowsCarryTheirTailsButCounterCannot() throws Exception {
        List<List<PerfReport.Row>> results = ThreadRanks.run(2, b -> b.transport(CommConfig.Transport.TCP), r -> comm -> {
            PrintStream quiet = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
            PerfReport report = new PerfReport(PerfReport.Format.TABLE, quiet);
            List<PerfReport.Row> rows = new ArrayList<>();
            rows.addAll(RmaBench.run(comm, RmaBench.plan(RmaBench.Op.PUT, 8L, 1024L, 128, 30, 3), RmaBench.WindowKind.ALLOC,
                    CollectiveBench.Mem.NATIVE, false, false, peer -> "tcp", report, quiet));
            rows.addAll(RmaBench.run(comm, RmaBench.plan(RmaBench.Op.COUNTER, null, null, null, 50, 2), RmaBench.WindowKind.ALLOC,
                    CollectiveBench.Mem.NATIVE, false, false, peer -> "tcp", report, quiet));
            return rows;
        });
        List<PerfReport.Row> rows = results.getFirst();
        assertThat(rows).extracting(r -> r.op() + " " + r.bytes()).containsExactly("put 8", "put 1024", "counter 8");
        for (PerfReport.Row r : rows) {
            if (r.op().equals("counter")) {
                // its calls run back to back in one timed loop: no per-call figures, and the table says N/A
                assertThat(List.of(r.p50Us(), r.p99Us(), r.maxUs())).allMatch(v -> Double.isNaN(v));
                assertThat(PerfReport.table(r).trim().split("\\s+")).endsWith("N/A", "N/A", "N/A");
                continue;
            }
            assertThat(r.p50Us()).as("p50 of %s", r).isPositive().isLessThanOrEqualTo(r.p99Us());
            assertThat(r.p99Us()).as("p99 of %s", r).isLessThanOrEqualTo(r.maxUs());
            assertThat(r.timeUs()).as("median of %s", r).isGreaterThanOrEqualTo(r.p50Us()).isLessThanOrEqualTo(r.maxUs());
        }
    }

    @Test
    void csvStaysJsonCarriesEverythingAndThePlotOverlaysSavedRuns() throws Exception {
        String[] common = {"perf", "allreduce", "-n", "2", "-b", "4K", "-e", "16K", "-f", "2", "--iters", "10", "-w", "2"};

        Captured csv = run(concat(common, "--format", "csv"));
        assertThat(PerfReport.CSV_HEADER).isEqualTo(CSV_HEADER);
        List<String> csvLines = csv.outLines();
        assertThat(csvLines).as(csv.toString()).hasSize(4);
        assertThat(csvLines.getFirst()).isEqualTo(CSV_HEADER);
        assertThat(csvLines.subList(1, 4)).allSatisfy(l -> assertThat(l.split(",", -1)).hasSize(12).startsWith("allreduce", "auto", "2"));
        Path a = Files.writeString(dir.resolve("a.csv"), csv.out());

        Path live = dir.resolve("live.png");
        Captured json = run(concat(common, "--format", "json", "--algo", "ring", "--in-place", "--mem", "pool",
                "--plot", live.toString(), "--compare", a.toString()));
        assertThat(json.out()).as("stdout is the document alone").startsWith("{").doesNotContain("\n#");
        assertThat(json.err()).as("the comment lines go to stderr").contains("# allreduce 4 KiB float32 sum: 2 warmup + 10 iters");
        Map<?, ?> doc = (Map<?, ?>) Json.parse(json.out());
        Map<?, ?> settings = (Map<?, ?>) doc.get("settings");
        assertThat(settings.get("op")).isEqualTo("allreduce");
        assertThat(settings.get("ranks")).isEqualTo(2.0);
        assertThat(settings.get("transport")).asString().isNotBlank();
        assertThat(settings.get("memory")).isEqualTo("pool");
        assertThat(settings.get("in_place")).isEqualTo(true);
        assertThat(settings.get("timing")).isEqualTo("mean");
        assertThat(settings.get("algo")).isEqualTo("ring");
        assertThat(settings.get("iters")).isEqualTo(10.0);
        assertThat(settings.get("warmup")).isEqualTo(2.0);
        assertThat(settings.get("jit_warmup")).isEqualTo(false);
        assertThat(settings.get("dtype")).isEqualTo("float32");
        assertThat(settings.get("jdk")).asString().startsWith(System.getProperty("java.version"));
        assertThat(settings.get("version")).asString().isEqualTo(HcommCli.Version.version());
        assertThat(OffsetDateTime.parse((String) settings.get("date"))).isNotNull();
        assertThat((List<?>) doc.get("notes")).first().asString().startsWith("hcomm perf allreduce: 2 ranks, float32");
        List<?> rows = (List<?>) doc.get("rows");
        assertThat(rows).hasSize(3);
        List<Object> sizes = new ArrayList<>();
        for (Object o : rows) {
            Map<?, ?> row = (Map<?, ?>) o;
            assertThat(List.copyOf(row.keySet())).isEqualTo(PerfJson.ROW_KEYS);
            assertThat(row.get("algo")).isEqualTo("ring");
            sizes.add(row.get("bytes"));
            double p50 = (Double) row.get("p50_us");
            double p99 = (Double) row.get("p99_us");
            double max = (Double) row.get("max_us");
            assertThat(p50).isPositive().isLessThanOrEqualTo(p99);
            assertThat(p99).isLessThanOrEqualTo(max);
            assertThat((Double) row.get("time_us")).as("mean of back-to-back calls").isPositive().isLessThanOrEqualTo(max);
            assertThat((Double) row.get("busbw_gbs")).as("allreduce on 2 ranks: busbw = algbw").isEqualTo(row.get("algbw_gbs"));
        }
        assertThat(sizes).containsExactly(4096.0, 8192.0, 16384.0);
        assertPng(live);
        Path b = Files.writeString(dir.resolve("b.json"), json.out());
        // a saved JSON run reads back as the rows it was written from
        assertThat(PerfRuns.read(b).rows()).extracting(PerfReport.Row::bytes).containsExactly(4096L, 8192L, 16384L);
        assertThat(PerfRuns.read(b).label()).isEqualTo("b");

        Path both = dir.resolve("both.png");
        Captured saved = run("perf", "--plot", both.toString(), "--compare", a + "," + b);
        assertThat(saved.err()).contains("wrote " + both + " (2 saved runs)");
        assertPng(both);

        Path bad = Files.writeString(dir.resolve("notes.txt"), "size time\n4096 12.5\n");
        Path never = dir.resolve("never.png");
        Captured wrong = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "--plot", never.toString(), "--compare", a + "," + bad},
                wrong.out, wrong.err, Map.of())).isEqualTo(2);
        assertThat(wrong.err()).contains("--compare: " + bad + " is not a saved hcomm perf run", "line 1 is not the CSV header");
        Path missing = dir.resolve("missing.json");
        Captured absent = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "allreduce", "--plot", never.toString(), "--compare", missing.toString()},
                absent.out, absent.err, Map.of())).isEqualTo(2);
        assertThat(absent.err()).contains(missing + ": cannot read it");
        assertThat(never).doesNotExist();
        Captured noPlot = new Captured();
        assertThat(HcommCli.execute(new String[] {"perf", "--compare", a.toString()}, noPlot.out, noPlot.err, Map.of())).isEqualTo(2);
        assertThat(noPlot.err()).contains("--compare needs --plot");
    }

    private static void assertOrdered(String time, String p50, String p99, String max, boolean timeWithinMax) {
        double t = Double.parseDouble(time);
        double q50 = Double.parseDouble(p50);
        double q99 = Double.parseDouble(p99);
        double m = Double.parseDouble(max);
        assertThat(q50).as("p50").isPositive().isLessThanOrEqualTo(q99);
        assertThat(q99).as("p99").isLessThanOrEqualTo(m);
        if (timeWithinMax) assertThat(t).as("time").isPositive().isLessThanOrEqualTo(m);
    }

    private static void assertPng(Path file) throws Exception {
        byte[] bytes = Files.readAllBytes(file);
        assertThat(bytes.length).as(file + " size").isGreaterThan(PNG_MAGIC.length);
        assertThat(java.util.Arrays.copyOf(bytes, PNG_MAGIC.length)).as(file + " is a PNG").isEqualTo(PNG_MAGIC);
    }

    /** The rows of a table run: 13 columns each (the nccl-tests' ten, then p50, p99, max). */
    private static List<String[]> tableRows(String... args) {
        Captured io = run(args);
        assertThat(io.out()).contains("time (us)", "algo", "p50 (us)", "p99 (us)", "max (us)");
        List<String[]> rows = io.outLines().stream().filter(l -> !l.startsWith("#") && !l.isBlank())
                .map(l -> l.trim().split("\\s+")).toList();
        assertThat(rows).as(io.toString()).isNotEmpty().allSatisfy(c -> assertThat(c).hasSize(13));
        return rows;
    }

    private static Captured run(String... args) {
        Captured io = new Captured();
        int code = HcommCli.execute(args, io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        return io;
    }

    private static String[] concat(String[] a, String... b) {
        String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
