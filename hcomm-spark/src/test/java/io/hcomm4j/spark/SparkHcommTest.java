package io.hcomm4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.ReduceOp;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/** Barrier stages of 4 tasks in this JVM become communicators of 4 ranks, each task in its own session. */
class SparkHcommTest {
    private static final int COUNT = 10_000;

    private static SparkContext sc() {
        return TestSpark.session().sparkContext();
    }

    private static RDD<Integer> rows(int partitions) {
        return JavaSparkContext.fromSparkContext(sc())
                .parallelize(IntStream.range(0, 400).boxed().toList(), partitions).rdd();
    }

    @Test
    void fourPartitionsAllReduceAndEveryRankChecksEveryElement() {
        try (SparkHcomm hcomm = SparkHcomm.start(sc())) {
            assertAllReduceChecked(hcomm, 11);
        }
    }

    @Test
    void storeOnPartitionZeroWorksTheSame() {
        try (SparkHcomm hcomm = SparkHcomm.builder(sc()).storeOnPartitionZero().start()) {
            assertAllReduceChecked(hcomm, 12);
        }
    }

    @Test
    void helpersAllReduceEachPartitionsVectorOfADataFrame() {
        SparkSession spark = TestSpark.session();
        Dataset<Row> df = LogisticRegressionExample.data(spark, 7, 4);
        List<Row> all = LogisticRegressionExample.rows(7);
        try (SparkHcomm hcomm = SparkHcomm.start(sc())) {
            // per partition: row count, label count, and (as doubles) the sums of every feature
            float[] counts = hcomm.allReduceFloats(df.rdd(), (rank, rows) -> {
                float[] c = new float[2];
                rows.forEachRemaining(r -> {
                    c[0]++;
                    c[1] += (float) r.getDouble(LogisticRegressionExample.FEATURES);
                });
                return c;
            }, ReduceOp.SUM);
            double[] sums = hcomm.allReduceDoubles(df.rdd(), (rank, rows) -> {
                double[] v = new double[LogisticRegressionExample.FEATURES];
                rows.forEachRemaining(r -> {
                    for (int i = 0; i < v.length; i++) v[i] += r.getDouble(i);
                });
                return v;
            }, ReduceOp.SUM);
            double[] max = hcomm.allReduceDoubles(df.rdd(), (rank, rows) -> new double[] {rank.rank(), -rank.rank()}, ReduceOp.MAX);
            long labels = all.stream().filter(r -> r.getDouble(LogisticRegressionExample.FEATURES) == 1).count();
            assertThat(counts).containsExactly(all.size(), labels);
            for (int i = 0; i < LogisticRegressionExample.FEATURES; i++) {
                int f = i;
                double expected = all.stream().mapToDouble(r -> r.getDouble(f)).sum(); // another order: rounding apart
                assertThat(sums[i]).as("sum of feature %d", i).isCloseTo(expected, org.assertj.core.data.Offset.offset(1e-9));
            }
            assertThat(max).containsExactly(3, 0);
        }
    }

    @Test
    void vectorsOfDifferentLengthsFailNamingEachRanksLength() {
        try (SparkHcomm hcomm = SparkHcomm.start(sc())) {
            // every attempt of the stage fails alike (Spark tries it spark.stage.maxConsecutiveAttempts times)
            assertThatThrownBy(() -> hcomm.allReduceFloats(rows(4), (rank, rows) -> new float[rank.rank() == 2 ? 3 : 4], ReduceOp.SUM))
                    .hasMessageContaining("4 elements on rank 0, 4 elements on rank 1, 3 elements on rank 2, 4 elements on rank 3");
        }
    }

    /** Ranks of a stage to be cancelled that have reached their blocking call (the tasks run in this JVM: local mode). */
    private static volatile java.util.concurrent.CountDownLatch blocked;
    /** While set, rank 3 of {@link #aCancelledStageInterruptsTasksWaitingInInit} holds back from init. */
    private static volatile boolean holdRank3;

    @Test
    void aCancelledStageAbortsTheCommunicatorsOfItsBlockedTasks() throws Exception {
        try (SparkHcomm hcomm = SparkHcomm.start(sc())) {
            // ranks 0-2 all-reduce, rank 3 waits for a message nobody sends
            assertCancelledPromptly(hcomm, (rank, rows) -> {
                blocked.countDown();
                if (rank.rank() == 3) rank.world().recv(new float[1], 0, 99);
                else rank.world().allReduce(new float[1], ReduceOp.SUM);
                return "not reached";
            });
        }
        SparkLeakTest.awaitNoHcommThreads();
    }

    @Test
    void aCancelledStageInterruptsTasksWaitingInInit() throws Exception {
        // rank 3 never reaches init (its settings are held up until its task is killed): ranks 0-2 wait in init for it
        SparkHcomm.Builder b = SparkHcomm.builder(sc()).configure(c -> {
            BarrierTaskContext ctx = BarrierTaskContext.get();
            blocked.countDown();
            while (ctx.partitionId() == 3 && holdRank3) {
                ctx.killTaskIfInterrupted();
                java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
            }
            return c;
        });
        holdRank3 = true;
        try (SparkHcomm hcomm = b.start()) {
            assertCancelledPromptly(hcomm, (rank, rows) -> "not reached");
        }
        // the store's threads that served the interrupted inits' waits end with the store at the latest
        SparkLeakTest.awaitNoHcommThreads();
    }

