package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code HCOMM_TUNING_FILE} on real ranks (threads, each its own session, TCP between them): the table's choices run
 * (the JFR event names the algorithm) with exact results, and ranks that loaded different tables fail init, every one
 * of them, naming the ranks.
 */
class TuningFileTest {
    /** 3 ranks on 3 "hosts" (own host ids: TCP between them): allreduce ring up to 4 KiB, recursive doubling above. */
    private static final String TABLE = """
            {"format": "hcomm4j-tuning/1", "entries": [ {
              "signature": {"ranks": 3, "hosts": 3, "min_per_host": 1, "max_per_host": 1, "within": "none", "between": "tcp"},
              "choices": {
                "allreduce": [{"up_to": 4096, "algo": "ring"}, {"up_to": null, "algo": "recursive_doubling"}],
                "allgather": [{"up_to": null, "algo": "bruck"}] } } ]}
            """;

    @Test
    void theTablesChoicesRunWithExactResults(@TempDir Path dir) throws Exception {
        Path table = dir.resolve("tuning.json");
        Files.writeString(table, TABLE);
        Path jfr = dir.resolve("run.jfr");
        Map<Integer, String> wrong = new ConcurrentHashMap<>();
        try (Recording recording = new Recording()) {
            recording.enable("io.hcomm4j.Collective");
            recording.start();
            Ranks.runThreadsPerRank(3, Duration.ofMinutes(2),
                    (r, b) -> b.hostId("host-" + r).tuningFile(table.toString()), h -> {
                Communicator c = h.world();
                int me = c.rank();
                try (Arena arena = Arena.ofShared()) {
                    for (int count : new int[] {256, 1 << 18}) { // 1 KiB: ring; 1 MiB: recursive doubling
                        MemorySegment in = arena.allocate(4L * count);
                        MemorySegment out = arena.allocate(4L * count);
                        for (int i = 0; i < count; i++) in.setAtIndex(ValueLayout.JAVA_INT, i, (me + 1) * 1000 + i % 997);
                        c.allReduce(in, out, count, DataType.INT32, ReduceOp.SUM);
                        for (int i = 0; i < count; i++) {
                            int want = 6000 + 3 * (i % 997);
                            if (out.getAtIndex(ValueLayout.JAVA_INT, i) != want) {
                                wrong.put(me, "allreduce " + count + " element " + i + ": " + out.getAtIndex(ValueLayout.JAVA_INT, i) + " != " + want);
                                break;
                            }
                        }
                    }
                    int blk = 1000;
                    MemorySegment mine = arena.allocate(8L * blk);
                    MemorySegment all = arena.allocate(8L * blk * 3);
                    for (int i = 0; i < blk; i++) mine.setAtIndex(ValueLayout.JAVA_LONG, i, me * 1_000_000L + i);
                    c.allGather(mine, all, blk, DataType.INT64);
                    for (int r = 0; r < 3; r++) {
                        for (int i = 0; i < blk; i++) {
                            if (all.getAtIndex(ValueLayout.JAVA_LONG, (long) r * blk + i) != r * 1_000_000L + i) {
                                wrong.put(me, "allgather block " + r + " element " + i);
                            }
                        }
                    }
                }
            });
            recording.stop();
            recording.dump(jfr);
        }
        assertThat(wrong).isEmpty();
        List<RecordedEvent> ours = RecordingFile.readAllEvents(jfr).stream()
                .filter(e -> e.getEventType().getName().equals("io.hcomm4j.Collective")).toList();
        for (int r = 0; r < 3; r++) {
            int rank = r;
            List<RecordedEvent> mine = ours.stream().filter(e -> e.getInt("rank") == rank).toList();
            assertThat(mine).filteredOn(e -> e.getString("op").equals("allReduce"))
                    .extracting(e -> e.getLong("bytes") + " " + e.getString("algorithm"))
                    .containsExactlyInAnyOrder("1024 ring", "1048576 recursive_doubling");
            assertThat(mine).filteredOn(e -> e.getString("op").equals("allGather"))
                    .extracting(e -> e.getString("algorithm")).containsExactly("bruck");
        }
    }

    @Test
    void ranksWithDifferentTablesAllFailInitNamingThem(@TempDir Path dir) throws Exception {
        Path a = dir.resolve("a.json");
        Path b = dir.resolve("b.json");
        Files.writeString(a, TABLE);
        Files.writeString(b, TABLE.replace("bruck", "ring"));
        // rank 1 loads another table, rank 2 none
        AtomicInteger failed = new AtomicInteger();
        Map<Integer, String> messages = new ConcurrentHashMap<>();
        int port = Ranks.freePort();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(3);
        try {
            List<java.util.concurrent.Future<?>> fs = new java.util.ArrayList<>();
            for (int r = 0; r < 3; r++) {
                int rank = r;
                fs.add(pool.submit(() -> {
                    CommConfig.Builder cfg = Ranks.threadConfig(rank, 3, port).hostId("host-" + rank);
                    if (rank == 0) cfg.tuningFile(a.toString());
                    if (rank == 1) cfg.tuningFile(b.toString());
                    try (Hcomm h = Hcomm.init(cfg.build())) {
                        messages.put(rank, "init succeeded");
                    } catch (HcommException e) {
                        failed.incrementAndGet();
                        messages.put(rank, e.getMessage());
                    }
                    return null;
                }));
            }
            for (var f : fs) f.get(2, java.util.concurrent.TimeUnit.MINUTES);
        } finally {
            pool.shutdownNow();
        }
        assertThat(failed).hasValue(3);
        for (int r = 0; r < 3; r++) {
            assertThat(messages.get(r)).startsWith("rank " + r + ": the ranks loaded different tuning tables")
                    .contains("HCOMM_TUNING_FILE").contains("ranks [0] fingerprint").contains("ranks [1] fingerprint")
                    .contains("ranks [2] none");
        }
        assertThat(messages.get(0)).contains(a.toString());
        assertThat(messages.get(1)).contains(b.toString());
    }

    @Test
    void anUnreadableTableFailsInitNamingRankAndFile(@TempDir Path dir) throws Exception {
        Path bad = dir.resolve("bad.json");
        Files.writeString(bad, "{\"format\": \"hcomm4j-tuning/1\", \"entries\": 3}");
        assertThatThrownBy(() -> Hcomm.init(Ranks.threadConfig(0, 1, Ranks.freePort()).tuningFile(bad.toString()).build()))
                .isInstanceOf(HcommException.class).hasMessageStartingWith("rank 0: tuning file " + bad)
                .hasMessageContaining("no \"entries\" array");
    }

    @Test
    void theEnvironmentNamesTheFile() {
        CommConfig c = CommConfig.builder().tuningFile("/x/t.json").build();
        assertThat(c.tuningFile()).contains("/x/t.json");
        assertThat(CommConfig.builder().tuningFile(" ").build().tuningFile()).isEmpty();
    }
}
