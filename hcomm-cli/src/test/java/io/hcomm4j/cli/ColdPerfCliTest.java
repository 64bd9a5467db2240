package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code hcomm perf OP --cold}: a fresh job per size, each size's first calls and its steady state, checked (0 wrong);
 * every figure positive and the ratio column first N over steady (times are never required to be fast). Usage errors
 * for what --cold cannot take.
 */
@Timeout(180)
class ColdPerfCliTest {
    private static final Pattern ROW = Pattern.compile(
            "([a-z]+),(\\d+),(\\d+),([0-9.]+),([0-9.]+),([0-9.]+),(\\d+),([0-9.]+),([0-9.]+),(-?\\d+),(-?\\d+)");

    @Test
    void everySizeInItsOwnJobIsCheckedAndReported() {
        Captured io = new Captured();
        int code = HcommCli.execute(new String[] {"perf", "allreduce", "--cold", "-n", "2", "-b", "4K", "-e", "64K", "-f", "16",
                "--iters", "60", "--check", "--format", "csv"}, io.out, io.err, Map.of());
        assertThat(code).as(io.toString()).isZero();
        List<String> lines = io.outLines();
        assertThat(lines.getFirst()).isEqualTo(ColdBench.CSV_HEADER);
        assertThat(lines).as(io.toString()).hasSize(3);
        long[] sizes = {4096, 65536};
        for (int i = 0; i < 2; i++) {
            Matcher m = ROW.matcher(lines.get(i + 1));
            assertThat(m.matches()).as(lines.get(i + 1)).isTrue();
            assertThat(m.group(1)).isEqualTo("allreduce");
            assertThat(Integer.parseInt(m.group(2))).isEqualTo(2);
            assertThat(Long.parseLong(m.group(3))).isEqualTo(sizes[i]);
            double first = Double.parseDouble(m.group(4));
            double firstN = Double.parseDouble(m.group(6));
            double steady = Double.parseDouble(m.group(8));
            assertThat(first).isPositive();
            assertThat(Double.parseDouble(m.group(5))).isPositive();
            assertThat(firstN).isPositive();
            assertThat(Integer.parseInt(m.group(7))).isEqualTo(60);
            assertThat(steady).isPositive();
            assertThat(Double.parseDouble(m.group(9))).isCloseTo(firstN / steady, org.assertj.core.data.Offset.offset(0.05 + firstN / steady * 0.01));
            assertThat(Long.parseLong(m.group(10))).as("first call's end after JVM start, ms").isPositive();
            assertThat(Long.parseLong(m.group(11))).as("wrong elements").isZero();
        }
    }

    @Test
    void usageErrors() {
        String[][] bad = {{"p2p", "--cold"}, {"put", "--cold"}, {"allreduce", "--cold", "--warmup", "5"},
            {"allreduce", "--cold", "--timing", "median"}, {"allreduce", "--cold", "--plot", "x.png"},
            {"allreduce", "--cold", "--jit-warmup", "on"}};
        String[] says = {"--cold applies to the collectives, not to p2p", "--cold applies to the collectives, not to put",
            "drop --warmup", "drop --timing", "--plot does not apply to --cold", "drop --jit-warmup on"};
        Captured.assertPerfUsageErrors(bad, says);
    }
}
