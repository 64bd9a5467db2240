package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * {@link Communicator#warmUp} and {@code HCOMM_WARMUP}: every rank runs the same rounds of every size and kind of memory
 * and stops with the others, the pool gets its buffers back, and the communicator works right after.
 */
class WarmUpTest {
    @Test
    void ranksRunTheSameRoundsAndStopTogether() throws Exception {
        Map<Integer, Integer> rounds = new ConcurrentHashMap<>();
        Ranks.runThreads(3, Duration.ofMinutes(3), h -> {
            Communicator c = h.world();
            rounds.put(c.rank(), c.warmUp(Duration.ofSeconds(2)));
            // what stays in use is the communicator's staging for unregistered memory, kept for its later calls
            long inUse = h.memory().stats().bytesInUse();
            assertThat(inUse).as("rank %d", c.rank()).isLessThanOrEqualTo(9L << 20);
            assertThat(h.memory().stats().highWaterBytes()).as("it used the pool").isGreaterThanOrEqualTo(inUse + 2 * 4L * 1024 * 1024);
            // every round ran 107 all-reduces (48 + 48 + 8 + 2 + 1 over the sizes) on each of 3 kinds of memory
            int r = rounds.get(c.rank());
            assertThat(c.metrics()).as("rank %d", c.rank()).filteredOn(m -> m.op().equals("allReduce")).singleElement()
                    .satisfies(m -> assertThat(m.calls()).isEqualTo(321L * r));
            assertThat(c.metrics()).filteredOn(m -> m.op().equals("allToAll")).singleElement()
                    .satisfies(m -> assertThat(m.calls()).isEqualTo(321L * r));
            // a barrier after each call's eight collectives (nine ops: both sequence parities for each) and one per round
            assertThat(c.metrics()).filteredOn(m -> m.op().equals("barrier")).singleElement()
                    .satisfies(m -> assertThat(m.calls()).isEqualTo(322L * r));
            checkAllReduce(c, 1000);
            assertThat(c.warmUp(Duration.ZERO)).isEqualTo(1);
            assertThat(h.memory().stats().bytesInUse()).as("rank %d: a second warm-up holds on to nothing more", c.rank()).isEqualTo(inUse);
        });
        assertThat(rounds.values()).as("rounds per rank %s", rounds).hasSize(3).allMatch(r -> r >= 1 && r.equals(rounds.get(0)));
    }

    @Test
    void theShortestBudgetDecidesAndANegativeOneIsRefused() throws Exception {
        Map<Integer, Integer> rounds = new ConcurrentHashMap<>();
        Ranks.runThreads(2, Duration.ofMinutes(3), h -> {
            Communicator c = h.world();
            assertThatThrownBy(() -> c.warmUp(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("rank " + c.rank()).hasMessageContaining("warmUp budget").hasMessageContaining("was -1 ms");
            // rank 0 allows no time beyond one round, rank 1 a minute: both stop after the first round
            rounds.put(c.rank(), c.warmUp(c.rank() == 0 ? Duration.ZERO : Duration.ofMinutes(1)));
            checkAllReduce(c, 77);
        });
        assertThat(rounds).containsEntry(0, 1).containsEntry(1, 1);
    }

    @Test
    void aPoolTooSmallFailsEveryRankAndGetsItsBuffersBack() throws Exception {
        Ranks.runThreads(2, Duration.ofMinutes(3), b -> b.memPoolMax(2L << 20), h -> {
            Communicator c = h.world();
            // the 256 KiB pair fits in 2 MiB, the 4 MiB pair does not: every rank fails before its first collective
            assertThatThrownBy(() -> c.warmUp(Duration.ofSeconds(1))).isInstanceOf(MemoryLimitException.class);
            assertThat(h.memory().stats().bytesInUse()).as("rank %d: what it took went back", c.rank()).isZero();
            checkAllReduce(c, 300);
        });
    }

    @Test
    void initWarmsUpWhenConfigured() throws Exception {
        Map<Integer, Long> highWater = new ConcurrentHashMap<>();
        Ranks.runThreads(2, Duration.ofMinutes(3), b -> b.warmUp(Duration.ofMillis(1)), h -> {
            assertThat(h.config().warmUp()).isEqualTo(Duration.ofMillis(1));
            highWater.put(h.world().rank(), h.memory().stats().highWaterBytes());
            assertThat(h.memory().stats().bytesInUse()).as("only the communicator's staging").isLessThanOrEqualTo(9L << 20);
            checkAllReduce(h.world(), 5);
        });
        // the largest size's two registered buffers of 1 Mi float32 elements each
        assertThat(highWater.values()).hasSize(2).allMatch(b -> b >= 2 * 4L * 1024 * 1024);
    }

    /** A float32 sum of {@code count} elements, every element checked on this rank. */
    private static void checkAllReduce(Communicator c, int count) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment in = arena.allocate(ValueLayout.JAVA_FLOAT, count);
            MemorySegment out = arena.allocate(ValueLayout.JAVA_FLOAT, count);
            for (int i = 0; i < count; i++) in.setAtIndex(ValueLayout.JAVA_FLOAT, i, c.rank() * 1000 + i);
            c.allReduce(in, out, count, DataType.FLOAT32, ReduceOp.SUM);
            int n = c.size();
            for (int i = 0; i < count; i++) {
                float expected = 1000f * n * (n - 1) / 2 + (float) n * i;
                assertThat(out.getAtIndex(ValueLayout.JAVA_FLOAT, i)).as("rank %d element %d", c.rank(), i).isEqualTo(expected);
            }
        }
    }
}
