package io.hcomm4j.examples.gpt;

/**
 * The shape of a {@link Gpt}, as torch_ddp_bench.py's arguments give it.
 *
 * @param vocab   tokens (256: bytes)
 * @param context positions per window
 * @param dim     model width; a multiple of heads
 * @param heads   attention heads
 * @param layers  transformer blocks
 * @param batch   windows per step and rank
 * @param tied    output head = the token embedding (the script's default; false is its --untied)
 * @param seed    data seed (which windows each (step, rank) gets)
 */
public record GptConfig(int vocab, int context, int dim, int heads, int layers, int batch, boolean tied, long seed) {
    /** Checks the shape. */
    public GptConfig {
        if (vocab < 2 || context < 1 || dim < 1 || heads < 1 || layers < 0 || batch < 1) {
            throw new IllegalArgumentException("bad GPT shape: " + this);
        }
        if (dim % heads != 0) {
            throw new IllegalArgumentException("dim " + dim + " must be a multiple of heads " + heads);
        }
    }

    /** The script's default model (--layers 4 --dim 128 --heads 4 --context 64 --vocab 256 --batch 8, tied, seed 0). */
    public static GptConfig defaults() {
        return new GptConfig(256, 64, 128, 4, 4, 8, true, 0);
    }

    /** Floats per head. */
    public int headDim() {
        return dim / heads;
    }

    /** The script's model_name. */
    public String name() {
        return "gpt-l" + layers + "-d" + dim + "-h" + heads + "-c" + context + "-v" + vocab + "-b" + batch
                + (tied ? "" : "-untied");
    }
}
