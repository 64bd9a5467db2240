package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.Test;

/**
 * The JFR events (issue 19), read back with a {@link RecordingStream} while three ranks (threads over real sockets,
 * the transport's algorithms: no shared-memory collectives) run collectives, point-to-point ops and a receive that
 * waits past HCOMM_STUCK_REPORT: every field of {@code io.hcomm4j.Collective}, {@code PointToPoint},
 * {@code Connection}, {@code TunerChoice} and {@code StuckOp} as the ops had it. {@code PeerFailure} and
 * {@code Membership} are read from the rank processes' recordings in {@link GrowTest}.
 */
class JfrEventsTest {
    @Test
    void eventsCarryTheOpsFields() throws Exception {
        List<RecordedEvent> events = new CopyOnWriteArrayList<>();
        try (RecordingStream rs = new RecordingStream()) {
            rs.setReuse(false); // the events are kept: by default the stream hands the same object again
            for (String e : new String[] {"Collective", "PointToPoint", "Connection", "TunerChoice", "StuckOp"}) {
                rs.enable("io.hcomm4j." + e);
                rs.onEvent("io.hcomm4j." + e, events::add);
            }
            rs.startAsync();
            Ranks.runThreads(3, Duration.ofMinutes(2), b -> b.zeroCopy(false).transport(CommConfig.Transport.TCP)
                    .stuckReport(Duration.ofMillis(300)), h -> {
                Communicator c = h.world();
                int me = c.rank();
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment buf = arena.allocate(4096 * 4);
                    for (int i = 0; i < 3; i++) c.allReduce(buf, buf, 4096, DataType.FLOAT32, ReduceOp.SUM);
                    c.broadcast(buf, 100, DataType.INT32, 2);
                    MemorySegment msg = arena.allocate(1000);
                    if (me == 0) {
                        c.send(msg, 1, 7);
                        try {
                            Thread.sleep(1500); // rank 1's second receive waits: past HCOMM_STUCK_REPORT
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                        c.send(msg, 1, 8);
                    } else if (me == 1) {
                        c.recv(msg, Communicator.ANY_SOURCE, 7);
                        c.recv(msg, 0, 8);
                    }
                    c.barrier();
                }
            });
            rs.stop(); // flushes what the ranks committed
        }
        List<RecordedEvent> coll = of(events, "io.hcomm4j.Collective");
        // 3 all-reduces, a broadcast and a barrier on each of 3 ranks
        assertThat(coll).hasSize(15);
        for (int r = 0; r < 3; r++) {
            int rank = r;
            List<RecordedEvent> mine = coll.stream().filter(e -> e.getInt("rank") == rank).toList();
            assertThat(mine).as("%s", mine).extracting(e -> e.getString("op")).containsExactlyInAnyOrder("allReduce", "allReduce", "allReduce", "broadcast", "barrier");
            for (RecordedEvent e : mine) {
                assertThat(e.getInt("ranks")).isEqualTo(3);
                assertThat(e.getLong("communicator")).isZero();
                assertThat(e.getString("outcome")).isEqualTo("ok");
                assertThat(e.getInt("channels")).as("one TCP connection per peer").isEqualTo(1);
                assertThat(e.getDuration()).isPositive();
                if (e.getString("op").equals("allReduce")) assertThat(e.getLong("bytes")).isEqualTo(16384);
                if (e.getString("op").equals("broadcast")) assertThat(e.getLong("bytes")).isEqualTo(400);
            }
            assertThat(mine).extracting(e -> e.getLong("sequence")).containsExactlyInAnyOrder(1L, 2L, 3L, 4L, 5L);
        }
        List<RecordedEvent> p2p = of(events, "io.hcomm4j.PointToPoint");
        assertThat(p2p).hasSize(4);
        for (RecordedEvent e : p2p) {
            boolean send = e.getString("op").equals("send");
            assertThat(e.getInt("rank")).isEqualTo(send ? 0 : 1);
            assertThat(e.getInt("peer")).isEqualTo(send ? 1 : 0);
            assertThat(e.getLong("bytes")).isEqualTo(1000);
            assertThat(e.getString("transport")).isEqualTo("tcp");
            assertThat(e.getInt("channels")).isEqualTo(1);
            assertThat(e.getString("outcome")).isEqualTo("ok");
        }
        assertThat(p2p).extracting(e -> e.getInt("tag")).containsExactlyInAnyOrder(7, 7, 8, 8);
        RecordedEvent waited = p2p.stream().filter(e -> e.getString("op").equals("recv") && e.getInt("tag") == 8).findFirst().orElseThrow();
        assertThat(waited.getDuration()).isGreaterThan(Duration.ofMillis(1000));

        List<RecordedEvent> conns = of(events, "io.hcomm4j.Connection");
        // every pair connected once, each side of it saw the link become usable
        assertThat(conns).hasSize(6);
        assertThat(conns).allSatisfy(e -> {
            assertThat(e.getString("transport")).isEqualTo("tcp");
            assertThat(e.getBoolean("reconnect")).isFalse();
            assertThat(e.getLong("epoch")).isEqualTo(1);
        });
        assertThat(conns).extracting(e -> e.getInt("rank") + "-" + e.getInt("peer"))
                .containsExactlyInAnyOrder("0-1", "0-2", "1-0", "1-2", "2-0", "2-1");

        List<RecordedEvent> choices = of(events, "io.hcomm4j.TunerChoice");
        // one per rank and op class, at its first call: the all-reduce's and the broadcast's (a barrier has one algorithm)
        for (int r = 0; r < 3; r++) {
            int rank = r;
            List<RecordedEvent> mine = choices.stream().filter(e -> e.getInt("rank") == rank).toList();
            assertThat(mine).extracting(e -> e.getString("op")).containsExactlyInAnyOrder("allreduce", "broadcast");
            RecordedEvent ar = mine.stream().filter(e -> e.getString("op").equals("allreduce")).findFirst().orElseThrow();
            assertThat(ar.getLong("bytes")).isEqualTo(16384);
            assertThat(ar.getString("algorithm")).isNotBlank();
            assertThat(ar.getString("previous")).isEmpty();
        }

        // rank 1's second receive; on a loaded machine the others' barrier waiting for rank 1 may be stuck too
        List<RecordedEvent> stuck = of(events, "io.hcomm4j.StuckOp");
        RecordedEvent s = stuck.stream().filter(e -> e.getString("op").equals("recv")).findFirst().orElseThrow(
                () -> new AssertionError("no StuckOp of rank 1's receive: " + stuck));
        assertThat(s.getInt("rank")).isEqualTo(1);
        assertThat(s.getLong("sequence")).isEqualTo(8);
        assertThat(s.getLong("communicator")).isZero();
        assertThat(s.getDuration("waited")).isGreaterThanOrEqualTo(Duration.ofMillis(300));
        assertThat(s.getString("waitingFor")).isEqualTo("rank 0");
    }

    private static List<RecordedEvent> of(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }
}