    /**
     * Runs {@code task}, whose ranks block for good, and cancels its job once all 4 are in: Spark does not interrupt
     * task threads (interruptOnCancel false), so only the kill's abort (or, in init, interrupt) ends them. The stage
     * must end well before HCOMM_INIT_TIMEOUT or HCOMM_TIMEOUT (2 and 5 minutes), leave no session thread, and the
     * next stage on the same handle (on the same, reused task threads) must run.
     */
    private static void assertCancelledPromptly(SparkHcomm hcomm, RankTask<Integer, String> task) throws Exception {
        SparkContext sc = sc();
        blocked = new java.util.concurrent.CountDownLatch(4);
        sc.setJobGroup("cancelled", "ranks that wait on each other for good", false);
        Thread canceller = Thread.ofVirtual().start(() -> {
            try {
                blocked.await();
                Thread.sleep(200); // into their waits
            } catch (InterruptedException e) {
                return;
            }
            sc.cancelJobGroup("cancelled");
        });
        long start = System.nanoTime();
        try {
            assertThatThrownBy(() -> hcomm.run(rows(4), task)).hasMessageContaining("cancelled");
        } finally {
            canceller.join();
            sc.clearJobGroup();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("a cancelled barrier stage ended %.1f s after it started%n", seconds);
        assertThat(seconds).isLessThan(30);
        // the tasks' sessions are gone; the handle's store serves on (and a connection whose client was interrupted in
        // init waits there until that wait's deadline: the server reads nothing from it meanwhile)
        SparkLeakTest.awaitNoHcommThreads("hcomm-store-");
        blocked = new java.util.concurrent.CountDownLatch(0);
        holdRank3 = false;
        assertAllReduceChecked(hcomm, 13);
    }

    @Test
    void badArgumentsFailOnTheDriverNamingThem() {
        try (SparkHcomm hcomm = SparkHcomm.start(sc())) {
            assertThatThrownBy(() -> hcomm.run(null, (rank, rows) -> 1)).isInstanceOf(NullPointerException.class).hasMessage("data");
            assertThatThrownBy(() -> hcomm.run(rows(2), null)).isInstanceOf(NullPointerException.class).hasMessage("task");
            assertThatThrownBy(() -> hcomm.allReduceFloats(rows(2), (rank, rows) -> new float[1], null))
                    .isInstanceOf(NullPointerException.class).hasMessage("op");
            assertThatThrownBy(() -> hcomm.train(rows(2), new float[1], -1, (rows, p, g) -> 0, ParameterUpdate.sgd(0.1f)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("steps").hasMessageContaining("-1");
            assertThatThrownBy(() -> hcomm.train(rows(2), new float[0], 1, (rows, p, g) -> 0, ParameterUpdate.sgd(0.1f)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("initial");
            assertThatThrownBy(() -> ParameterUpdate.sgd(Float.NaN)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("learningRate");
            hcomm.close();
            assertThatThrownBy(() -> hcomm.run(rows(2), (rank, rows) -> 1)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
        }
        assertThatThrownBy(() -> SparkHcomm.builder(sc()).storePort(70000)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("storePort").hasMessageContaining("70000");
        assertThatThrownBy(() -> SparkHcomm.builder(sc()).storePort(1234).storeOnPartitionZero().start())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("storePort");
        assertThatThrownBy(() -> SparkHcomm.builder(null)).isInstanceOf(NullPointerException.class).hasMessage("sc");
    }

    static void assertAllReduceChecked(SparkHcomm hcomm, long seed) {
        List<String> reports = hcomm.run(rows(4), (rank, rows) -> {
            int n = 0;
            while (rows.hasNext()) {
                int v = rows.next();
                if (v / 100 != rank.rank()) return "rank " + rank.rank() + " got row " + v + " of another partition";
                n++;
            }
            float[] expected = new float[COUNT];
            for (int r = 0; r < rank.size(); r++) {
                float[] d = data(seed, r);
                for (int i = 0; i < COUNT; i++) expected[i] += d[i];
            }
            float[] mine = data(seed, rank.rank());
            rank.world().allReduce(mine, ReduceOp.SUM);
            int wrong = 0;
            for (int i = 0; i < COUNT; i++) if (Float.floatToIntBits(mine[i]) != Float.floatToIntBits(expected[i])) wrong++;
            return "rank " + rank.rank() + "/" + rank.size() + " rows " + n + " wrong " + wrong;
        });
        List<String> want = new ArrayList<>();
        for (int r = 0; r < 4; r++) want.add("rank " + r + "/4 rows 100 wrong 0");
        assertThat(reports).containsExactlyElementsOf(want);
    }

    /** Small integers as floats: their sums are exact in any order, so every element has one right answer. */
    static float[] data(long seed, int rank) {
        Random rnd = new Random(seed * 1000 + rank);
        float[] a = new float[COUNT];
        for (int i = 0; i < COUNT; i++) a[i] = rnd.nextInt(2001) - 1000;
        return a;
    }
}
