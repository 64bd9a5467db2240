package io.hcomm4j.cli;

import static io.hcomm4j.cli.PerfCommand.P2pAlgo.PINGPONG;
import static io.hcomm4j.cli.PerfCommand.P2pAlgo.STREAM;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.cli.PerfCommand.P2pTest;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which sizes and iteration counts {@code hcomm perf p2p} measures. */
class PerfPlanTest {
    @Test
    void defaultIsLatencyAt8BAnd4KiBAndBandwidthAt4And64MiB() {
        List<P2pTest> plan = PerfPlan.p2pPlan(null, null, 2, null, null, null);

        assertThat(plan).extracting(P2pTest::algo, P2pTest::bytes).containsExactly(
                org.assertj.core.groups.Tuple.tuple(PINGPONG, 8L),
                org.assertj.core.groups.Tuple.tuple(PINGPONG, 4096L),
                org.assertj.core.groups.Tuple.tuple(STREAM, 4L << 20),
                org.assertj.core.groups.Tuple.tuple(STREAM, 64L << 20));
        assertThat(plan.get(0).iters()).isEqualTo(10_000);
        assertThat(plan.get(0).warmup()).isEqualTo(1_000);
        assertThat(plan.get(2).window()).isEqualTo(16);
        assertThat(plan.get(3).window()).isEqualTo(4);
        // each bandwidth size moves a bounded amount of data: at most ~1.5 GiB with warmup
        for (P2pTest t : plan.subList(2, 4)) {
            assertThat(t.bytes() * t.window() * (t.iters() + t.warmup())).isLessThanOrEqualTo(3L << 29);
        }
    }

    /** Small streamed messages: windows of 64, and warmup windows enough for the JIT (thousands of messages). */
    @Test
    void smallStreamsWarmUpLongEnough() {
        List<P2pTest> plan = PerfPlan.p2pPlan(8L, 262144L, 8, STREAM, null, null);
        assertThat(plan).extracting(P2pTest::bytes).containsExactly(8L, 64L, 512L, 4096L, 32768L, 262144L);
        for (P2pTest t : plan.subList(0, 5)) {
            assertThat(t.window()).as("%d B", t.bytes()).isEqualTo(64);
            assertThat(t.warmup() * t.window()).as("%d B warmup messages", t.bytes()).isGreaterThanOrEqualTo(6_400);
            assertThat(t.bytes() * t.window() * (t.iters() + t.warmup())).isLessThanOrEqualTo(3L << 29);
        }
        assertThat(plan.get(0).iters()).isEqualTo(2_000);
        assertThat(plan.get(0).warmup()).isEqualTo(500);
        assertThat(plan.get(5).window()).isEqualTo(16); // from 64 KiB on as before
        assertThat(plan.get(5).warmup()).isEqualTo(2);
    }

    @Test
    void algoSelectsHalfOfTheDefault() {
        assertThat(PerfPlan.p2pPlan(null, null, 2, STREAM, null, null))
                .extracting(P2pTest::bytes).containsExactly(4L << 20, 64L << 20);
    }

    @Test
    void sweepRunsBothAlgosPerSize() {
        List<P2pTest> plan = PerfPlan.p2pPlan(1024L, 16384L, 4, null, 7, 3);

        assertThat(plan).extracting(P2pTest::bytes).containsExactly(1024L, 1024L, 4096L, 4096L, 16384L, 16384L);
        assertThat(plan).extracting(P2pTest::algo).containsExactly(PINGPONG, STREAM, PINGPONG, STREAM, PINGPONG, STREAM);
        assertThat(plan).allSatisfy(t -> {
            assertThat(t.iters()).isEqualTo(7);
            assertThat(t.warmup()).isEqualTo(3);
        });
    }

    @Test
    void sweepStopsAtMaxEvenBetweenSteps() {
        assertThat(PerfPlan.p2pPlan(3L, 100L, 3, PINGPONG, null, null))
                .extracting(P2pTest::bytes).containsExactly(3L, 9L, 27L, 81L);
    }

    @Test
    void oneBoundIsOneSize() {
        assertThat(PerfPlan.p2pPlan(null, 512L, 2, PINGPONG, null, null)).extracting(P2pTest::bytes).containsExactly(512L);
        assertThat(PerfPlan.p2pPlan(512L, null, 2, PINGPONG, null, null)).extracting(P2pTest::bytes).containsExactly(512L);
    }

    @Test
    void badArgumentsAreNamed() {
        assertThatThrownBy(() -> PerfPlan.p2pPlan(0L, 8L, 2, null, null, null)).hasMessageContaining("-b");
        assertThatThrownBy(() -> PerfPlan.p2pPlan(8L, 4L, 2, null, null, null)).hasMessageContaining("smaller than -b");
        assertThatThrownBy(() -> PerfPlan.p2pPlan(8L, 64L, 1, null, null, null)).hasMessageContaining("-f");
        assertThatThrownBy(() -> PerfPlan.p2pPlan(null, null, 2, null, 0, null)).hasMessageContaining("--iters");
        assertThatThrownBy(() -> PerfPlan.p2pPlan(null, null, 2, null, null, -1)).hasMessageContaining("--warmup");
    }
}
