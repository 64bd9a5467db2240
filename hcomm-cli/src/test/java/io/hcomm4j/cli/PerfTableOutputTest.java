package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The table of {@code hcomm perf -n 2} comes out as nccl-tests prints it (issue 17: {@code [rank 0] #} lines mixed into
 * the table): every {@code #} line and row on stdout, none with a {@code [rank} prefix, in the order rank 0 wrote
 * them, from a real run of two rank JVMs under perf's launcher.
 */
@Timeout(120)
class PerfTableOutputTest {
    private static final Pattern ROW = Pattern.compile(" *(\\d+) +\\d+ +float32 +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0  auto +[0-9.]+ +[0-9.]+ +[0-9.]+");

    @Test
    void commentLinesAndRowsComeOutInOrderWithoutPrefix() {
        Captured io = new Captured();
        int code = HcommCli.execute(new String[] {"perf", "allreduce", "-n", "2", "-b", "4K", "-e", "16K", "-f", "2",
            "--iters", "5", "--check"}, io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        System.out.println("PerfTableOutputTest: hcomm perf printed:\n" + io);

        List<String> out = io.outLines();
        assertThat(out).as(io.toString()).noneMatch(l -> l.contains("[rank"));
        assertThat(io.errLines()).as(io.toString()).noneMatch(l -> l.startsWith("[rank 0] #"));
        assertThat(out).as(io.toString()).allMatch(l -> l.startsWith("#") || ROW.matcher(l).matches());

        // the header first, then per size its progress line, its tails line and its row, then the closing lines
        assertThat(out.getFirst()).startsWith("# hcomm perf allreduce: 2 ranks, float32, redop sum, algo auto, check on");
        int columns = indexOf(out, "#       size      count    type  redop  root   time (us)");
        int jit = indexOf(out, JitWarmUp.NONE);
        assertThat(columns).as(io.toString()).isGreaterThan(0).isLessThan(jit);
        List<String> sequence = new ArrayList<>();
        for (String l : out.subList(jit + 1, out.size())) {
            var row = ROW.matcher(l);
            sequence.add(row.matches() ? "row " + row.group(1) : l.replaceFirst(":.*", ""));
        }
        assertThat(sequence).as(io.toString()).startsWith(
                "# allreduce 4 KiB float32 sum", "# allreduce 4 KiB", "row 4096",
                "# allreduce 8 KiB float32 sum", "# allreduce 8 KiB", "row 8192",
                "# allreduce 16 KiB float32 sum", "# allreduce 16 KiB", "row 16384",
                "# rank 0 called allreduce 21 times", "# transport to rank 1", "# tuner's choice (allreduce)");
    }

    private static int indexOf(List<String> lines, String start) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith(start)) return i;
        }
        throw new AssertionError("no line starting with '" + start + "' in\n" + String.join("\n", lines));
    }
}
