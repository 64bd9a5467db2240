package io.hcomm4j.spark;

import io.hcomm4j.Communicator;
import io.hcomm4j.ReduceOp;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

/**
 * The task of {@link SparkHcomm#train}: full-batch gradient descent where each rank holds its partition's rows and
 * every step sums the partitions' gradients and losses with two all-reduces. The ranks apply the same update to the
 * same bits, so their parameters never diverge and never need to be sent.
 */
final class TrainingLoop<T> implements RankTask<T, TrainingResult> {
    private static final long serialVersionUID = 1L;
    private final float[] initial;
    private final int steps;
    private final GradientStep<T> gradientStep;
    private final ParameterUpdate update;

    TrainingLoop(float[] initial, int steps, GradientStep<T> gradientStep, ParameterUpdate update) {
        this.initial = initial;
        this.steps = steps;
        this.gradientStep = gradientStep;
        this.update = update;
    }

    @Override
    public TrainingResult run(SparkRank rank, Iterator<T> rows) {
        List<T> local = new ArrayList<>();
        rows.forEachRemaining(local::add);
        Communicator world = rank.world();
        float[] parameters = initial.clone();
        float[] gradient = new float[parameters.length];
        double[] lossAndRows = new double[2];
        double[] losses = new double[steps];
        for (int step = 0; step < steps; step++) {
            Arrays.fill(gradient, 0f);
            lossAndRows[0] = gradientStep.accumulate(local, parameters, gradient);
            lossAndRows[1] = local.size();
            world.allReduce(gradient, ReduceOp.SUM);
            world.allReduce(lossAndRows, ReduceOp.SUM);
            if (lossAndRows[1] == 0) throw new IllegalStateException("no partition has rows to train on (rank " + rank.rank() + ")");
            float perRow = (float) (1.0 / lossAndRows[1]);
            for (int i = 0; i < gradient.length; i++) gradient[i] *= perRow;
            losses[step] = lossAndRows[0] / lossAndRows[1];
            update.apply(step, parameters, gradient);
        }
        return rank.rank() == 0 ? new TrainingResult(parameters, losses, rank.stageAttempt()) : null;
    }
}
