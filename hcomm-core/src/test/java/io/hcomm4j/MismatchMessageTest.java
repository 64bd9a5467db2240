package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.monitor.OpTrace;
import io.hcomm4j.monitor.TraceDump;
import io.hcomm4j.monitor.TraceEntry;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.awaitility.Awaitility;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A collective that rank 2 calls with one argument different from the others' fails on every rank with a message that
 * says which argument and both values ("rank 2 called allGather with count 1000 where rank 0 has count 1024"), not
 * only "a different count, type, op or root": over shared memory (where every rank sees every fingerprint), with
 * HCOMM_CHECK=full, and over TCP (where the rank that receives the odd message tells the others; a rank whose part
 * needed nothing from the odd one may finish instead).
 */
class MismatchMessageTest {
    private record Odd(String what, BiConsumer<Communicator, Arena> good, BiConsumer<Communicator, Arena> odd, String[] words) {
    }

    private static List<Odd> cases() {
        return List.of(
                new Odd("count", (c, a) -> c.allGather(a.allocate(8192), a.allocate(8192L * 3), 1024, DataType.INT64),
                        (c, a) -> c.allGather(a.allocate(8192), a.allocate(8192L * 3), 1000, DataType.INT64),
                        new String[] {"allGather with count 1000 where ", " has count 1024", "allGather with count 1024 where ", " has count 1000"}),
                new Odd("root", (c, a) -> c.gather(a.allocate(64), a.allocate(64 * 3), 16, DataType.INT32, 0),
                        (c, a) -> c.gather(a.allocate(64), a.allocate(64 * 3), 16, DataType.INT32, 1),
                        new String[] {"gather with root 1 where ", " has root 0", "gather with root 0 where ", " has root 1"}),
                new Odd("type", (c, a) -> c.allGather(a.allocate(64), a.allocate(64 * 3), 16, DataType.INT32),
                        (c, a) -> c.allGather(a.allocate(64), a.allocate(64 * 3), 16, DataType.FLOAT32),
                        new String[] {"allGather with type FLOAT32 where ", " has type INT32", "allGather with type INT32 where ", " has type FLOAT32"}));
    }

