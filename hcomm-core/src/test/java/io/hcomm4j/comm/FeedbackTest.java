package io.hcomm4j.comm;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.algo.Feedback;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Feedback on real ranks (threads, each its own session, TCP between them): an algorithm made slow by a test hook is
 * replaced at the same op on every rank after two votes, the op time recovers, and every result stays exact; off (the
 * default), nothing changes.
 */
class FeedbackTest {
    private static final int RANKS = 3;
    private static final int COUNT = 1024; // 4 KiB of int32
    private static final long DELAY_NANOS = 20_000_000;

    /**
     * {@code calls} all-reduces of 4 KiB on {@link #RANKS} ranks, each result checked; after op 2·VOTE_EVERY the
     * tuner's choice is slowed by {@link #DELAY_NANOS} a call. Returns the JFR events of the run and the slowed algorithm.
     */
    private static List<RecordedEvent> run(Path dir, boolean feedback, int calls, Tuner.Algo[] slowed) throws Exception {
        Path jfr = dir.resolve("feedback-" + feedback + ".jfr");
        Map<Integer, String> wrong = new ConcurrentHashMap<>();
        CyclicBarrier phase = new CyclicBarrier(RANKS);
        int v = Feedback.VOTE_EVERY;
        try (Recording recording = new Recording()) {
            recording.enable("io.hcomm4j.Collective");
            recording.enable("io.hcomm4j.AlgorithmSwitch");
            recording.start();
            try {
                Ranks.runThreadsPerRank(RANKS, Duration.ofMinutes(3), (r, b) -> b.hostId("host-" + r).feedback(feedback), h -> {
                    Communicator c = h.world();
                    int me = c.rank();
                    TransportCollectives algos = ((CommunicatorImpl) c).transportCollectives();
                    assertThat(algos.feedback == null).isEqualTo(!feedback);
                    try (Arena arena = Arena.ofShared()) {
                        MemorySegment in = arena.allocate(4L * COUNT);
                        MemorySegment out = arena.allocate(4L * COUNT);
                        for (int call = 1; call <= calls; call++) {
                            for (int i = 0; i < COUNT; i++) in.setAtIndex(ValueLayout.JAVA_INT, i, call * 7 + (me + 1) * i);
                            c.allReduce(in, out, COUNT, DataType.INT32, ReduceOp.SUM);
                            for (int i = 0; i < COUNT; i++) {
                                int want = RANKS * call * 7 + 6 * i; // ranks 1 + 2 + 3
                                if (out.getAtIndex(ValueLayout.JAVA_INT, i) != want) {
                                    wrong.putIfAbsent(me, "call " + call + " element " + i + ": " + out.getAtIndex(ValueLayout.JAVA_INT, i));
                                }
                            }
                            if (call == 2 * v) {
                                // two votes done (baseline set): from here on, the algorithm the tuner chose is slow
                                await(phase);
                                if (me == 0) {
                                    slowed[0] = algos.tunerChoice(Tuner.Op.ALLREDUCE, 4L * COUNT);
                                    TransportCollectives.slowDownForTest(new TransportCollectives.Slowdown(Tuner.Op.ALLREDUCE,
                                            slowed[0], DELAY_NANOS));
                                }
                                await(phase);
                            }
                        }
                    }
                });
            } finally {
                TransportCollectives.slowDownForTest(null);
            }
            recording.stop();
            recording.dump(jfr);
        }
        assertThat(wrong).isEmpty();
        List<RecordedEvent> events = RecordingFile.readAllEvents(jfr);
        Files.deleteIfExists(jfr);
        return events;
    }

