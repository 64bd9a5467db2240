package io.hcomm4j.spark;

import static io.hcomm4j.spark.LogisticRegressionExample.STEPS;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/**
 * The DataFrame-fed logistic regression of {@link LogisticRegressionExample} on 4 barrier tasks: it trains to its loss
 * bound, equals one process up to float rounding, and survives a task that throws mid-training (the stage's second
 * attempt trains from the start and gives the first attempt's would-be result bit for bit).
 */
class SparkTrainingTest {
    private static final long SEED = 42;

    @Test
    void trainsToTheBoundAndEqualsOneProcess() {
        SparkSession spark = TestSpark.session();
        try (SparkHcomm hcomm = SparkHcomm.start(spark.sparkContext())) {
            TrainingResult r = LogisticRegressionExample.train(hcomm, LogisticRegressionExample.data(spark, SEED, 4));
            TrainingResult one = LogisticRegressionExample.trainInOneProcess(LogisticRegressionExample.rows(SEED));
            double diff = LogisticRegressionExample.maxDifference(r.parameters(), one.parameters());
            System.out.printf("logistic regression on 4 ranks: loss %.5f -> %.5f (bound %.2f), one process %.5f, "
                    + "largest parameter difference %.3g%n", r.losses()[0], r.finalLoss(), LogisticRegressionExample.LOSS_BOUND,
                    one.finalLoss(), diff);
            assertThat(r.stageAttempt()).isZero();
            assertThat(r.losses()).hasSize(STEPS);
            assertThat(r.losses()[0]).isCloseTo(Math.log(2), org.assertj.core.data.Offset.offset(1e-9));
            assertThat(r.finalLoss()).isLessThan(LogisticRegressionExample.LOSS_BOUND);
            for (int s = 0; s < STEPS; s++) {
                assertThat(r.losses()[s]).as("loss at step %d", s).isCloseTo(one.losses()[s], org.assertj.core.data.Offset.offset(1e-6));
            }
            assertThat(diff).isLessThanOrEqualTo(LogisticRegressionExample.TOLERANCE);
        }
    }

    @Test
    void aTaskThatThrowsMidTrainingMakesTheStageRetryAndTheRetryTrainsRight() {
        SparkSession spark = TestSpark.session();
        Dataset<Row> df = LogisticRegressionExample.data(spark, SEED, 4);
        try (SparkHcomm hcomm = SparkHcomm.start(spark.sparkContext())) {
            TrainingResult clean = LogisticRegressionExample.train(hcomm, df);
            long start = System.nanoTime();
            TrainingResult retried = hcomm.train(df.rdd(), new float[LogisticRegressionExample.FEATURES + 1], STEPS,
                    new FailingOnce(), ParameterUpdate.sgd(LogisticRegressionExample.LEARNING_RATE));
            System.out.printf("a task threw at step 5 of attempt 0; attempt %d trained to loss %.5f; %.1f s in all%n",
                    retried.stageAttempt(), retried.finalLoss(), (System.nanoTime() - start) / 1e9);
            assertThat(retried.stageAttempt()).isEqualTo(1);
            assertThat(retried.parameters()).containsExactly(clean.parameters());
            assertThat(retried.losses()).containsExactly(clean.losses());
        }
    }

    /** The example's gradient, except that rank 2 throws at its 6th step in the stage's first attempt. */
    private static final class FailingOnce implements GradientStep<Row> {
        private int calls; // each task has its own copy of this object (deserialized from the stage's closure)

        @Override
        public double accumulate(List<Row> rows, float[] parameters, float[] gradient) {
            BarrierTaskContext ctx = BarrierTaskContext.get();
            if (ctx.stageAttemptNumber() == 0 && ctx.partitionId() == 2 && calls++ == 5) {
                throw new IllegalStateException("injected failure of rank 2 at step 5");
            }
            return LogisticRegressionExample.gradient(rows, parameters, gradient);
        }
    }
}
