package io.hcomm4j.cli;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.CommConfig;
import io.hcomm4j.cli.RmaBench.Op;
import io.hcomm4j.cli.RmaBench.Test;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Timeout;

/**
 * {@link RmaBench} over TCP on real sessions (ranks are threads of this JVM, {@link ThreadRanks}, with
 * HCOMM_TRANSPORT=tcp: every window access is an RMA frame to the target's progress engine): every op, checked, finds 0
 * wrong; the plans; and the checks count what is wrong. Times are only required to be positive, never fast.
 */
@Timeout(120)
class RmaBenchRunTest {
    @org.junit.jupiter.api.Test
    void everyOpChecksCleanOverTcp() throws Exception {
        List<List<PerfReport.Row>> results = ThreadRanks.run(3, b -> b.transport(CommConfig.Transport.TCP), r -> comm -> {
            List<PerfReport.Row> rows = new ArrayList<>();
            PrintStream quiet = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
            PerfReport report = new PerfReport(PerfReport.Format.CSV, quiet);
            for (Op op : Op.values()) {
                List<Test> plan = switch (op) {
                    case PUT, GET -> RmaBench.plan(op, 8L, 1L << 20, 128, 10, 2); // 8 B, 1 KiB, 128 KiB
                    case ACCUMULATE -> RmaBench.plan(op, 1000L, 300_000L, 300, 10, 2);
                    case FETCH_AND_OP -> RmaBench.plan(op, null, null, null, 100, 5);
                    case COUNTER -> RmaBench.plan(op, null, null, null, 200, 5);
                };
                for (RmaBench.WindowKind kind : RmaBench.WindowKind.values()) {
                    rows.addAll(RmaBench.run(comm, plan, kind, CollectiveBench.Mem.NATIVE, true, false, peer -> "tcp", report, quiet));
                }
            }
            return rows;
        });

        List<PerfReport.Row> rows = results.getFirst();
        assertThat(results.subList(1, 3)).allSatisfy(other -> assertThat(other).isEmpty());
        assertThat(rows).extracting(PerfReport.Row::op).containsExactly(
                "put", "put", "put", "put", "put", "put", "get", "get", "get", "get", "get", "get",
                "accumulate", "accumulate", "accumulate", "accumulate", "fetch_and_op", "fetch_and_op", "counter", "counter");
        assertThat(rows).allSatisfy(row -> {
            assertThat(row.wrong()).as("wrong of %s", row).isZero();
            assertThat(row.timeUs()).as("time of %s", row).isPositive();
            assertThat(row.algo()).isIn("window-tcp", "window-create-tcp");
            assertThat(row.ranks()).isEqualTo(3);
            assertThat(row.root()).isEqualTo(row.op().equals("counter") ? 0 : 1);
        });
        assertThat(rows.get(18).count()).as("counter: 200 increments by each of 3 ranks").isEqualTo(600);
    }

    @org.junit.jupiter.api.Test
    void plansFollowTheBaseline() {
        assertThat(RmaBench.plan(Op.PUT, null, null, null, null, null)).extracting(Test::bytes)
                .containsExactly(8L, 4096L, 4L << 20, 64L << 20);
        assertThat(RmaBench.plan(Op.GET, null, null, null, null, null)).allSatisfy(t -> {
            assertThat(t.iters()).as("0: timed for 1 s").isZero();
            assertThat(t.warmup()).isEqualTo(50);
        });
        assertThat(RmaBench.plan(Op.ACCUMULATE, null, null, null, null, null)).extracting(Test::bytes).containsExactly(4096L, 4L << 20);
        assertThat(RmaBench.plan(Op.ACCUMULATE, 2L, 6L, 2, 5, 0)).extracting(Test::bytes).as("whole float32s, at least one")
                .containsExactly(4L);
        assertThat(RmaBench.plan(Op.FETCH_AND_OP, null, null, null, 7, 1)).singleElement()
                .isEqualTo(new Test(Op.FETCH_AND_OP, 8, 7, 1));
        assertThat(RmaBench.plan(Op.COUNTER, null, null, null, null, null)).singleElement()
                .isEqualTo(new Test(Op.COUNTER, 8, 20_000, 50));
        assertThatThrownBy(() -> RmaBench.plan(Op.COUNTER, 8L, null, null, null, null)).hasMessageContaining("-b/-e do not apply");
        assertThatThrownBy(() -> RmaBench.plan(Op.PUT, null, null, null, null, -1)).hasMessageContaining("--warmup");
        assertThat(RmaBench.count(Op.COUNTER, 8, 20_000, 4)).isEqualTo(80_000);
        assertThat(RmaBench.count(Op.ACCUMULATE, 4096, 0, 2)).isEqualTo(1024);
    }

    @org.junit.jupiter.api.Test
    void checksCountWhatIsWrong() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bytes = arena.allocate(1000);
            P2pBench.fill(bytes, 1);
            assertThat(RmaBench.wrongBytes(bytes, 1)).isZero();
            assertThat(RmaBench.wrongBytes(bytes, 0)).as("another sender's pattern").isGreaterThan(900);
            bytes.set(JAVA_BYTE, 0, (byte) ~bytes.get(JAVA_BYTE, 0));
            bytes.set(JAVA_BYTE, 999, (byte) ~bytes.get(JAVA_BYTE, 999));
            assertThat(RmaBench.wrongBytes(bytes, 1)).isEqualTo(2);

            MemorySegment sums = arena.allocate(4 * 100L);
            for (int i = 0; i < 100; i++) sums.setAtIndex(JAVA_FLOAT, i, 3 * RmaBench.operand(i));
            assertThat(RmaBench.wrongSums(sums, 3)).isZero();
            assertThat(RmaBench.wrongSums(sums, 2)).as("a call too many").isEqualTo(100);
            sums.setAtIndex(JAVA_FLOAT, 42, 0);
            assertThat(RmaBench.wrongSums(sums, 3)).isEqualTo(1);
        }
    }
}
