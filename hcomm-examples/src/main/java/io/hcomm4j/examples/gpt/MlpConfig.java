package io.hcomm4j.examples.gpt;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The shape of an {@link Mlp}, as torch_ddp_bench.py's --widths and --batch give it.
 *
 * @param widths layer widths, input first (at least two)
 * @param batch  examples per step and rank
 * @param seed   seed of the teacher, the 64 inputs, and which of them each (step, rank) gets
 */
public record MlpConfig(int[] widths, int batch, long seed) {
    /** Checks the shape and copies widths. */
    public MlpConfig {
        widths = widths.clone();
        if (widths.length < 2 || Arrays.stream(widths).anyMatch(w -> w < 1) || batch < 1) {
            throw new IllegalArgumentException("bad MLP shape: widths " + Arrays.toString(widths) + ", batch " + batch);
        }
    }

    /** The widths (a copy). */
    @Override
    public int[] widths() {
        return widths.clone();
    }

    /** Width of layer i (0: the input). */
    public int width(int i) {
        return widths[i];
    }

    /** Linear layers: widths - 1. */
    public int layers() {
        return widths.length - 1;
    }

    /** The script's model_name. */
    public String name() {
        return "mlp-" + Arrays.stream(widths).mapToObj(Integer::toString).collect(Collectors.joining("x")) + "-b" + batch;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MlpConfig c && Arrays.equals(widths, c.widths) && batch == c.batch && seed == c.seed;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(widths) * 31 * 31 + Integer.hashCode(batch) * 31 + Long.hashCode(seed);
    }

    @Override
    public String toString() {
        return "MlpConfig[widths=" + Arrays.toString(widths) + ", batch=" + batch + ", seed=" + seed + "]";
    }
}
