package io.hcomm4j.examples;

import io.hcomm4j.ddp.CommHook;
import io.hcomm4j.examples.gpt.AdamW;
import io.hcomm4j.examples.gpt.Gpt;
import io.hcomm4j.examples.gpt.GptConfig;
import io.hcomm4j.examples.gpt.Mlp;
import io.hcomm4j.examples.gpt.MlpConfig;
import io.hcomm4j.examples.gpt.Model;
import io.hcomm4j.examples.gpt.Optimizer;
import io.hcomm4j.examples.gpt.Sgd;
import java.util.Arrays;

/** The options {@link GptTraining} and {@link GptBench} share: the model's shape, the optimizer, the hook. */
final class GptModels {
    /** A GPT shape, as the options' defaults. */
    record Shape(int layers, int dim, int heads, int context, int batch) {
    }

    /** The benchmark's GPT shape: issue 14's (4 layers, dim 256, 4 heads, context 128, batch 8). */
    static final Shape BENCH_DEFAULTS = new Shape(4, 256, 4, 128, 8);
    /** The training example's: small enough to learn the text's bytes in a few minutes on 2 cores. */
    static final Shape TRAINING_DEFAULTS = new Shape(2, 128, 4, 64, 8);

    private GptModels() {
    }

    static boolean isMlp(Examples.Options o) {
        String m = o.stringValue("model", "gpt");
        if (!m.equals("gpt") && !m.equals("mlp")) throw new IllegalArgumentException("--model must be gpt or mlp, was " + m);
        return m.equals("mlp");
    }

    /** The model the options describe ({@code --model gpt|mlp} and its shape), with {@code defaults} for a GPT. */
    static Model fromOptions(Examples.Options o, Shape defaults) {
        long seed = o.intValue("seed", 0);
        if (isMlp(o)) {
            int[] widths = Arrays.stream(o.stringValue("widths", "2048,4096,4096,2048").split(","))
                    .mapToInt(w -> Integer.parseInt(w.trim())).toArray();
            return new Mlp(new MlpConfig(widths, o.intValue("batch", 16), seed));
        }
        return new Gpt(new GptConfig(o.intValue("vocab", 256), o.intValue("context", defaults.context()),
                o.intValue("dim", defaults.dim()), o.intValue("heads", defaults.heads()),
                o.intValue("layers", defaults.layers()), o.intValue("batch", defaults.batch()),
                !o.stringValue("untied", "no").equals("yes"), seed));
    }

    static long seed(Examples.Options o) {
        return o.intValue("seed", 0);
    }

    /** Sequences (GPT) or examples (MLP) per step and rank. */
    static int batch(Model m) {
        return m instanceof Gpt g ? g.config().batch() : ((Mlp) m).config().batch();
    }

    static String dataSource(Model m) {
        return m instanceof Gpt g ? g.data().source() : Mlp.EXAMPLES + " fixed random inputs, targets tanh(x W) of a random teacher W";
    }

    /** {@code --optim adamw|sgd} at {@code --lr} (default: the peer script's, AdamW 1e-3 for GPT, 2e-4 for MLP, SGD 0.01). */
    static Optimizer optimizer(Examples.Options o, Model m) {
        String kind = o.stringValue("optim", "adamw");
        boolean mlp = m instanceof Mlp;
        return switch (kind) {
            case "adamw" -> new AdamW(m.parameterCount(), (float) o.doubleValue("lr", mlp ? 2e-4 : 1e-3));
            case "sgd" -> new Sgd(m.parameterCount(), (float) o.doubleValue("lr", 0.01));
            default -> throw new IllegalArgumentException("--optim must be adamw or sgd, was " + kind);
        };
    }

    /** {@code --hook none|bf16|fp16}. */
    static CommHook hook(String name) {
        return switch (name) {
            case "none" -> CommHook.average();
            case "bf16" -> CommHook.bf16Compress();
            case "fp16" -> CommHook.fp16Compress();
            default -> throw new IllegalArgumentException("--hook must be none, bf16 or fp16, was " + name);
        };
    }
}
