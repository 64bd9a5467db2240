package io.hcomm4j.spark;

import io.hcomm4j.ReduceOp;
import io.hcomm4j.StoreServer;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import org.apache.spark.HashPartitioner;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.rdd.RDD;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The driver's handle on HComm4J for a Spark application: the tasks of a barrier stage become the ranks of one
 * communicator (rank = partition id, size = number of partitions), every task in a session of its own, several per
 * executor JVM if the executor runs several tasks.
 *
 * <pre>{@code
 * try (SparkHcomm hcomm = SparkHcomm.start(spark.sparkContext())) {     // serves the store on the driver
 *     float[] sum = hcomm.allReduceFloats(df.rdd(), (rank, rows) -> gradients(rows), ReduceOp.SUM);
 *     List<Long> counts = hcomm.run(df.rdd(), (rank, rows) -> {
 *         long n = 0;
 *         while (rows.hasNext()) { rows.next(); n++; }
 *         long[] total = {n};
 *         rank.world().allReduce(total, ReduceOp.SUM);              // any collective, between the tasks
 *         return total[0];
 *     });
 * }
 * }</pre>
 *
 * <p><b>The store.</b> By default the driver serves the job's store, from {@link #start} until {@link #close}, so it
 * outlives every task and every attempt of a stage; {@link Builder#storeOnPartitionZero()} has partition 0 serve a store
 * for each stage attempt instead, announced to the others with {@code BarrierTaskContext.allGather} (for drivers the
 * executors cannot reach). Every stage attempt uses its own store scope ({@code spark/stage-<id>.<attempt>}), so a retried
 * stage never meets what its previous attempt left behind. The job secret is made here, at random, and reaches the tasks
 * inside the task closure (a broadcast block), not through the Spark configuration, local properties, logs or UI: turn
 * on {@code spark.network.crypto.enabled} (with {@code spark.authenticate}) where the network between driver and
 * executors must not see it.
 *
 * <p><b>Failures.</b> Each stage runs as a barrier stage followed by a shuffle to the driver's results, so the barrier
 * stage is a shuffle-map stage: if any task fails (its body throws, its executor dies), Spark kills the stage's other
 * tasks, whose communicators are aborted at once, and runs the whole stage again as the next attempt, with fresh
 * sessions, up to {@code spark.stage.maxConsecutiveAttempts} (4) times. A task's own retries
 * ({@code spark.task.maxFailures}; the {@code F} of {@code local[N,F]}) must allow at least 2, or the first failure fails
 * the job. A barrier stage needs a free task slot for each of its partitions.
 */
public final class SparkHcomm implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SparkHcomm.class);

    private final SparkContext sc;
    private final StoreServer store;
    private final TaskSpec spec;
    private volatile boolean closed;

    private SparkHcomm(SparkContext sc, StoreServer store, TaskSpec spec) {
        this.sc = sc;
        this.store = store;
        this.spec = spec;
    }

    /**
     * Starts serving the store on the driver (on {@code spark.driver.bindAddress}, a free port, reached by the executors
     * at {@code spark.driver.host}) with a new random secret.
     *
     * @param sc the application's context (of the driver)
     * @return the handle; close it when the application no longer runs barrier stages through it
     */
    public static SparkHcomm start(SparkContext sc) {
        return builder(sc).start();
    }

    /**
     * A builder, for a store on partition 0, a fixed store port or task settings.
     *
     * @param sc the application's context (of the driver)
     * @return the builder
     */
    public static Builder builder(SparkContext sc) {
        return new Builder(Objects.requireNonNull(sc, "sc"));
    }

    /**
     * Runs {@code task} on every partition of {@code data} as one barrier stage: each task is a rank of one communicator.
     * Blocks until the stage (and any retry of it) has finished.
     *
     * @param data the partitions, one rank each ({@code dataset.rdd()}, {@code javaRdd.rdd()})
     * @param task the body of every rank
     * @param <T>  the type of the rows
     * @param <R>  the type of the results
     * @return every rank's result, in rank order (null where a rank returned null)
     */
    public <T, R> List<R> run(RDD<T> data, RankTask<T, R> task) {
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(task, "task");
        checkOpen();
        int n = data.getNumPartitions();
        if (n < 1) throw new IllegalArgumentException("data has no partitions: a barrier stage needs at least one task");
        ClassTag<Integer> intTag = tag(Integer.class);
        ClassTag<R> anyTag = tag(Object.class);
        RDD<Tuple2<Integer, R>> ranked = data.barrier().mapPartitions(new BarrierFunction<>(spec, task), false, tag(Tuple2.class));
        // The shuffle makes the barrier stage a shuffle-map stage, which Spark retries whole; a failed barrier result
        // stage it would abort instead.
        List<Tuple2<Integer, R>> out = JavaPairRDD.fromRDD(ranked, intTag, anyTag).partitionBy(new HashPartitioner(1)).collect();
        List<R> byRank = new ArrayList<>(java.util.Collections.nCopies(n, (R) null));
        for (Tuple2<Integer, R> t : out) byRank.set(t._1(), t._2());
        return byRank;
    }

    /**
     * All-reduces one {@code float[]} per partition (e.g. the gradients of a DataFrame partition's rows): every rank
     * computes its vector, the ranks all-reduce them (bit-identical on every rank), and rank 0's copy comes back.
     *
     * @param data         the partitions
     * @param perPartition computes a partition's vector; every partition's must have the same length
     * @param op           the reduction
     * @param <T>          the type of the rows
     * @return the reduced vector; if a partition returns null or a vector of another length, every attempt of the stage
     *         fails and so does this call, with Spark's {@code SparkException} naming each rank's length
     */
    public <T> float[] allReduceFloats(RDD<T> data, RankTask<T, float[]> perPartition, ReduceOp op) {
        return vector(data, perPartition, op, float[].class);
    }

    /**
     * As {@link #allReduceFloats}, for one {@code double[]} per partition.
     *
     * @param data         the partitions
     * @param perPartition computes a partition's vector; every partition's must have the same length
     * @param op           the reduction
     * @param <T>          the type of the rows
     * @return the reduced vector
     */
    public <T> double[] allReduceDoubles(RDD<T> data, RankTask<T, double[]> perPartition, ReduceOp op) {
        return vector(data, perPartition, op, double[].class);
    }

    private <T, V> V vector(RDD<T> data, RankTask<T, V> perPartition, ReduceOp op, Class<V> type) {
        Objects.requireNonNull(perPartition, "perPartition");
        Objects.requireNonNull(op, "op");
        return run(data, new VectorAllReduce<>(perPartition, op, type)).get(0);
    }

    /**
     * A training loop over the partitions of {@code data}, one barrier stage: each rank keeps its partition's rows in
     * memory and, at every step, computes their gradient and loss ({@code gradientStep}); the ranks sum gradients,
     * losses and row counts with all-reduces, divide by the rows, and each applies {@code update} to the same bits. The
     * parameters are thus those of full-batch training on all rows in one process, up to the order of the float sums.
     * An RDD whose iterator reuses its row objects (Hadoop input formats) must copy them first (a {@code map}).
     *
     * @param data         the training rows, one rank per partition ({@code dataFrame.rdd()} for a DataFrame)
     * @param initial      the initial parameters (not changed; every rank starts from these)
     * @param steps        the number of steps, at least 0
     * @param gradientStep a partition's summed gradient and loss
     * @param update       the optimizer, e.g. {@link ParameterUpdate#sgd(float)}
     * @param <T>          the type of the rows
     * @return the parameters, the mean loss of every step, and the stage attempt that trained
     */
    public <T> TrainingResult train(RDD<T> data, float[] initial, int steps, GradientStep<T> gradientStep, ParameterUpdate update) {
        Objects.requireNonNull(initial, "initial");
        Objects.requireNonNull(gradientStep, "gradientStep");
        Objects.requireNonNull(update, "update");
        if (steps < 0) throw new IllegalArgumentException("steps must be >= 0, was " + steps);
        if (initial.length == 0) throw new IllegalArgumentException("initial has no parameters");
        return run(data, new TrainingLoop<>(Arrays.copyOf(initial, initial.length), steps, gradientStep, update)).get(0);
    }

    /** Stops the driver's store (stages still running lose it). Idempotent. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (store != null) store.close();
    }

    @Override
    public String toString() {
        return "SparkHcomm{store=" + (spec.storeMethod != null ? spec.storeMethod : "partition 0 of each stage") + (closed ? ", closed" : "") + "}";
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("this SparkHcomm is closed");
        if (sc.isStopped()) throw new IllegalStateException("the SparkContext is stopped");
    }

    @SuppressWarnings("unchecked")
    private static <X> ClassTag<X> tag(Class<?> c) {
        return (ClassTag<X>) ClassTag$.MODULE$.apply(c);
    }

    /** Options of {@link SparkHcomm}; {@link #start()} makes the handle. */
    public static final class Builder {
        private final SparkContext sc;
        private boolean partitionZero;
        private int storePort;
        private TaskConfigurer configurer;

        private Builder(SparkContext sc) {
            this.sc = sc;
        }

        /**
         * Partition 0 serves a store for each stage attempt (on its executor, a free port) and tells the other tasks
         * where with {@code allGather}; the driver serves none. For drivers that the executors cannot reach.
         *
         * @return this builder
         */
        public Builder storeOnPartitionZero() {
            this.partitionZero = true;
            return this;
        }

        /**
         * The driver's store listens on this port instead of a free one (e.g. one a firewall lets through).
         *
         * @param port 1 to 65535, or 0 for a free port (the default)
         * @return this builder
         */
        public Builder storePort(int port) {
            if (port < 0 || port > 65535) throw new IllegalArgumentException("storePort must be in [0, 65535], was " + port);
            this.storePort = port;
            return this;
        }

        /**
         * Adjusts every task's {@link io.hcomm4j.CommConfig} (timeouts, transport, memory); see {@link TaskConfigurer}.
         *
         * @param configurer applied on the executors to each task's settings
         * @return this builder
         */
        public Builder configure(TaskConfigurer configurer) {
            this.configurer = Objects.requireNonNull(configurer, "configurer");
            return this;
        }

        /**
         * Makes the secret and, unless partition 0 serves it, starts the driver's store.
         *
         * @return the handle
         * @throws io.hcomm4j.HcommException the store cannot listen on the driver's bind address and port
         */
        public SparkHcomm start() {
            if (sc.isStopped()) throw new IllegalStateException("the SparkContext is stopped");
            byte[] key = new byte[24];
            new SecureRandom().nextBytes(key);
            String secret = HexFormat.of().formatHex(key);
            if (partitionZero) {
                if (storePort != 0) throw new IllegalStateException("storePort is for the driver's store; partition 0 picks a free port");
                return new SparkHcomm(sc, null, new TaskSpec(null, secret, configurer));
            }
            SparkConf conf = sc.getConf();
            String host = conf.get("spark.driver.host");
            String bind = conf.get("spark.driver.bindAddress", host);
            StoreServer store = StoreServer.start(new InetSocketAddress(bind, storePort), secret);
            String method = store.initMethod(host);
            LOG.info("serving the store of HComm4J barrier stages at {}", method);
            return new SparkHcomm(sc, store, new TaskSpec(method, secret, configurer));
        }
    }
}
