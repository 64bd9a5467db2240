package io.hcomm4j.examples;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.ddp.DataParallel;
import io.hcomm4j.examples.gpt.AdamW;
import io.hcomm4j.examples.gpt.Batch;
import io.hcomm4j.examples.gpt.Model;
import io.hcomm4j.examples.gpt.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What gradient communication costs a data-parallel training step on HComm4J, measured exactly as
 * {@code shared/peers/torch_ddp_bench.py} measures PyTorch DDP on Gloo, on the same model shapes, as one rank of a job.
 *
 * <p>Per configuration (row), after {@code --warmup-steps} (10 by default: the JIT compiles the model's kernels for
 * about that many steps, and a step measured meanwhile varies by 2x), the median over {@code --steps} timed steps of
 * the slowest rank (every step starts after an untimed barrier) of:
 * <ul>
 *   <li>{@code step_ms}: forward + backward + AdamW step with gradient synchronisation: {@link DataParallel}'s buckets
 *       all-reduced while backward goes on (overlap), or with {@code --overlap no} one all-reduce of all gradients
 *       after backward (one bucket), or {@code --naive yes}: one blocking all-reduce per parameter tensor after
 *       backward, the baseline libraries are usually compared against;</li>
 *   <li>{@code compute_ms}: the same step without communication ({@link DataParallel#noSync()}), on the same batch;
 *       its update is undone (parameters and optimizer state restored, untimed), so training follows the synchronised
 *       steps alone;</li>
 *   <li>{@code exposed_comm_ms} = step - compute: what communication adds to a step;</li>
 *   <li>{@code allreduce_ms}: one all-reduce of all gradients (a flat float32 buffer) timed alone.</li>
 * </ul>
 * Prints a table, then CSV rows: the peer's columns ({@code framework} = hcomm4j), then {@code transport}, {@code hook}
 * and {@code mode}. At the end the ranks compare their parameters (all-gathered hashes): exit status 1 if they differ.
 *
 * <p>Run: {@code scripts/example.sh gpt-bench -n 2 [--model gpt|mlp] [--layers 4 --dim 256 --heads 4 --context 128
 * --batch 8] [--widths 2048,4096,4096,2048] [--bucket-cap-mb 25[,5,...]] [--overlap yes|no|both] [--hook
 * none|bf16|fp16] [--naive yes] [--steps 20] [--warmup-steps 10] [--trace yes]}. {@code HCOMM_TRANSPORT=tcp} for
 * sockets. {@code --trace yes}: every rank prints each step's phases (forward + backward, the wait in
 * {@code synchronize}, the optimizer), the CPU time its training thread and HComm4J's threads used in the step, and its
 * compute-only time, to see where a step's time goes.
 */
public final class GptBench {
    static final String NAME = "gpt-bench";
    static final String CSV_COLS = "framework,model,params,grad_bytes,ranks,bucket_mb,overlap,step_ms,compute_ms,"
            + "exposed_comm_ms,exposed_share,allreduce_ms,allreduce_busbw_gbs,loss_first,loss_last,transport,hook,mode";

    private GptBench() {
    }

    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(args));
    }

    /** One row's settings. */
    record Config(String mode, double bucketMb, String hook) {
        boolean naive() {
            return mode.equals("naive");
        }

        boolean overlap() {
            return mode.equals("overlap");
        }

        String label() {
            return mode + " " + hook + (overlap() ? " " + bucketMb + " MB" : "");
        }
    }

    /** One row's results (the slowest rank's medians). */
    record Row(Config config, long params, long gradBytes, int ranks, double stepMs, double computeMs, double allReduceMs,
               double lossFirst, double lossLast, boolean identical) {
    }

    static boolean run(String[] args) {
        Examples.Options o = new Examples.Options(args, "model", "layers", "dim", "heads", "context", "vocab", "batch",
                "widths", "untied", "steps", "warmup-steps", "seed", "lr", "bucket-cap-mb", "overlap", "hook", "naive", "trace");
        long seed = GptModels.seed(o);
        Model model = GptModels.fromOptions(o, GptModels.BENCH_DEFAULTS);
        int steps = o.intValue("steps", 20);
        int warmup = o.intValue("warmup-steps", 10);
        if (steps < 1 || warmup < 1) throw new IllegalArgumentException("need --steps >= 1 and --warmup-steps >= 1");
        float lr = (float) o.doubleValue("lr", GptModels.isMlp(o) ? 2e-4 : 1e-3);
        List<Config> configs = new ArrayList<>();
        String overlap = o.stringValue("overlap", "yes");
        for (String hook : o.stringValue("hook", "none").split(",")) {
            if (!overlap.equals("no")) {
                for (String mb : o.stringValue("bucket-cap-mb", "25").split(",")) {
                    configs.add(new Config("overlap", Double.parseDouble(mb), hook.trim()));
                }
            }
            if (overlap.equals("no") || overlap.equals("both")) configs.add(new Config("blocking", 0, hook.trim()));
        }
        if (o.stringValue("naive", "no").equals("yes")) configs.add(new Config("naive", 0, "none"));
        boolean trace = o.stringValue("trace", "no").equals("yes");
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            String transport = comm.size() > 1 ? hcomm.transportTo(comm.rank() == 0 ? 1 : 0) : "self";
            if (comm.rank() == 0) {
                System.out.println(Examples.fmt("hcomm4j, %d ranks, AdamW lr %g, %d warm-up + %d timed steps, model %s, "
                        + "data: %s", comm.size(), lr, warmup, steps, model.name(), GptModels.dataSource(model)));
            }
            List<Row> rows = new ArrayList<>();
            for (Config c : configs) rows.add(runConfig(comm, model, c, steps, warmup, lr, seed, trace));
            // the transport is known once connections exist: after the first row
            transport = comm.size() > 1 ? hcomm.transportTo(comm.rank() == 0 ? 1 : 0) : "self";
            boolean ok = rows.stream().allMatch(Row::identical);
            if (comm.rank() == 0) print(rows, transport, model.name());
            return ok;
        }
    }

    private static Row runConfig(Communicator comm, Model model, Config c, int steps, int warmup, float lr, long seed,
                                 boolean trace) {
        List<Tensor> tensors = model.tensors();
        DataParallel.Builder b = DataParallel.builder(comm).hook(GptModels.hook(c.hook()));
        if (c.overlap()) {
            b.bucketCapBytes((long) (c.bucketMb() * (1 << 20)));
        } else {
            // one bucket: one all-reduce of every gradient after backward (naive mode goes tensor by tensor itself)
            b.overlap(false).bucketCapBytes(Long.MAX_VALUE).firstBucketBytes(Long.MAX_VALUE);
        }
        for (Tensor t : tensors) b.tensor(t.name(), t.count());
        int rank = comm.rank();
        try (DataParallel ddp = b.build()) {
            MemorySegment params = ddp.parameters();
            MemorySegment grads = ddp.gradients();
            long count = ddp.parameterCount();
            model.init(seed, params);
            ddp.broadcastParameters();
            AdamW opt = new AdamW(count, lr);
            AdamW savedOpt = new AdamW(count, lr);
            MemorySegment savedParams = java.lang.foreign.Arena.ofAuto().allocate(count * 4, 64);
            double[] stepTimes = new double[steps];
            double[] computeTimes = new double[steps];
            long[] phases = new long[2];
            float lossFirst = Float.NaN;
            float lossLast = Float.NaN;
            for (int i = 0; i < warmup + steps; i++) {
                Batch batch = model.batch(i, rank);
                comm.barrier();
                long cpu0 = trace ? CpuTimes.main() : 0, commCpu0 = trace ? CpuTimes.library() : 0;
                long t0 = System.nanoTime();
                float loss = syncedStep(comm, ddp, model, opt, batch, c, tensors, phases);
                double dtSync = (System.nanoTime() - t0) / 1e6;
                double backwardEnd = (phases[0] - t0) / 1e6;
                double syncEnd = (phases[1] - t0) / 1e6;
                double cpu = trace ? (CpuTimes.main() - cpu0) / 1e6 : 0, commCpu = trace ? (CpuTimes.library() - commCpu0) / 1e6 : 0;
                MemorySegment.copy(params, 0, savedParams, 0, count * 4);
                copyState(opt, savedOpt);
                comm.barrier();
                t0 = System.nanoTime();
                ddp.zeroGradients();
                try (DataParallel.NoSync s = ddp.noSync()) {
                    model.forwardBackward(params, grads, batch, ddp::gradientReady);
                }
                opt.step(params, grads);
                double dtComp = (System.nanoTime() - t0) / 1e6;
                MemorySegment.copy(savedParams, 0, params, 0, count * 4);
                copyState(savedOpt, opt);
                if (trace) {
                    System.out.println(Examples.fmt("trace %s rank %d step %d: synced step %.2f ms (forward+backward"
                                    + " %.2f, synchronize %.2f, optimizer %.2f; CPU: training thread %.2f, HComm4J's"
                                    + " threads %.2f), compute %.2f ms", c.label(), rank, i, dtSync, backwardEnd,
                            syncEnd - backwardEnd, dtSync - syncEnd, cpu, commCpu, dtComp));
                }
                if (i >= warmup) {
                    stepTimes[i - warmup] = dtSync;
                    computeTimes[i - warmup] = dtComp;
                    if (Float.isNaN(lossFirst)) lossFirst = loss;
                    lossLast = loss;
                }
            }
            boolean identical = identical(comm, params, count);
            // one all-reduce of all gradients, timed alone (zeros: the sums stay finite)
            grads.fill((byte) 0);
            double[] arTimes = new double[warmup + Math.max(steps, 5)];
            for (int i = 0; i < arTimes.length; i++) {
                comm.barrier();
                long t0 = System.nanoTime();
                comm.allReduce(grads, grads, count, DataType.FLOAT32, ReduceOp.SUM);
                arTimes[i] = (System.nanoTime() - t0) / 1e6;
            }
            double[] t = {median(stepTimes), median(computeTimes), median(Arrays.copyOfRange(arTimes, warmup, arTimes.length))};
            comm.allReduce(t, ReduceOp.MAX);
            double[] flags = {identical ? 0 : 1, lossFirst, lossLast};
            comm.allReduce(flags, ReduceOp.SUM);
            int n = comm.size();
            return new Row(c, count, count * 4, n, t[0], t[1], t[2], flags[1] / n, flags[2] / n, flags[0] == 0);
        }
    }

    /**
     * A step with gradient synchronisation; returns the batch's loss and puts into {@code phases} the nanoTime when
     * backward returned and when the gradients were synchronised.
     */
    private static float syncedStep(Communicator comm, DataParallel ddp, Model model, AdamW opt, Batch batch, Config c,
                                    List<Tensor> tensors, long[] phases) {
        MemorySegment params = ddp.parameters();
        MemorySegment grads = ddp.gradients();
        ddp.zeroGradients();
        float loss;
        if (c.naive()) {
            try (DataParallel.NoSync s = ddp.noSync()) {
                loss = model.forwardBackward(params, grads, batch, ddp::gradientReady);
            }
            phases[0] = System.nanoTime();
            for (int t = 0; t < tensors.size(); t++) {
                MemorySegment g = ddp.gradient(t);
                comm.allReduce(g, g, tensors.get(t).count(), DataType.FLOAT32, ReduceOp.AVG);
            }
        } else {
            loss = model.forwardBackward(params, grads, batch, ddp::gradientReady);
            phases[0] = System.nanoTime();
            ddp.synchronize();
        }
        phases[1] = System.nanoTime();
        opt.step(params, grads);
        return loss;
    }

    /** AdamW's state (moments and step count) from {@code from} into {@code to}. */
    private static void copyState(AdamW from, AdamW to) {
        MemorySegment.copy(from.expAvg(), 0, to.expAvg(), 0, from.expAvg().byteSize());
        MemorySegment.copy(from.expAvgSq(), 0, to.expAvgSq(), 0, from.expAvgSq().byteSize());
        to.steps(from.steps());
    }

    private static boolean identical(Communicator comm, MemorySegment params, long count) {
        long h = Examples.hash(params, count);
        return Arrays.stream(Examples.allHashes(comm, h)).allMatch(x -> x == h);
    }

    /** CPU time of this thread and of the library's threads (named hcomm-*), for {@code --trace}. */
    private static final class CpuTimes {
        private static final java.lang.management.ThreadMXBean MX = java.lang.management.ManagementFactory.getThreadMXBean();

        static long main() {
            return MX.getCurrentThreadCpuTime();
        }

        /** User + kernel CPU time of the library's threads (its collective, progress and store threads). */
        static long library() {
            long sum = 0;
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().startsWith("hcomm-")) sum += Math.max(0, MX.getThreadCpuTime(t.threadId()));
            }
            return sum;
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static void print(List<Row> rows, String transport, String name) {
        Row r0 = rows.getFirst();
        System.out.println(Examples.fmt("%n%s: %d params, grad_bytes %d (%.1f MiB) all-reduced per step by %d ranks, transport %s",
                name, r0.params(), r0.gradBytes(), r0.gradBytes() / 1048576.0, r0.ranks(), transport));
        String[] head = {"mode", "hook", "bucket_mb", "step_ms", "compute_ms", "exposed_comm_ms", "exposed_share",
                "allreduce_ms", "allreduce_busbw_gbs", "loss_first", "loss_last"};
        StringBuilder sb = new StringBuilder();
        for (String h : head) sb.append(Examples.fmt("%" + Math.max(h.length(), 8) + "s  ", h));
        System.out.println(sb.toString().stripTrailing());
        for (Row r : rows) {
            Object[] v = {r.config().mode(), r.config().hook(), fmt(bucketMb(r)), fmt(r.stepMs()), fmt(r.computeMs()),
                    fmt(r.stepMs() - r.computeMs()), fmt((r.stepMs() - r.computeMs()) / r.stepMs()), fmt(r.allReduceMs()),
                    fmt(busbw(r)), fmt(r.lossFirst()), fmt(r.lossLast())};
            sb.setLength(0);
            for (int i = 0; i < head.length; i++) sb.append(Examples.fmt("%" + Math.max(head[i].length(), 8) + "s  ", v[i]));
            System.out.println(sb.toString().stripTrailing());
        }
        System.out.println("params identical on all ranks: " + (rows.stream().allMatch(Row::identical) ? "yes" : "no"));
        System.out.println();
        System.out.println(CSV_COLS);
        for (Row r : rows) {
            double exposed = r.stepMs() - r.computeMs();
            System.out.println(String.join(",", "hcomm4j", name, String.valueOf(r.params()),
                    String.valueOf(r.gradBytes()), String.valueOf(r.ranks()), fmt(bucketMb(r)),
                    r.config().overlap() ? "yes" : "no", fmt(r.stepMs()), fmt(r.computeMs()), fmt(exposed),
                    fmt(exposed / r.stepMs()), fmt(r.allReduceMs()), fmt(busbw(r)), fmt(r.lossFirst()),
                    fmt(r.lossLast()), transport, r.config().hook(), r.config().mode()));
        }
        System.out.flush();
    }

    private static double bucketMb(Row r) {
        return r.config().overlap() ? r.config().bucketMb() : 0;
    }

    private static double busbw(Row r) {
        return r.gradBytes() * 2.0 * (r.ranks() - 1) / r.ranks() / (r.allReduceMs() * 1e-3) / 1e9;
    }

    /** Four significant digits, as the peer's {@code f"{v:.4g}"}. */
    static String fmt(double v) {
        String s = Examples.fmt("%.4g", v);
        if (s.contains("e")) return s;
        return s.contains(".") ? s.replaceAll("0+$", "").replaceAll("\\.$", "") : s;
    }
}
