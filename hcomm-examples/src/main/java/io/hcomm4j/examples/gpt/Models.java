package io.hcomm4j.examples.gpt;

/** Factories for the benchmark models and their optimizers, with torch_ddp_bench.py's defaults. */
public final class Models {
    private Models() {
    }

    /** A tied byte-level GPT of this shape (vocab 256), data seed 0: the script's {@code --model gpt}. */
    public static Gpt gpt(int layers, int dim, int heads, int context, int batch) {
        return new Gpt(new GptConfig(256, context, dim, heads, layers, batch, true, 0));
    }

    /** A GPT of this shape. */
    public static Gpt gpt(GptConfig config) {
        return new Gpt(config);
    }

    /** An MLP of these widths, seed 0: the script's {@code --model mlp --widths ...}. */
    public static Mlp mlp(int batch, int... widths) {
        return new Mlp(new MlpConfig(widths, batch, 0));
    }

    /** An MLP of this shape. */
    public static Mlp mlp(MlpConfig config) {
        return new Mlp(config);
    }

    /**
     * The script's optimizer for a model, {@code --optim adamw} or {@code sgd} at its default learning rate: AdamW
     * at 1e-3 (GPT) or 2e-4 (MLP), SGD with momentum 0.9 at 0.01.
     */
    public static Optimizer optimizer(Model model, String optim) {
        return switch (optim) {
            case "adamw" -> new AdamW(model.parameterCount(), model instanceof Mlp ? 2e-4f : 1e-3f);
            case "sgd" -> new Sgd(model.parameterCount(), 0.01f);
            default -> throw new IllegalArgumentException("optim must be adamw or sgd, was " + optim);
        };
    }
}
