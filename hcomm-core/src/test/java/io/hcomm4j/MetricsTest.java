package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/** Per-op counters ({@link Communicator#metrics()}) and the {@code io.hcomm4j.Collective} JFR event, on real ranks. */
class MetricsTest {
    @Test
    void countersAndFlightRecorderEventsForEveryOp() throws Exception {
        Path jfr = Files.createTempFile("hcomm-metrics", ".jfr");
        Map<Integer, List<OpStats>> byRank = new ConcurrentHashMap<>();
        try (Recording recording = new Recording()) {
            recording.enable("io.hcomm4j.Collective");
            recording.start();
            Ranks.runThreads(3, Duration.ofMinutes(2), cfg -> cfg, h -> {
                Communicator c = h.world();
                int me = c.rank();
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment a = arena.allocate(4096);
                    MemorySegment b = arena.allocate(4096);
                    for (int i = 0; i < 5; i++) c.allReduce(a, b, 1024, DataType.FLOAT32, ReduceOp.SUM);
                    c.broadcast(a, 100, DataType.INT64, 2);
                    c.barrier();
                    if (me == 0) c.send(a.asSlice(0, 64), 1, 7);
                    if (me == 1) c.recv(b, 0, 7);
                    // a failing op counts as a call and a failure: a count the buffer cannot hold
                    assertThatThrownBy(() -> c.allReduce(a, b, 1_000_000, DataType.FLOAT32, ReduceOp.SUM))
                            .isInstanceOf(IllegalArgumentException.class);
                }
                byRank.put(me, c.metrics());
            });
            recording.stop();
            recording.dump(jfr);
        }
        for (int r = 0; r < 3; r++) {
            Map<String, OpStats> m = byRank.get(r).stream().collect(Collectors.toMap(OpStats::op, s -> s));
            OpStats ar = m.get("allReduce");
            assertThat(ar.calls()).as("rank %d allReduce calls", r).isEqualTo(5);
            assertThat(ar.failures()).isZero(); // argument checks fail before the op runs
            assertThat(ar.bytes()).isEqualTo(5 * 4096L);
            assertThat(ar.totalNanos()).isPositive();
            assertThat(ar.maxNanos()).isPositive().isLessThanOrEqualTo(ar.totalNanos());
            assertThat(java.util.Arrays.stream(ar.latencyHistogram()).sum()).isEqualTo(5);
            assertThat(m.get("broadcast").calls()).isEqualTo(1);
            assertThat(m.get("broadcast").bytes()).isEqualTo(800);
            assertThat(m.get("barrier").calls()).isEqualTo(1);
            assertThat(m.keySet()).doesNotContain("reduce", "allGather");
        }
        assertThat(byRank.get(0).stream().filter(s -> s.op().equals("send")).findFirst().orElseThrow())
                .satisfies(s -> {
                    assertThat(s.calls()).isEqualTo(1);
                    assertThat(s.bytes()).isEqualTo(64);
                    assertThat(s.latencyHistogram()).isEmpty();
                });
        assertThat(byRank.get(1).stream().filter(s -> s.op().equals("recv")).findFirst().orElseThrow().calls()).isEqualTo(1);
        assertThat(byRank.get(2).stream().map(OpStats::op)).doesNotContain("send", "recv");

        List<RecordedEvent> events = RecordingFile.readAllEvents(jfr);
        Files.deleteIfExists(jfr);
        List<RecordedEvent> ours = events.stream().filter(e -> e.getEventType().getName().equals("io.hcomm4j.Collective")).toList();
        // 3 ranks x (5 allReduce + broadcast + barrier)
        assertThat(ours).hasSize(21);
        for (int r = 0; r < 3; r++) {
            int rank = r;
            List<RecordedEvent> mine = ours.stream().filter(e -> e.getInt("rank") == rank).toList();
            assertThat(mine).extracting(e -> e.getString("op"))
                    .containsExactlyInAnyOrder("allReduce", "allReduce", "allReduce", "allReduce", "allReduce", "broadcast", "barrier");
            assertThat(mine).extracting(e -> e.getLong("sequence")).containsExactlyInAnyOrder(1L, 2L, 3L, 4L, 5L, 6L, 7L);
            assertThat(mine).allSatisfy(e -> {
                assertThat(e.getInt("ranks")).isEqualTo(3);
                assertThat(e.getString("outcome")).isEqualTo("ok");
                assertThat(e.getDuration().toNanos()).isPositive();
                // threads of one host: shared memory, or the tuner's transport algorithm where that path declines
                assertThat(e.getString("algorithm")).isIn("zero_copy", "fixed", "ring", "recursive_doubling",
                        "halving_doubling", "tree", "chain", "dissemination");
            });
            assertThat(mine.stream().filter(e -> e.getString("op").equals("allReduce"))).allSatisfy(e -> assertThat(e.getLong("bytes")).isEqualTo(4096));
        }
    }
}
