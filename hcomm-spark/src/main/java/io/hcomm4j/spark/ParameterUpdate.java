package io.hcomm4j.spark;

import java.io.Serializable;

/**
 * The optimizer of {@link SparkHcomm#train}: updates the parameters in place from the mean gradient. Every rank runs it
 * on bit-identical inputs, so the ranks' parameters stay bit-identical without being exchanged; it must be
 * deterministic (no randomness of its own that differs between ranks).
 */
@FunctionalInterface
public interface ParameterUpdate extends Serializable {
    /**
     * @param step         the step, from 0
     * @param parameters   the parameters, to update in place
     * @param meanGradient the gradient of the mean loss over all rows of all partitions
     */
    void apply(int step, float[] parameters, float[] meanGradient);

    /**
     * Plain gradient descent: {@code parameters -= learningRate * meanGradient}.
     *
     * @param learningRate the step size, finite and greater than 0
     * @return the update
     */
    static ParameterUpdate sgd(float learningRate) {
        if (!(learningRate > 0) || Float.isInfinite(learningRate)) {
            throw new IllegalArgumentException("learningRate must be finite and > 0, was " + learningRate);
        }
        return (step, p, g) -> {
            for (int i = 0; i < p.length; i++) p[i] -= learningRate * g[i];
        };
    }
}
