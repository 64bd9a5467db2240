package io.hcomm4j.comm;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code HCOMM_TUNE_AT_INIT} on real ranks (threads; hosts of two ranks each, TCP between hosts, shared memory within):
 * every rank's model then costs with the same measured links, not the built-in ones, and collectives stay exact.
 */
class TuneAtInitTest {
    @Test
    void everyRankCostsWithTheSameMeasuredLinks() throws Exception {
        Map<Integer, Tuner.LinkCost[]> links = new ConcurrentHashMap<>();
        Map<Integer, String> wrong = new ConcurrentHashMap<>();
        Ranks.runThreadsPerRank(4, Duration.ofMinutes(2), (r, b) -> b.hostId("host-" + r / 2).tuneAtInit(true), h -> {
            Communicator c = h.world();
            Tuner t = ((CommunicatorImpl) c).transportCollectives().tuner();
            links.put(c.rank(), new Tuner.LinkCost[] {t.between(), t.within()});
            try (Arena arena = Arena.ofShared()) {
                for (long count : new long[] {2, 1 << 18}) {
                    MemorySegment in = arena.allocate(8 * count);
                    MemorySegment out = arena.allocate(8 * count);
                    for (long i = 0; i < count; i++) in.setAtIndex(ValueLayout.JAVA_LONG, i, c.rank() * 1000L + i);
                    c.allReduce(in, out, count, DataType.INT64, ReduceOp.SUM);
                    for (long i = 0; i < count; i++) {
                        if (out.getAtIndex(ValueLayout.JAVA_LONG, i) != 6000L + 4 * i) wrong.putIfAbsent(c.rank(), count + "/" + i);
                    }
                }
            }
        });
        assertThat(wrong).isEmpty();
        assertThat(links).hasSize(4);
        Tuner.LinkCost between = links.get(0)[0];
        Tuner.LinkCost within = links.get(0)[1];
        assertThat(between).isNotEqualTo(Tuner.LinkCost.TCP_LOOPBACK);
        assertThat(within).isNotEqualTo(Tuner.LinkCost.SHM);
        for (Tuner.LinkCost l : new Tuner.LinkCost[] {between, within}) {
            assertThat(l.alpha()).isPositive().isLessThan(0.1);
            assertThat(l.beta()).isPositive().isLessThan(1e-6); // faster than 1 MB/s
            assertThat(l.gamma()).isEqualTo(Tuner.LinkCost.TCP_LOOPBACK.gamma());
        }
        for (int r = 1; r < 4; r++) {
            assertThat(links.get(r)[0]).as("rank %d between", r).isEqualTo(between);
            assertThat(links.get(r)[1]).as("rank %d within", r).isEqualTo(within);
        }
    }

    @Test
    void offTheBuiltInLinksStay() throws Exception {
        Map<Integer, Tuner.LinkCost> between = new ConcurrentHashMap<>();
        Ranks.runThreadsPerRank(2, Duration.ofMinutes(2), (r, b) -> b.hostId("host-" + r), h -> {
            Communicator c = h.world();
            between.put(c.rank(), ((CommunicatorImpl) c).transportCollectives().tuner().between());
        });
        assertThat(between.values()).containsOnly(Tuner.LinkCost.TCP_LOOPBACK);
    }

    /** A table tuned on a link of 1000 GB/s: far from any this machine has. */
    private static final String FAR_TABLE = """
            {"format": "hcomm4j-tuning/1", "entries": [ {
              "signature": {"ranks": 4, "hosts": 2, "min_per_host": 2, "max_per_host": 2, "within": "shm", "between": "tcp",
                            "between_gbps": 1000},
              "links": {"between": {"alpha_us": 900.0, "gbps": 1000, "reduce_gbps": 5.0}},
              "choices": {"allreduce": [{"up_to": null, "algo": "recursive_doubling"}]} } ]}
            """;

    @Test
    void aTableTunedOnAnotherLinkSpeedGivesWayToTheModelWhenInitMeasures(@TempDir Path dir) throws Exception {
        Path table = dir.resolve("far.json");
        Files.writeString(table, FAR_TABLE);
        for (boolean measure : new boolean[] {false, true}) {
            Map<Integer, Boolean> entry = new ConcurrentHashMap<>();
            Map<Integer, Tuner.LinkCost> between = new ConcurrentHashMap<>();
            Map<Integer, String> wrong = new ConcurrentHashMap<>();
            Ranks.runThreadsPerRank(4, Duration.ofMinutes(2),
                    (r, b) -> b.hostId("host-" + r / 2).tuningFile(table.toString()).tuneAtInit(measure), h -> {
                Communicator c = h.world();
                Tuner t = ((CommunicatorImpl) c).transportCollectives().tuner();
                entry.put(c.rank(), t.entry(Tuner.Shape.of(c.topology())) != null);
                between.put(c.rank(), t.between());
                try (Arena arena = Arena.ofShared()) {
                    long count = 1 << 16;
                    MemorySegment in = arena.allocate(8 * count);
                    MemorySegment out = arena.allocate(8 * count);
                    for (long i = 0; i < count; i++) in.setAtIndex(ValueLayout.JAVA_LONG, i, c.rank() * 1000L + i);
                    c.allReduce(in, out, count, DataType.INT64, ReduceOp.SUM);
                    for (long i = 0; i < count; i++) {
                        if (out.getAtIndex(ValueLayout.JAVA_LONG, i) != 6000L + 4 * i) wrong.putIfAbsent(c.rank(), "element " + i);
                    }
                }
            });
            assertThat(wrong).as("measure %s", measure).isEmpty();
            // without the measurement the table's entry applies (the speed is not known); with it, on every rank, it does not
            assertThat(entry).as("measure %s", measure).hasSize(4).allSatisfy((r, has) -> assertThat(has).isEqualTo(!measure));
            // the entry's links never cost the other shapes (hcomm tune measured the entry with the built-in model inside)
            if (!measure) assertThat(between.values()).containsOnly(Tuner.LinkCost.TCP_LOOPBACK);
        }
    }
}
