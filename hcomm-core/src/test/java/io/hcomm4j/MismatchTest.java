package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Ranks that call different collectives, or one with another count, type, op or root, all get
 * CollectiveMismatchException naming the op and the rank that differs, well before the timeout; the
 * communicator works for the next collective.
 */
class MismatchTest {
    static Stream<Arguments> cases() {
        return Stream.of("op", "count", "type", "redop", "root").flatMap(w -> Stream.of(Arguments.of(w, false), Arguments.of(w, true)));
    }

    /**
     * With the cheap check a rank whose part of the op completed before anyone noticed (the leaf of a broadcast
     * tree built around another root) finishes it with correct data; everyone else gets the exception. With
     * HCOMM_CHECK=full every rank gets it, before any data moves.
     */
    @ParameterizedTest(name = "{0} differs, full check {1}")
    @MethodSource("cases")
    void everyRankGetsTheMismatch(String what, boolean full) throws Exception {
        int n = 4;
        int odd = 2;
        Map<Integer, String> messages = new ConcurrentHashMap<>();
        Ranks.runThreads(n, Duration.ofSeconds(60), b -> b.timeout(Duration.ofSeconds(30)).fullCheck(full), h -> {
            Communicator c = h.world();
            int me = c.rank();
            float[] data = new float[200];
            MemorySegment seg = MemorySegment.ofArray(data);
            long t0 = System.nanoTime();
            try {
                boolean differ = me == odd;
                switch (what) {
                    case "op" -> {
                        if (differ) c.broadcast(seg, 200, DataType.FLOAT32, 0);
                        else c.allReduce(seg, seg, 200, DataType.FLOAT32, ReduceOp.SUM);
                    }
                    case "count" -> c.allReduce(seg, seg, differ ? 100 : 200, DataType.FLOAT32, ReduceOp.SUM);
                    case "type" -> c.allReduce(seg, seg, 200, differ ? DataType.INT32 : DataType.FLOAT32, ReduceOp.SUM);
                    case "redop" -> c.allReduce(seg, seg, 200, DataType.FLOAT32, differ ? ReduceOp.MAX : ReduceOp.SUM);
                    default -> c.broadcast(seg, 200, DataType.FLOAT32, differ ? 1 : 0);
                }
                messages.put(me, "no exception");
            } catch (CollectiveMismatchException e) {
                long ms = (System.nanoTime() - t0) / 1_000_000;
                messages.put(me, e.getMessage() + " [" + ms + " ms]");
                assertThat(ms).as("detected long before the 30 s timeout").isLessThan(10_000);
            }
            // the communicator goes on: a correct collective afterwards
            int[] v = {me};
            c.allReduce(v, ReduceOp.SUM);
            assertThat(v[0]).isEqualTo(6);
        });
        assertThat(messages).hasSize(n);
        for (var e : messages.entrySet()) {
            if (!full && what.equals("root") && e.getValue().equals("no exception")) continue;
            assertThat(e.getValue()).as("rank %d", e.getKey()).doesNotContain("no exception")
                    .containsAnyOf("allReduce", "broadcast").contains("rank " + odd);
        }
        if (full || !what.equals("root")) assertThat(messages.values()).noneMatch(m -> m.equals("no exception"));
        System.out.println("MismatchTest " + what + (full ? " (full)" : "") + ": " + messages);
    }
}
