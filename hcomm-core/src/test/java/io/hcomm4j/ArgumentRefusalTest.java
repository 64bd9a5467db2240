package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * One rank passes a bad argument to a collective the others call correctly: that rank gets the caller's exception
 * ({@link IllegalArgumentException}, or {@link NullPointerException} for a null) naming itself and the argument, and
 * every other rank's call fails with a {@link CollectiveMismatchException} that names the rank and the argument, instead
 * of waiting for it until HCOMM_TIMEOUT (a minute here: a wait would end in a CommTimeoutException, not this); over TCP,
 * a rank whose part needs nothing from the culprit may finish instead (a broadcast's root, a reduce's leaf). Then the
 * communicator is usable: a correct all-reduce after each refusal is checked element by element. Shared memory (the
 * zero-copy turn) and TCP (the transport's notice channel), 2 to 8 ranks, each rank refusing in turn.
 */
class ArgumentRefusalTest {
    /** A bad call of one rank, and the words of the reason its exception and the others' name. */
    private record BadCall(String what, String reason, BiConsumer<Communicator, Arena> call, String op) { }

    private static List<BadCall> badCalls(int n) {
        return List.of(
                new BadCall("recv too small", "recv holds 16 bytes, the call needs 32",
                        (c, a) -> c.allReduce(a.allocate(32), a.allocate(16), 8, DataType.FLOAT32, ReduceOp.SUM), "allReduce"),
                new BadCall("root out of range", "root " + n + " is out of range [0, " + n + ")",
                        (c, a) -> c.broadcast(a.allocate(64), 8, DataType.INT64, n), "broadcast"),
                new BadCall("negative count", "count -1 must be >= 0",
                        (c, a) -> c.allGather(a.allocate(8), a.allocate(8L * n), -1, DataType.INT64), "allGather"),
                new BadCall("null op", "op is null",
                        (c, a) -> c.reduce(a.allocate(8), a.allocate(8), 2, DataType.INT32, (ReduceOp) null, 0), "reduce"),
                new BadCall("counts of the wrong length", "recvCounts needs " + n + " entries (one per rank), has 1",
                        (c, a) -> c.reduceScatterV(a.allocate(64), a.allocate(64), new long[] {1}, DataType.INT32, ReduceOp.MAX),
                        "reduceScatterV"));
    }

    /** The same call with good arguments, as the other ranks make it. */
    private static void goodCall(Communicator c, Arena a, String op) {
        int n = c.size();
        switch (op) {
            case "allReduce" -> c.allReduce(a.allocate(32), a.allocate(32), 8, DataType.FLOAT32, ReduceOp.SUM);
            case "broadcast" -> c.broadcast(a.allocate(64), 8, DataType.INT64, 0);
            case "allGather" -> c.allGather(a.allocate(8), a.allocate(8L * n), 1, DataType.INT64);
            case "reduce" -> c.reduce(a.allocate(8), a.allocate(8), 2, DataType.INT32, ReduceOp.SUM, 0);
            case "reduceScatterV" -> {
                long[] counts = new long[n];
                java.util.Arrays.fill(counts, 1);
                c.reduceScatterV(a.allocate(4L * n), a.allocate(4), counts, DataType.INT32, ReduceOp.MAX);
            }
            default -> throw new IllegalArgumentException(op);
        }
    }

    /**
     * The three jobs (2 and 8 ranks over shared memory, 3 over TCP) run side by side, each in threads of its own, each
     * as it ran alone before: over shared memory the refusing rank's own call returns only after about 2 s (in the
     * mismatch its engine waits up to 2 s for the words of every refusal of the op, its own included, which it does
     * not send to itself), five times per job, so a job is mostly that idle wait, which the jobs now spend together.
     */
    @Test
    void aBadArgumentOnOneRankFailsTheCollectiveOnEveryRank() throws Exception {
        record Job(int n, CommConfig.Transport transport) { }
        List<Job> jobs = List.of(new Job(2, CommConfig.Transport.AUTO), new Job(8, CommConfig.Transport.AUTO),
                new Job(3, CommConfig.Transport.TCP));
        ExecutorService pool = Executors.newFixedThreadPool(jobs.size());
        try {
            List<Future<?>> running = new ArrayList<>();
            for (Job j : jobs) running.add(pool.submit(() -> {
                badArgumentOnEachRankInTurn(j.n(), j.transport());
                return null;
            }));
            for (int i = 0; i < jobs.size(); i++) {
                try {
                    running.get(i).get(5, TimeUnit.MINUTES);
                } catch (ExecutionException e) {
                    throw new AssertionError(jobs.get(i).n() + " ranks over " + jobs.get(i).transport() + ": " + e.getCause(), e.getCause());
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static void badArgumentOnEachRankInTurn(int n, CommConfig.Transport transport) throws Exception {
        Random seeds = new Random(31L * n + transport.ordinal());
        long seed = seeds.nextLong();
        Ranks.runThreads(n, Duration.ofMinutes(4), b -> b.transport(transport), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            Random random = new Random(seed);
            try (Arena arena = Arena.ofShared()) {
                int round = 0;
                for (BadCall bad : badCalls(n)) {
                    int culprit = round++ % n;
                    Throwable thrown = catchThrowable(() -> {
                        if (rank == culprit) bad.call().accept(c, arena);
                        else goodCall(c, arena, bad.op());
                    });
                    if (rank == culprit) {
                        assertThat(thrown).as("%s on rank %d (its own call)", bad.what(), rank)
                                .isInstanceOfAny(IllegalArgumentException.class, NullPointerException.class)
                                .hasMessage("rank " + rank + ": " + bad.op() + ": " + bad.reason());
                    } else if (thrown == null) {
                        // over the transport, a rank whose part needs nothing from the culprit may finish (a broadcast's
                        // root, a reduce's leaf); over shared memory every rank sees every rank's descriptor first
                        assertThat(transport).as("%s of rank %d completed on rank %d", bad.what(), culprit, rank)
                                .isEqualTo(CommConfig.Transport.TCP);
                        assertThat(bad.op()).isIn("broadcast", "reduce");
                        assertThat(rank).isNotEqualTo(bad.op().equals("reduce") ? 0 : -1); // the reduce's root needs every rank
                    } else {
                        assertThat(thrown).as("%s of rank %d, seen on rank %d", bad.what(), culprit, rank)
                                .isInstanceOf(CollectiveMismatchException.class)
                                .hasMessageContaining(bad.op() + " (collective #")
                                .hasMessageContaining("fails on every rank: rank " + culprit + " refused its own arguments: "
                                        + bad.reason());
                    }
                    // the communicator goes on: every element of a correct all-reduce
                    int count = 1 + random.nextInt(5000);
                    long[] data = new long[count];
                    for (int i = 0; i < count; i++) data[i] = (long) rank * count + i;
                    c.allReduce(data, ReduceOp.SUM);
                    for (int i = 0; i < count; i++) {
                        assertThat(data[i]).as("element %d after %s", i, bad.what())
                                .isEqualTo((long) count * n * (n - 1) / 2 + (long) n * i);
                    }
                }
            }
        });
    }
}