    private static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }

    @Test
    void aSlowAlgorithmIsReplacedEverywhereAtOneOpAndTheTimeRecovers(@TempDir Path dir) throws Exception {
        int v = Feedback.VOTE_EVERY;
        Tuner.Algo[] slowed = new Tuner.Algo[1];
        List<RecordedEvent> events = run(dir, true, 6 * v, slowed);
        Tuner.Algo slow = slowed[0];
        List<RecordedEvent> switches = named(events, "io.hcomm4j.AlgorithmSwitch");
        // slow from op 2v+1; the votes at 3v and 4v find it degraded: the switch at op 4v, on every rank
        assertThat(switches).as("switch events").hasSize(RANKS);
        assertThat(switches).extracting(e -> e.getInt("rank")).containsExactlyInAnyOrder(0, 1, 2);
        String to = switches.getFirst().getString("to");
        // two degraded votes switch: those at 3v and 4v, or already 2v and 3v when the machine's noise made ops v+1..2v
        // look slow too; every rank switches at the same op either way
        long at = switches.getFirst().getLong("sequence");
        assertThat(at).as("the op of the switch").isIn(3L * v, 4L * v);
        assertThat(to).isNotEqualTo(Tuner.name(slow));
        assertThat(switches).allSatisfy(e -> {
            assertThat(e.getString("op")).isEqualTo("allreduce");
            assertThat(e.getString("from")).isEqualTo(Tuner.name(slow));
            assertThat(e.getString("to")).isEqualTo(to);
            assertThat(e.getLong("sequence")).isEqualTo(at);
            assertThat(e.getLong("fromNanos")).isGreaterThanOrEqualTo(DELAY_NANOS / 2);
        });
        List<RecordedEvent> ops = named(events, "io.hcomm4j.Collective");
        for (int r = 0; r < RANKS; r++) {
            int rank = r;
            Map<Long, String> algoBySeq = ops.stream().filter(e -> e.getInt("rank") == rank)
                    .collect(Collectors.toMap(e -> e.getLong("sequence"), e -> e.getString("algorithm")));
            assertThat(algoBySeq).hasSize(6 * v);
            for (long seq = 1; seq <= 6 * v; seq++) {
                assertThat(algoBySeq.get(seq)).as("rank %d op %d", rank, seq).isEqualTo(seq <= at ? Tuner.name(slow) : to);
            }
            // the op time: slowed (ops 2v+1 .. 4v), then recovered (ops 4v+1 .. 6v), on this rank's clock
            double slowMean = meanNanos(ops, rank, 2L * v + 1, at);
            double after = meanNanos(ops, rank, at + 1, 6L * v);
            assertThat(slowMean).isGreaterThanOrEqualTo(DELAY_NANOS);
            // the injected delay is gone: the mean lost at least half of it (not a ratio: under a loaded machine the
            // ops' own time, which both means carry, can be a good part of the slowed one; a hog run saw 13 ms of 39)
            assertThat(after).as("rank %d mean op time after the switch (ns), slowed %.0f", rank, slowMean)
                    .isLessThan(slowMean - DELAY_NANOS / 2.0);
        }
    }

    @Test
    void offItKeepsTheChoiceHoweverSlow(@TempDir Path dir) throws Exception {
        int v = Feedback.VOTE_EVERY;
        // as above, but with HCOMM_FEEDBACK=false (the default): the slowed algorithm stays
        List<RecordedEvent> events = run(dir, false, 5 * v, new Tuner.Algo[1]);
        assertThat(named(events, "io.hcomm4j.AlgorithmSwitch")).isEmpty();
        List<RecordedEvent> ops = named(events, "io.hcomm4j.Collective");
        assertThat(ops).hasSize(RANKS * 5 * v);
        assertThat(ops.stream().map(e -> e.getString("algorithm")).distinct().toList()).hasSize(1);
        // it was slowed indeed: the last ops took the delay
        for (int r = 0; r < RANKS; r++) assertThat(meanNanos(ops, r, 4L * v + 1, 5L * v)).isGreaterThanOrEqualTo(DELAY_NANOS);
    }

    private static double meanNanos(List<RecordedEvent> ops, int rank, long from, long to) {
        return ops.stream().filter(e -> e.getInt("rank") == rank && e.getLong("sequence") >= from && e.getLong("sequence") <= to)
                .mapToLong(e -> e.getDuration().toNanos()).average().orElseThrow();
    }

    private static void await(CyclicBarrier b) {
        try {
            b.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
