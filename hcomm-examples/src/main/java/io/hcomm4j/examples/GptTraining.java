package io.hcomm4j.examples;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.ddp.DataParallel;
import io.hcomm4j.examples.gpt.Model;
import io.hcomm4j.examples.gpt.Optimizer;
import java.lang.foreign.MemorySegment;

/**
 * Distributed GPT training, as one rank of a job: a byte-level GPT-style language model written in Java (package
 * {@code io.hcomm4j.examples.gpt}: embeddings, causal self-attention, MLP, LayerNorm, forward and backward by hand with
 * the Vector API, AdamW) trained data-parallel on the text of {@code /usr/share/common-licenses} with
 * {@link DataParallel}: every rank takes its own random windows of the text each step, backward hands each finished
 * tensor to the layer, whose gradient buckets are all-reduced while backward goes on, and every rank applies the same
 * averaged gradient.
 *
 * <p>Checks, printed in one line per rank (exit code 1 if one fails): the mean training loss of the last 10 steps
 * (over all ranks) is below {@code --loss-bound}, and every rank holds bit-identical parameters (all-gathered hashes).
 *
 * <p>Run: {@code scripts/example.sh gpt -n 2 [--steps 200] [--layers 2 --dim 128 --heads 4 --context 64 --batch 8]
 * [--lr 0.001] [--loss-bound 2.9] [--hook none|bf16|fp16] [--bucket-cap-mb 25] [--model mlp --widths ...]}, or as the
 * command of any launcher.
 */
public final class GptTraining {
    static final String NAME = "gpt";

    private GptTraining() {
    }

    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(args));
    }

    static boolean run(String[] args) {
        Examples.Options o = new Examples.Options(args, "model", "layers", "dim", "heads", "context", "vocab", "batch",
                "widths", "untied", "steps", "seed", "lr", "optim", "loss-bound", "bucket-cap-mb", "hook", "log-every");
        Model model = GptModels.fromOptions(o, GptModels.TRAINING_DEFAULTS);
        int steps = o.intValue("steps", 200);
        int logEvery = o.intValue("log-every", 50);
        double bound = o.doubleValue("loss-bound", GptModels.isMlp(o) ? 0.02 : 2.9);
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int rank = comm.rank();
            int n = comm.size();
            long cap = (long) (o.doubleValue("bucket-cap-mb", 25) * (1 << 20));
            DataParallel.Builder b = DataParallel.builder(comm).hook(GptModels.hook(o.stringValue("hook", "none")))
                    .bucketCapBytes(cap).firstBucketBytes(Math.min(1 << 20, cap));
            model.tensors().forEach(t -> b.tensor(t.name(), t.count()));
            long t0 = System.nanoTime();
            try (DataParallel ddp = b.build()) {
                MemorySegment params = ddp.parameters();
                model.init(GptModels.seed(o), params);
                ddp.broadcastParameters();
                Optimizer opt = GptModels.optimizer(o, model);
                double[] loss = new double[1];
                double first = Double.NaN;
                double lastTen = 0;
                for (int step = 0; step < steps; step++) {
                    ddp.zeroGradients();
                    float l = model.forwardBackward(params, ddp.gradients(), model.batch(step, rank), ddp::gradientReady);
                    ddp.synchronize();
                    opt.step(params, ddp.gradients());
                    if (step == 0 || step >= steps - 10 || (step + 1) % logEvery == 0) {
                        loss[0] = l;
                        comm.allReduce(loss, ReduceOp.SUM);
                        double mean = loss[0] / n;
                        if (step == 0) first = mean;
                        if (step >= steps - 10) lastTen += mean / Math.min(10, steps);
                        if (rank == 0 && (step + 1) % logEvery == 0) {
                            System.out.println(Examples.fmt("%s step %d/%d: loss %.4f (%.1f s)", NAME, step + 1, steps,
                                    mean, (System.nanoTime() - t0) / 1e9));
                        }
                    }
                }
                double seconds = (System.nanoTime() - t0) / 1e9;
                long hash = Examples.hash(params, ddp.parameterCount());
                long[] all = Examples.allHashes(comm, hash);
                boolean identical = java.util.Arrays.stream(all).allMatch(h -> h == hash);
                boolean learned = lastTen < bound;
                DataParallel.Stats st = ddp.stats();
                String detail = Examples.fmt("%s, %d params, %d steps x %d ranks x %d sequences in %.1f s, %d buckets, "
                                + "waited %.0f ms a step for gradients, loss %.4f -> %.4f (mean of the last 10 steps; bound "
                                + "%.4f), parameters bit-identical on all %d ranks (hash %016x)", model.name(),
                        ddp.parameterCount(), steps, n, GptModels.batch(model), seconds, st.buckets(),
                        st.waitNanos() / 1e6 / Math.max(1, st.steps()), first, lastTen, bound, n, hash);
                if (!identical) detail += Examples.fmt(" - NOT identical: %s", java.util.Arrays.toString(all));
                return Examples.result(NAME, rank, n, "", detail, identical && learned);
            }
        }
    }
}
