package io.hcomm4j.spark;

import java.io.Serializable;

/**
 * What {@link SparkHcomm#train} returns: the trained parameters (every rank ends with these exact bits), the mean loss
 * over all rows at each step (before that step's update), and the attempt of the barrier stage that produced them (0
 * unless Spark retried the stage).
 *
 * @param parameters   the parameters after the last step
 * @param losses       {@code losses[s]}: the mean loss over all rows at step {@code s}, before its update
 * @param stageAttempt the attempt number of the stage that trained
 */
public record TrainingResult(float[] parameters, double[] losses, int stageAttempt) implements Serializable {
    /** The mean loss at the last step, or NaN after zero steps. */
    public double finalLoss() {
        return losses.length == 0 ? Double.NaN : losses[losses.length - 1];
    }
}
