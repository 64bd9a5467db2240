package io.hcomm4j.spark;

import java.io.Serializable;
import java.util.List;

/**
 * One partition's share of a training step for {@link SparkHcomm#train}: the gradient of the loss summed over the
 * partition's rows. The loop sums these over all partitions and divides by the number of rows, so every step descends
 * the mean loss over the whole data set, as one process holding all rows would.
 *
 * @param <T> the type of the rows
 */
@FunctionalInterface
public interface GradientStep<T> extends Serializable {
    /**
     * @param rows       this partition's rows (the same list at every step)
     * @param parameters the current parameters, the same on every rank; do not change them
     * @param gradient   zeros on entry: add the gradient of the loss of every row into it
     * @return the loss summed over {@code rows}
     */
    double accumulate(List<T> rows, float[] parameters, float[] gradient);
}
