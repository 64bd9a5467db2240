package io.hcomm4j.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Logistic regression on a DataFrame, trained by the tasks of one barrier stage ({@link SparkHcomm#train}): each task
 * computes its partition's gradient, the tasks all-reduce, every task takes the same step. {@code main} runs it on
 * {@code local[4,2]} (4 ranks in this JVM), prints the loss as it falls and compares the parameters with the same
 * training in one process; {@code SparkTrainingTest} checks the same things.
 */
public final class LogisticRegressionExample {
    static final int FEATURES = 8;
    static final int ROWS = 2000;
    static final int STEPS = 150;
    static final float LEARNING_RATE = 0.5f;
    /** The mean loss after {@link #STEPS} steps must be below this (it starts at ln 2 = 0.693). */
    static final double LOSS_BOUND = 0.40;
    /** Largest difference allowed between a parameter trained on 4 ranks and in one process: float rounding only. */
    static final double TOLERANCE = 1e-6;
    static final GradientStep<Row> GRADIENT = LogisticRegressionExample::gradient;

    private LogisticRegressionExample() {
    }

    public static void main(String[] args) {
        SparkSession spark = SparkSession.builder().master("local[4,2]").appName("hcomm-logistic-regression")
                .config("spark.ui.enabled", "false").getOrCreate();
        try (SparkHcomm hcomm = SparkHcomm.start(spark.sparkContext())) {
            Dataset<Row> df = data(spark, 42, 4);
            TrainingResult r = train(hcomm, df);
            for (int s = 0; s < STEPS; s += 25) System.out.printf("step %3d  loss %.5f%n", s, r.losses()[s]);
            System.out.printf("step %3d  loss %.5f (bound %.2f)%n", STEPS - 1, r.finalLoss(), LOSS_BOUND);
            TrainingResult one = trainInOneProcess(rows(42));
            System.out.printf("largest difference to one process: %.3g (tolerance %.0g)%n",
                    maxDifference(r.parameters(), one.parameters()), TOLERANCE);
            boolean ok = r.finalLoss() < LOSS_BOUND && maxDifference(r.parameters(), one.parameters()) <= TOLERANCE;
            System.out.println(ok ? "OK" : "FAILED");
            if (!ok) System.exit(1);
        } finally {
            spark.stop();
        }
    }

    /** Trains on {@code df}'s rows (one rank per partition) from zero parameters. */
    static TrainingResult train(SparkHcomm hcomm, Dataset<Row> df) {
        return hcomm.train(df.rdd(), new float[FEATURES + 1], STEPS, GRADIENT, ParameterUpdate.sgd(LEARNING_RATE));
    }

    /** The same steps on every row in one process: the reference the distributed run must equal up to rounding. */
    static TrainingResult trainInOneProcess(List<Row> rows) {
        float[] w = new float[FEATURES + 1];
        float[] g = new float[w.length];
        double[] losses = new double[STEPS];
        ParameterUpdate sgd = ParameterUpdate.sgd(LEARNING_RATE);
        for (int s = 0; s < STEPS; s++) {
            Arrays.fill(g, 0f);
            losses[s] = gradient(rows, w, g) / rows.size();
            float perRow = (float) (1.0 / rows.size());
            for (int i = 0; i < g.length; i++) g[i] *= perRow;
            sgd.apply(s, w, g);
        }
        return new TrainingResult(w, losses, 0);
    }

    /** Log loss summed over {@code rows} and its gradient added into {@code g}; {@code w[FEATURES]} is the bias. */
    static double gradient(List<Row> rows, float[] w, float[] g) {
        double loss = 0;
        for (Row row : rows) {
            float z = w[FEATURES];
            for (int i = 0; i < FEATURES; i++) z += w[i] * (float) row.getDouble(i);
            float p = (float) (1 / (1 + Math.exp(-z)));
            float y = (float) row.getDouble(FEATURES);
            loss -= y == 1 ? Math.log(Math.max(p, 1e-7)) : Math.log(Math.max(1 - p, 1e-7));
            float err = p - y;
            for (int i = 0; i < FEATURES; i++) g[i] += err * (float) row.getDouble(i);
            g[FEATURES] += err;
        }
        return loss;
    }

    /** Seeded rows: features from N(0, 1), the label drawn from a logistic model with seeded weights. */
    static List<Row> rows(long seed) {
        Random rnd = new Random(seed);
        double[] truth = new double[FEATURES + 1];
        for (int i = 0; i < truth.length; i++) truth[i] = rnd.nextGaussian();
        List<Row> rows = new ArrayList<>(ROWS);
        for (int r = 0; r < ROWS; r++) {
            Object[] v = new Object[FEATURES + 1];
            double z = truth[FEATURES];
            for (int i = 0; i < FEATURES; i++) {
                double x = rnd.nextGaussian();
                v[i] = x;
                z += truth[i] * x;
            }
            v[FEATURES] = rnd.nextDouble() < 1 / (1 + Math.exp(-z)) ? 1.0 : 0.0;
            rows.add(RowFactory.create(v));
        }
        return rows;
    }

    /** {@link #rows} as a DataFrame of {@code partitions} partitions (in order: partition p holds the p-th slice). */
    static Dataset<Row> data(SparkSession spark, long seed, int partitions) {
        List<StructField> fields = new ArrayList<>();
        for (int i = 0; i < FEATURES; i++) fields.add(DataTypes.createStructField("x" + i, DataTypes.DoubleType, false));
        fields.add(DataTypes.createStructField("label", DataTypes.DoubleType, false));
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        return spark.createDataFrame(jsc.parallelize(rows(seed), partitions), new StructType(fields.toArray(StructField[]::new)));
    }

    static double maxDifference(float[] a, float[] b) {
        double max = 0;
        for (int i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
        return max;
    }
}
