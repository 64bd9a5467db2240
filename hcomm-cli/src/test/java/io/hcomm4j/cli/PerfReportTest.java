package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The table and CSV of {@code hcomm perf}. */
class PerfReportTest {
    private static final PerfReport.Row LATENCY =
            new PerfReport.Row("p2p", "pingpong", 2, 8, 8, "int8", "none", -1, 12.3456, 0.000648, 0.000648, -1);
    private static final PerfReport.Row BANDWIDTH =
            new PerfReport.Row("p2p", "stream", 2, 4 << 20, 4 << 20, "int8", "none", -1, 2000.5, 2.0966, 2.0966, 0)
                    .withTails(new double[] {1990.25, 2500.0, 3100.5});

    @Test
    void csvHasTheHeaderOfThePeerBaselines() {
        Captured io = new Captured();
        PerfReport report = new PerfReport(PerfReport.Format.CSV, io.out);
        report.header("comments are not CSV");
        report.row(LATENCY);
        report.row(BANDWIDTH);

        assertThat(io.outLines()).containsExactly(
                "op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong",
                "p2p,pingpong,2,8,8,int8,none,-1,12.346,0.0006,0.0006,-1",
                "p2p,stream,2,4194304,4194304,int8,none,-1,2000.500,2.0966,2.0966,0");
    }

    @Test
    void tableHasTheNcclTestsColumns() {
        Captured io = new Captured();
        PerfReport report = new PerfReport(PerfReport.Format.TABLE, io.out);
        report.header("hcomm perf p2p");
        report.row(LATENCY);
        report.row(BANDWIDTH);

        assertThat(io.outLines().get(0)).isEqualTo("# hcomm perf p2p");
        assertThat(io.outLines().get(2)).containsSubsequence("size", "count", "type", "redop", "root", "time (us)",
                "algbw (GB/s)", "busbw (GB/s)", "#wrong", "algo", "p50 (us)", "p99 (us)", "max (us)");
        assertThat(io.outLines().get(3).trim().split("\\s+"))
                .containsExactly("8", "8", "int8", "none", "-1", "12.35", "0.001", "0.001", "N/A", "pingpong", "N/A", "N/A", "N/A");
        assertThat(io.outLines().get(4).trim().split("\\s+"))
                .containsExactly("4194304", "4194304", "int8", "none", "-1", "2000.50", "2.097", "2.097", "0", "stream",
                        "1990.25", "2500.00", "3100.50");
    }
}
