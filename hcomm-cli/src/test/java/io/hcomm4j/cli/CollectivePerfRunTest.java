package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.cli.CollectiveBench.Coll;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code hcomm perf}'s collective measurements on real sessions: ranks are threads of this JVM, each with its own
 * {@code Hcomm.init}, over TCP ({@link ThreadRanks}). Every op, checked, on 2 and 3 ranks at two sizes (one small
 * and odd, one past the library's switch from latency to bandwidth algorithms) finds 0 wrong elements; rows carry
 * busbw = algbw × the op's factor; a rank whose results are altered is caught. Times are only required to be
 * positive, never fast.
 */
@Timeout(90)
class CollectivePerfRunTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
    /** 1000 B: odd, not a whole number of blocks on 3 ranks; 300000 B: past the 64 KiB/256 KiB algorithm switches. */
    private static final long[] SIZES = {1000, 300_000};

    @Test
    void everyOpChecksCleanOnTwoRanks() throws Exception {
        everyOpChecksClean(2);
    }

    @Test
    void everyOpChecksCleanOnThreeRanks() throws Exception {
        everyOpChecksClean(3);
    }

    private static void everyOpChecksClean(int n) throws Exception {
        List<List<PerfReport.Row>> results = ThreadRanks.run(n, r -> comm -> {
            List<PerfReport.Row> rows = new ArrayList<>();
            for (Coll c : Coll.values()) {
                // rooted ops at the last rank, so a root other than 0 is covered
                List<CollectiveBench.Test> plan = new ArrayList<>();
                for (long size : SIZES) plan.add(new CollectiveBench.Test(c, size, DataType.FLOAT32, ReduceOp.SUM, n - 1, 2, 1));
                rows.addAll(run(comm, plan));
            }
            return rows;
        });

        List<PerfReport.Row> rows = results.getFirst();
        assertThat(rows).hasSize(Coll.values().length * SIZES.length);
        assertThat(results.subList(1, n)).allSatisfy(other -> assertThat(other).isEmpty());
        for (PerfReport.Row row : rows) {
            Coll c = Coll.of(row.op()).orElseThrow();
            assertThat(row.wrong()).as("wrong elements of %s", row).isZero();
            assertThat(row.ranks()).isEqualTo(n);
            assertThat(row.timeUs()).as("time of %s", row).isPositive();
            assertThat(row.algbwGBs()).as("algbw of %s", row).isCloseTo(row.bytes() / (row.timeUs() * 1e3), org.assertj.core.data.Offset.offset(1e-12));
            assertThat(row.busbwGBs()).as("busbw of %s", row).isEqualTo(row.algbwGBs() * c.busFactor(n));
            assertThat(row.root()).isEqualTo(c.rooted ? n - 1 : -1);
            assertThat(row.redop()).isEqualTo(c.reduces ? "sum" : "none");
            assertThat(row.dtype()).isEqualTo("float32");
        }
        // the size column is the rounded buffer: 1000 B on 3 ranks of float32 blocks is 996 B for the blocked ops
        assertThat(rows).filteredOn(r -> r.op().equals("allgather")).extracting(PerfReport.Row::bytes)
                .containsExactly(n == 3 ? 996L : 1000L, 300_000L);
    }

    @Test
    void everyTypeAndReductionChecksClean() throws Exception {
        List<List<PerfReport.Row>> results = ThreadRanks.run(3, r -> comm -> {
            List<PerfReport.Row> rows = new ArrayList<>();
            for (Coll c : new Coll[] {Coll.ALLREDUCE, Coll.REDUCE, Coll.REDUCESCATTER}) {
                List<CollectiveBench.Test> plan = new ArrayList<>();
                for (DataType type : DataType.values()) {
                    for (ReduceOp op : COLLECTIVE_OPS) {
                        if (op.accepts(type)) plan.add(new CollectiveBench.Test(c, 600, type, op, 1, 1, 0));
                    }
                }
                rows.addAll(run(comm, plan));
            }
            // data movement of 1- and 8-byte elements
            for (DataType type : new DataType[] {DataType.UINT8, DataType.FLOAT64}) {
                for (Coll c : new Coll[] {Coll.BROADCAST, Coll.ALLGATHER, Coll.ALLTOALL, Coll.SENDRECV}) {
                    rows.addAll(run(comm, List.of(new CollectiveBench.Test(c, 600, type, ReduceOp.SUM, 2, 1, 0))));
                }
            }
            return rows;
        });

        long pairs = java.util.Arrays.stream(DataType.values())
                .mapToLong(t -> java.util.Arrays.stream(COLLECTIVE_OPS).filter(op -> op.accepts(t)).count()).sum();
        assertThat(results.getFirst()).hasSize((int) (3 * pairs + 8))
                .allSatisfy(row -> assertThat(row.wrong()).as("wrong elements of %s", row).isZero());
    }

    @Test
    void collectivesRunOnOneRank() throws Exception {
        List<List<PerfReport.Row>> results = ThreadRanks.run(1, r -> comm -> {
            List<PerfReport.Row> rows = new ArrayList<>();
            for (Coll c : Coll.values()) {
                if (c != Coll.SENDRECV) rows.addAll(run(comm, List.of(new CollectiveBench.Test(c, 4096, DataType.INT32, ReduceOp.MAX, 0, 2, 1))));
            }
            return rows;
        });

        assertThat(results.getFirst()).hasSize(Coll.values().length - 1).allSatisfy(row -> {
            assertThat(row.wrong()).as("wrong elements of %s", row).isZero();
            assertThat(row.busbwGBs()).isEqualTo(row.algbwGBs() * Coll.of(row.op()).orElseThrow().busFactor(1));
        });
    }

    @Test
    void theCheckCountsElementsARankGotWrong() throws Exception {
        // rank 1's communicator alters 3 elements of every allreduce result it returns
        List<List<PerfReport.Row>> results = ThreadRanks.run(3, r -> comm -> {
            Communicator c = r == 1 ? corrupting(comm) : comm;
            return run(c, List.of(
                    new CollectiveBench.Test(Coll.ALLREDUCE, 4096, DataType.FLOAT32, ReduceOp.SUM, 0, 2, 1),
                    new CollectiveBench.Test(Coll.ALLREDUCE, 4096, DataType.INT8, ReduceOp.AVG, 0, 2, 1)));
        });

        assertThat(results.getFirst()).extracting(PerfReport.Row::wrong).containsExactly(3L, 3L);
    }

    @Test
    void medianTimingIsTheMedianOverCallsOfTheSlowestRank() throws Exception {
        CollectiveBench.Test t = new CollectiveBench.Test(Coll.ALLREDUCE, 65536, DataType.FLOAT32, ReduceOp.SUM, 0, 7, 2);
        List<CollectiveBench.Result[]> out = runAndCombine(t, CollectiveBench.Timing.MEDIAN);
        long[] a = out.get(0)[0].perCallNanos();
        long[] b = out.get(1)[0].perCallNanos();
        assertThat(a).hasSize(7);
        assertThat(b).hasSize(7);
        assertThat(java.util.stream.LongStream.concat(java.util.Arrays.stream(a), java.util.Arrays.stream(b)).min().orElseThrow()).isPositive();
        long[] slowest = new long[7];
        for (int i = 0; i < 7; i++) slowest[i] = Math.max(a[i], b[i]);
        java.util.Arrays.sort(slowest);
        assertThat(out.get(0)[1].timeUs()).isEqualTo(slowest[3] / 1e3);
        assertThat(out.get(0)[1].wrong()).isZero();
        // p50, p99 (nearest rank: the 7th of 7) and max of the slowest rank's times
        assertThat(out.get(0)[1].tailNanos()).containsExactly(slowest[3], slowest[6], slowest[6]);
    }

    /**
     * Mean timing: each rank times its back-to-back calls one by one, and rank 0 reports the largest p50, p99 and max
     * over ranks, as it reports the largest mean.
     */
    @Test
    void meanTimingReportsTheLargestTailsOverRanks() throws Exception {
        CollectiveBench.Test t = new CollectiveBench.Test(Coll.ALLREDUCE, 65536, DataType.FLOAT32, ReduceOp.SUM, 0, 200, 2);
        List<CollectiveBench.Result[]> out = runAndCombine(t, CollectiveBench.Timing.MEAN);
        long[] a = out.get(0)[0].tailNanos();
        long[] b = out.get(1)[0].tailNanos();
        for (long[] q : List.of(a, b)) {
            assertThat(q).hasSize(3);
            assertThat(q[0]).isPositive().isLessThanOrEqualTo(q[1]);
            assertThat(q[1]).isLessThanOrEqualTo(q[2]);
        }
        for (int r = 0; r < 2; r++) {
            // no call took longer than the whole loop, and the mean lies between the fastest call and the longest
            CollectiveBench.Result mine = out.get(r)[0];
            assertThat(mine.tailNanos()[2] / 1e3).isLessThanOrEqualTo(mine.timeUs() * 200 + 1e-6).isGreaterThanOrEqualTo(mine.timeUs() - 1e-6);
        }
        assertThat(out.get(0)[1].tailNanos()).containsExactly(Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.max(a[2], b[2]));
        assertThat(out.get(0)[1].timeUs()).isEqualTo(Math.max(out.get(0)[0].timeUs(), out.get(1)[0].timeUs()));
        assertThat(out.get(0)[1].wrong()).isZero();
    }

    @Test
    void tailsAreNearestRankPercentiles() {
        long[] nanos = new long[200];
        for (int i = 0; i < nanos.length; i++) nanos[i] = (i * 7919L) % 200 + 1; // 1..200, shuffled
        assertThat(CollectiveBench.tails(nanos)).containsExactly(100, 198, 200);
        assertThat(nanos[1]).isEqualTo(7919 % 200 + 1); // not sorted in place
        assertThat(CollectiveBench.tails(new long[] {5})).containsExactly(5, 5, 5);
    }

    @Test
    void uncheckedRowsSayNotChecked() throws Exception {
        List<List<PerfReport.Row>> results = ThreadRanks.run(2, r -> comm -> CollectiveSweep.run(comm,
                List.of(new CollectiveBench.Test(Coll.ALLTOALL, 4096, DataType.FLOAT32, ReduceOp.SUM, 0, 3, 1)), 0, false, "auto",
                r == 0 ? new PerfReport(PerfReport.Format.CSV, new Captured().out) : null, new Captured().err));

        assertThat(results.getFirst()).singleElement().satisfies(row -> assertThat(row.wrong()).isEqualTo(-1));
    }

    @Test
    void rankZeroPrintsTheCsvHeaderRowsAndProgressAfterAJitWarmUp() throws Exception {
        Captured io = new Captured();
        ThreadRanks.run(2, r -> comm -> CollectiveSweep.run(comm,
                List.of(new CollectiveBench.Test(Coll.REDUCESCATTER, 4096, DataType.BFLOAT16, ReduceOp.MIN, 0, 3, 1),
                        new CollectiveBench.Test(Coll.REDUCESCATTER, 8192, DataType.BFLOAT16, ReduceOp.MIN, 0, 3, 1)),
                5, true, "ring", r == 0 ? new PerfReport(PerfReport.Format.CSV, io.out) : null, r == 0 ? io.err : null));

        assertThat(io.outLines()).hasSize(3);
        assertThat(io.outLines().getFirst()).isEqualTo("op,algo,ranks,bytes,count,dtype,redop,root,time_us,algbw_gbs,busbw_gbs,wrong");
        assertThat(io.outLines().get(1)).matches("reducescatter,ring,2,4096,1024,bfloat16,min,-1,[0-9.]+,[0-9.]+,[0-9.]+,0");
        assertThat(io.outLines().get(2)).matches("reducescatter,ring,2,8192,2048,bfloat16,min,-1,[0-9.]+,[0-9.]+,[0-9.]+,0");
        assertThat(io.errLines()).hasSize(7);
        assertThat(io.errLines().subList(0, 3)).containsExactly("# JIT warm-up: 330 calls of reducescatter 4 KiB",
                "# JIT warm-up: 5 calls of reducescatter 8 KiB", "# reducescatter 4 KiB bfloat16 min: 1 warmup + 3 iters");
        String tails = "# reducescatter %s: per call p50 [0-9.]+ us, p99 [0-9.]+ us, max [0-9.]+ us \\(back to back; the largest over ranks\\)";
        assertThat(io.errLines().get(3)).matches(tails.formatted("4 KiB"));
        assertThat(io.errLines().get(4)).isEqualTo("# reducescatter 8 KiB bfloat16 min: 1 warmup + 3 iters");
        assertThat(io.errLines().get(5)).matches(tails.formatted("8 KiB"));
        // 330 + 5 (one round: no budget) JIT warm-up calls, 1 + 1 of the sizes, 3 + 3 timed, 1 + 1 checks
        assertThat(io.errLines().get(6)).isEqualTo("# rank 0 called reducescatter 345 times: 6 timed, 337 warm-up, 2 checks");
    }

    /** Every rank of 2 runs {@code t} timed as {@code timing}; per rank: its own result, then what {@code combine} gave it. */
    private static List<CollectiveBench.Result[]> runAndCombine(CollectiveBench.Test t, CollectiveBench.Timing timing) throws Exception {
        return ThreadRanks.run(2, r -> comm -> {
            CollectiveBench.Result mine = CollectiveBench.run(comm, t, true, timing);
            return new CollectiveBench.Result[] {mine, CollectiveBench.combine(comm, mine)};
        });
    }

    private static List<PerfReport.Row> run(Communicator comm, List<CollectiveBench.Test> plan) {
        Captured io = new Captured();
        return CollectiveSweep.run(comm, plan, 0, true, "auto",
                comm.rank() == 0 ? new PerfReport(PerfReport.Format.TABLE, io.out) : null, io.err);
    }

    /** {@code comm}, except that allReduce flips 3 elements of its result. */
    private static Communicator corrupting(Communicator comm) {
        return (Communicator) Proxy.newProxyInstance(Communicator.class.getClassLoader(), new Class<?>[] {Communicator.class},
                (proxy, method, args) -> {
                    Object result;
                    try {
                        result = method.invoke(comm, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                    if (method.getName().equals("allReduce") && args.length == 5) {
                        MemorySegment recv = (MemorySegment) args[1];
                        int es = ((DataType) args[3]).byteSize();
                        for (long i : new long[] {0, 7, (Long) args[2] - 1}) {
                            CheckValues.setBits(recv, es, i, ~CheckValues.getBits(recv, es, i));
                        }
                    }
                    return result;
                });
    }
}
