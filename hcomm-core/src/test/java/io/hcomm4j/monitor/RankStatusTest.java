package io.hcomm4j.monitor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The published status round-trips through its text, and JobStatus names who is behind. */
class RankStatusTest {
    private static RankStatus idle(int rank, long collectives) {
        return new RankStatus(rank, 4, 100 + rank, "host-a", 1_000, "READY", List.of(), "",
                List.of(new RankStatus.Comm(0, 4, rank, collectives)), List.of());
    }

    private static RankStatus waiting(int rank, long seq, List<Integer> on) {
        return new RankStatus(rank, 4, 100 + rank, "host-a", 1_000, "READY", List.of(), "",
                List.of(new RankStatus.Comm(0, 4, rank, seq), new RankStatus.Comm(0xabcdef1234L, 2, 0, 3)),
                List.of(new RankStatus.Op(0, "allReduce", true, seq, 4096, 2500, on, true)));
    }

    @Test
    void roundTrip() {
        RankStatus s = new RankStatus(3, 8, 4242, "my host", 1_700_000_000_000L, "DEGRADED", List.of(5, 7),
                "rank 5 failed: nothing came from it\nfor 2 s", List.of(new RankStatus.Comm(0, 8, 3, 17),
                new RankStatus.Comm(0xF123456789ABCDEFL, 4, 1, 2)),
                List.of(new RankStatus.Op(0, "allReduce", true, 17, 1 << 20, 61_000, List.of(2, 4), true),
                        new RankStatus.Op(0xF123456789ABCDEFL, "recv", false, -1, 8, 12_000, List.of(), false)));
        RankStatus back = RankStatus.decode(s.encode());
        assertThat(back.rank()).isEqualTo(3);
        assertThat(back.worldSize()).isEqualTo(8);
        assertThat(back.host()).isEqualTo("my_host");
        assertThat(back.failedRanks()).containsExactly(5, 7);
        assertThat(back.reason()).isEqualTo("rank 5 failed: nothing came from it for 2 s");
        assertThat(back.comms()).isEqualTo(s.comms());
        assertThat(back.ops()).isEqualTo(s.ops());
        assertThat(RankStatus.key("hcomm/3/", 5)).isEqualTo("hcomm/3/status/5");
        assertThatThrownBy(() -> RankStatus.decode("hello")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RankStatus.decode("hcomm-status 1\nrank x\nhealth")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void namesTheRankThatHasNotReachedTheCollective() {
        List<RankStatus> ranks = new ArrayList<>(List.of(waiting(0, 5, List.of(3)), waiting(1, 5, List.of(0)),
                waiting(2, 5, List.of(1)), idle(3, 4)));
        JobStatus job = new JobStatus("hcomm/1/", 4, ranks);
        assertThat(job.findings()).containsExactly("rank 3 is behind on communicator 0: it has called 4 collectives and runs no op"
                + " (in its own code?); ranks 0, 1, 2 wait in allReduce #5");
        String text = job.render(3_500);
        assertThat(text).contains("session hcomm/1/: 4 ranks, 4 with a published status")
                .containsPattern("(?m)^0 +READY +2\\.5 s ago +comm 0: 5, comm abcdef1234: 3 +allReduce #5 4\\.0 KiB, 2\\.5 s STUCK +\\[3]")
                .containsPattern("(?m)^3 +READY .*idle");
    }

    @Test
    void aRankWithoutStatusThatOthersWaitForIsNamed() {
        List<RankStatus> ranks = new ArrayList<>();
        ranks.add(waiting(0, 5, List.of(3)));
        ranks.add(waiting(1, 5, List.of(0)));
        ranks.add(waiting(2, 5, List.of(1)));
        ranks.add(null);
        JobStatus job = new JobStatus("hcomm/1/", 4, ranks);
        assertThat(job.findings()).singleElement().asString().startsWith("rank 3 is behind or hung: ranks 0, 1, 2 wait for it in allReduce #5");
        assertThat(job.render(2_000)).containsPattern("(?m)^3 +- +no status published");
    }

    @Test
    void failedRanksAndPointToPointWaits() {
        RankStatus a = new RankStatus(0, 2, 1, "h", 0, "DEGRADED", List.of(1), "rank 1 failed: its connection broke", List.of(),
                List.of(new RankStatus.Op(0, "recv", false, 7, 64, 3_000, List.of(1), true)));
        JobStatus job = new JobStatus("hcomm/2/", 2, java.util.Arrays.asList(a, null));
        assertThat(job.findings()).containsExactly("rank 1 failed (reported by rank 0): rank 1 failed: its connection broke",
                "rank 0 has waited 3.0 s in recv tag 7 64 B");
        assertThat(new JobStatus("hcomm/1/", 1, List.of(idle(0, 0))).render(0)).contains("nobody is behind");
    }
}
