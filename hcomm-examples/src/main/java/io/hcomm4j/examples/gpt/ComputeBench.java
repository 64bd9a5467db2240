package io.hcomm4j.examples.gpt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Single-threaded compute speed of this package, no communication: {@link MatMul} in GFLOP/s on the products of the
 * benchmark models, and the milliseconds of one forwardBackward (and of one AdamW step) of the GPT and MLP shapes.
 *
 * <p>{@code java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -cp hcomm-examples.jar
 * io.hcomm4j.examples.gpt.ComputeBench
 * [matmul] [gpt] [mlp]} (all three without arguments). Times are the median and the best of timed repetitions after
 * a warm-up; on a shared machine the best is the better estimate of what the code can do.
 */
public final class ComputeBench {
    private ComputeBench() {
    }

    /** Runs the parts named in args (matmul, gpt, mlp), or all. */
    public static void main(String[] args) {
        boolean all = args.length == 0;
        if (all || Arrays.asList(args).contains("matmul")) {
            matmul();
        }
        if (all || Arrays.asList(args).contains("gpt")) {
            step(new Gpt(new GptConfig(256, 128, 256, 4, 4, 8, true, 0)), 1e-3f);
        }
        if (all || Arrays.asList(args).contains("mlp")) {
            step(new Mlp(new MlpConfig(new int[] {2048, 4096, 4096, 2048}, 16, 0)), 2e-4f);
        }
    }

    private static void matmul() {
        System.out.printf("MatMul, %d float lanes; C[m x n] (+)= A[m x k] . B[k x n] (nn), A^T . B (tn), A . B^T (nt)%n",
                MatMul.lanes());
        // GPT l4-d256-c128-b8: rows 1024, dim 256; forward X.W, backward dY.W^T and X^T.dY
        int[][] gpt = {{1024, 768, 256}, {1024, 256, 256}, {1024, 1024, 256}, {1024, 256, 1024}};
        for (int[] s : gpt) {
            product("gpt", s[0], s[1], s[2]);
        }
        // MLP 2048x4096x4096x2048-b16: rows 16
        int[][] mlp = {{16, 4096, 2048}, {16, 4096, 4096}, {16, 2048, 4096}};
        for (int[] s : mlp) {
            product("mlp", s[0], s[1], s[2]);
        }
    }

    /** The three products of a Linear of k inputs and n outputs on m rows. */
    private static void product(String model, int m, int n, int k) {
        SplittableRandom r = new SplittableRandom(1);
        MatMul mm = new MatMul();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = random(arena, (long) m * k, r), w = random(arena, (long) k * n, r);
            MemorySegment y = random(arena, (long) m * n, r), dx = random(arena, (long) m * k, r);
            MemorySegment dw = random(arena, (long) k * n, r);
            double flops = 2.0 * m * n * k;
            report(model + " forward  X.W     ", m, n, k, flops, time(() -> mm.mulAdd(m, n, k, x, 0, k, 1, w, 0, n, y, 0, n, false)));
            report(model + " backward dY.W^T  ", m, k, n, flops, time(() -> mm.mulAddTransB(m, k, n, y, 0, n, w, 0, n, dx, 0, k, false)));
            report(model + " backward X^T.dY +", k, n, m, flops, time(() -> mm.mulAdd(k, n, m, x, 0, 1, k, y, 0, n, dw, 0, n, true)));
        }
    }

    private static void report(String what, int m, int n, int k, double flops, double[] ms) {
        System.out.printf("  %s m=%-5d n=%-5d k=%-5d  %7.3f ms median %6.1f GFLOP/s | best %7.3f ms %6.1f GFLOP/s%n",
                what, m, n, k, ms[0], flops / ms[0] / 1e6, ms[1], flops / ms[1] / 1e6);
    }

    private static void step(Model model, float lr) {
        try (Arena arena = Arena.ofConfined()) {
            long n = model.parameterCount();
            MemorySegment params = arena.allocate(n * 4, 64), grads = arena.allocate(n * 4, 64);
            model.init(0, params);
            AdamW opt = new AdamW(n, lr);
            Batch batch = model.batch(0, 0);
            System.out.printf("%s: %d parameters (%.1f MiB of gradients)%n", model.name(), n, n * 4 / 1048576.0);
            double[] fb = time(() -> {
                grads.fill((byte) 0);
                model.forwardBackward(params, grads, batch, i -> { });
            });
            double[] fwd = time(() -> model.loss(params, batch));
            double[] adam = time(() -> opt.step(params, grads));
            System.out.printf("  forwardBackward (with zeroing the gradients) %8.2f ms median, %8.2f ms best%n", fb[0], fb[1]);
            System.out.printf("  forward only (loss)                          %8.2f ms median, %8.2f ms best%n", fwd[0], fwd[1]);
            System.out.printf("  AdamW step                                   %8.2f ms median, %8.2f ms best%n", adam[0], adam[1]);
        }
    }

    /** Median and best milliseconds of a run, after a warm-up, over about 3 s of repetitions. */
    private static double[] time(Runnable run) {
        long warm = System.nanoTime();
        int w = 0;
        while (w < 3 || System.nanoTime() - warm < 2_000_000_000L && w < 200) {
            run.run();
            w++;
        }
        double[] t = new double[200];
        int reps = 0;
        long start = System.nanoTime();
        while (reps < t.length && (reps < 5 || System.nanoTime() - start < 3_000_000_000L)) {
            long t0 = System.nanoTime();
            run.run();
            t[reps++] = (System.nanoTime() - t0) / 1e6;
        }
        double[] done = Arrays.copyOf(t, reps);
        Arrays.sort(done);
        return new double[] {done[reps / 2], done[0]};
    }

    private static MemorySegment random(Arena arena, long n, SplittableRandom r) {
        MemorySegment s = arena.allocate(n * 4, 64);
        for (long i = 0; i < n; i++) {
            Ops.set(s, i, (float) (2 * r.nextDouble() - 1));
        }
        return s;
    }
}