    @ParameterizedTest(name = "{0}, full check {1}")
    @CsvSource({"AUTO, false", "AUTO, true", "TCP, false"})
    void theDifferingArgumentAndBothValuesAreNamed(CommConfig.Transport transport, boolean full) throws Exception {
        Map<String, String> messages = new ConcurrentHashMap<>();
        Ranks.runThreads(3, Duration.ofMinutes(2), b -> b.transport(transport).fullCheck(full), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            try (Arena arena = Arena.ofShared()) {
                for (Odd o : cases()) {
                    // over TCP, rank 2's gather block goes to rank 1 (its "root"), a leaf whose part is over before the
                    // odd block comes: rank 1 reports the late block to the others (and rank 0 stops waiting for rank 2)
                    Throwable t = catchThrowable(() -> (rank == 2 ? o.odd() : o.good()).accept(c, arena));
                    if (t != null || transport != CommConfig.Transport.TCP) { // over TCP its part may have needed nothing odd (see below)
                        assertThat(t).as("%s on rank %d", o.what(), rank).isInstanceOf(CollectiveMismatchException.class);
                        messages.put(o.what() + " " + rank, t.getMessage());
                    }
                    int[] x = {1};
                    c.allReduce(x, ReduceOp.SUM); // the communicator goes on
                    assertThat(x[0]).isEqualTo(3);
                }
            }
        });
        System.out.println("MismatchMessageTest " + transport + " full=" + full + ": " + messages.get("count 0"));
        for (Odd o : cases()) {
            // over TCP a rank whose part needed nothing from a rank with other arguments may finish (rank 2 sending its
            // gather block to "root" 1 and leaving, and rank 1 sending its own to 0); at least the two others fail, and
            // with another root at least the root
            long failed = java.util.stream.IntStream.range(0, 3).filter(r -> messages.containsKey(o.what() + " " + r)).count();
            int least = transport != CommConfig.Transport.TCP ? 3 : o.what().equals("root") ? 1 : 2;
            assertThat(failed).as("%s: ranks that failed", o.what()).isGreaterThanOrEqualTo(least);
            assertThat(messages).as("the gather's root waits for rank 2's block").containsKey(o.what() + " 0");
            for (int r = 0; r < 3; r++) {
                String m = messages.get(o.what() + " " + r);
                if (m == null) continue;
                // every rank names rank 2 and both values; which rank it compares with depends on who found it
                // every rank names both values: "rank 2 called X with <its> where rank 0 has <theirs>", or, when rank 2
                // found the difference itself (and told the others), "rank 1 called X with <theirs> where rank 2 has <its>"
                assertThat(m).as("%s on rank %d", o.what(), r).satisfiesAnyOf(
                        x -> assertThat(x).contains("rank 2 called " + o.words()[0]).contains(o.words()[1]),
                        x -> assertThat(x).contains(" called " + o.words()[2] + "rank 2" + o.words()[3]));
            }
        }
    }

    /**
     * A rooted op (broadcast, reduce, gather, scatter) that one rank calls with another root, over TCP, on 3 and 4 ranks,
     * below and above the eager limit. No rank waits for the timeout (HCOMM_TIMEOUT is a minute here, the run's limit
     * two); each rank either finishes its part or fails with a {@link CollectiveMismatchException} that names both roots,
     * a reduce's or gather's root fails (when it is not the odd rank), and the communicator goes on. Two ways find it:
     * the odd rank sends to a rank that expects nothing from it, maybe done with the op already, which reports the
     * message to every rank (3 ranks, odd rank 2 or 1); or no message of one pattern reaches the other, every rank waits
     * to receive (the real root is the odd one; a 4-rank reduce whose trees miss each other), and the stuck ranks
     * compare fingerprints through the store after HCOMM_STUCK_REPORT (half a second here; at most 2 s). When every rank's
     * part only sends (a 3-rank reduce whose rank 0 names root 1: each rank sends its vector to the root it believes in),
     * every call may return before a message shows the difference: then the rank that gets the late message marks the
     * op failed in its flight record (and logs it), which the test waits for.
     */
    @ParameterizedTest(name = "{0} ranks, {1} bytes, rank {2} with root {3}")
    @CsvSource({"3, 64, 2, 1", "3, 1048576, 1, 2", "3, 64, 0, 1", "4, 64, 0, 2", "4, 1048576, 3, 1"})
    void aRootedOpWithAnotherRootOnOneRankFailsInsteadOfWaitingForTheTimeout(int n, int bytes, int odd, int oddRoot) throws Exception {
        List<String> ops = List.of("broadcast", "reduce", "gather", "scatter");
        Map<String, Throwable> failures = new ConcurrentHashMap<>();
        Map<String, String> foundLate = new ConcurrentHashMap<>();
        Path dumps = Files.createTempDirectory("mismatch-trace");
        Ranks.runThreads(n, Duration.ofMinutes(2), b -> b.transport(CommConfig.Transport.TCP).timeout(Duration.ofMinutes(1)).stuckReport(Duration.ofMillis(500)), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            int root = rank == odd ? oddRoot : 0;
            long count = bytes / Integer.BYTES;
            try (Arena arena = Arena.ofShared()) {
                MemorySegment one = arena.allocate(bytes), all = arena.allocate((long) bytes * n);
                for (String op : ops) {
                    Throwable t = catchThrowable(() -> {
                        switch (op) {
                            case "broadcast" -> c.broadcast(one, count, DataType.INT32, root);
                            case "reduce" -> c.reduce(one, all.asSlice(0, bytes), count, DataType.INT32, ReduceOp.SUM, root);
                            case "gather" -> c.gather(one, all, count, DataType.INT32, root);
                            default -> c.scatter(all, one, count, DataType.INT32, root);
                        }
                    });
                    if (t != null) failures.put(op + " " + rank, t);
                    int[] x = {1};
                    c.allReduce(x, ReduceOp.SUM); // the communicator goes on
                    assertThat(x[0]).as("%s: the all-reduce after it on rank %d", op, rank).isEqualTo(n);
                }
            }
            // an op that returned normally everywhere was found mismatched by a late message: some rank's record says so
            Path mine = dumps.resolve("rank-" + rank + ".json");
            Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
                c.dumpTrace(mine);
                for (TraceEntry e : TraceDump.parse(Files.readString(mine)).comms().get(0).entries()) {
                    if (e.state() == OpTrace.State.FAILED && e.error() != null && e.error().contains("had finished its part")) {
                        foundLate.put(e.op() + " " + rank, e.error());
                    }
                }
                return ops.stream().allMatch(op -> failures.keySet().stream().anyMatch(k -> k.startsWith(op + " "))
                        || foundLate.keySet().stream().anyMatch(k -> k.startsWith(op + " ")));
            });
            c.barrier(); // no rank closes while another still waits for a late message
        });
        for (String op : ops) {
            if (failures.keySet().stream().noneMatch(k -> k.startsWith(op + " "))) {
                // no call failed: every rank's part only sent; the late message's rank names both roots in its record
                assertThat(foundLate.keySet()).as("%s: ranks that failed or found it late", op).anyMatch(k -> k.startsWith(op + " "));
                foundLate.forEach((k, m) -> {
                    if (k.startsWith(op + " ")) assertThat(m).as(k).contains(" has root ").contains("CollectiveMismatchException");
                });
                continue;
            }
            if ((op.equals("reduce") || op.equals("gather")) && odd != 0) {
                assertThat(failures).as("%s: the root (rank 0) does not get what it needs from rank %d", op, odd).containsKey(op + " 0");
            }
            for (int r = 0; r < n; r++) {
                Throwable t = failures.get(op + " " + r);
                if (t == null) continue; // its part needed nothing from the odd rank
                assertThat(t).as("%s on rank %d", op, r).isInstanceOf(CollectiveMismatchException.class);
                assertThat(t.getMessage()).as("%s on rank %d", op, r).satisfiesAnyOf(
                        m -> assertThat(m).contains("rank " + odd + " called " + op + " with root " + oddRoot + " where rank ").contains(" has root 0"),
                        m -> assertThat(m).contains(" called " + op + " with root 0 where rank " + odd + " has root " + oddRoot));
            }
        }
    }
}
