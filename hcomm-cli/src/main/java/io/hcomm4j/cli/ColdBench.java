package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.time.Instant;
import java.util.Arrays;

/**
 * {@code hcomm perf OP --cold}: what a short job or a freshly started service sees. In JVMs that have run nothing
 * before (the launcher starts new ones for every size), the first {@code iters} calls of the collective, each timed on
 * its own after a barrier, with no warm-up at all (only the tool's own setup is left to compile first, {@link #settleJit});
 * then steady state: the same calls after {@link #STEADY_WARMUP}
 * untimed ones (at most {@link #STEADY_BUDGET_NANOS}), each timed likewise, median. Every figure is the slowest rank's
 * time of that call. Rank 0 prints the first call, the mean of the first 100 and of all {@code iters}, the steady
 * median, their ratio, and when the first call ended after its JVM started.
 */
final class ColdBench {
    /** Untimed calls between the cold ones and the steady ones: enough for the JIT to compile the paths. */
    static final int STEADY_WARMUP = 20_000;
    static final long STEADY_BUDGET_NANOS = 5_000_000_000L;
    private static final int WARMUP_ROUND = 500;
    private static final int TAG_TIMES = 113;

    /** The columns of {@code --format csv}. */
    static final String CSV_HEADER = "op,ranks,bytes,first_us,first100_us,firstN_us,calls,steady_us,firstN_over_steady,first_call_after_start_ms,wrong";

    private ColdBench() {
    }

    /**
     * The launcher's side: a job of {@code ranks} new JVMs per test of {@code plan} (each its one size), after the
     * header; {@code warmUp} is the ranks' {@code HCOMM_WARMUP}, or null. Returns the worst exit code.
     */
    static int launch(LocalLauncher launcher, int ranks, java.util.List<CollectiveBench.Test> plan, java.util.List<String> rankArgs,
                      boolean csv, PrintStream out, String op, String details, String warmUp) {
        if (csv) out.println(CSV_HEADER);
        else header(out, op, ranks, details, warmUp);
        int rc = 0;
        for (CollectiveBench.Test t : plan) {
            java.util.List<String> args = new java.util.ArrayList<>(rankArgs);
            for (String flag : new String[] {"-b", "-e"}) {
                int at = args.indexOf(flag);
                if (at >= 0) args.subList(at, at + 2).clear();
            }
            args.addAll(java.util.List.of("-b", Long.toString(t.bytes()), "-e", Long.toString(t.bytes())));
            rc = Math.max(rc, launcher.runJava(ranks, HcommCli.class.getName(), args));
        }
        return rc;
    }

    /** A rank of one size's job: init, {@link #run}, exit code 1 at rank 0 if any element was wrong. */
    static int runAsRank(CollectiveBench.Test t, boolean check, boolean csv, PrintStream out) {
        try (io.hcomm4j.Hcomm hcomm = io.hcomm4j.Hcomm.init()) {
            Communicator comm = hcomm.world();
            long wrong = run(comm, t, check, csv, out);
            comm.barrier();
            return comm.rank() == 0 && wrong > 0 ? 1 : 0;
        }
    }

    /** Runs {@code t} cold then warm on this rank (every rank calls it); rank 0 prints; returns wrong elements (-1: unchecked). */
    static long run(Communicator comm, CollectiveBench.Test t, boolean check, boolean csv, PrintStream out) {
        try (Arena arena = Arena.ofShared(); CollectiveBench.Call call = new CollectiveBench.Call(comm, t, arena)) {
            call.fillInputs();
            settleJit(comm);
            long[] firstEnd = new long[1];
            long[] cold = timed(comm, call, t.iters(), firstEnd);
            long warmStart = System.nanoTime();
            // rounds of calls while rank 0 says so: every rank must make the same number of calls
            long[] go = {1};
            for (int done = 0; go[0] != 0; done += WARMUP_ROUND) {
                for (int i = 0; i < WARMUP_ROUND; i++) call.run();
                go[0] = done + WARMUP_ROUND < STEADY_WARMUP && System.nanoTime() - warmStart < STEADY_BUDGET_NANOS ? 1 : 0;
                comm.broadcast(go, 0);
            }
            long[] steady = timed(comm, call, t.iters(), null);
            long wrong = -1;
            if (check) {
                call.prepareCheck();
                call.run();
                wrong = call.countWrong();
            }
            long startMs = ProcessHandle.current().info().startInstant().map(Instant::toEpochMilli).orElse(-1L);
            long firstCallAfterStart = startMs < 0 ? -1 : firstEnd[0] - startMs;
            long[] all = slowest(comm, concat(cold, steady, wrong, firstCallAfterStart));
            if (comm.rank() != 0) return wrong;
            int n = t.iters();
            long[] coldMax = Arrays.copyOfRange(all, 0, n);
            long[] steadyMax = Arrays.copyOfRange(all, n, 2 * n);
            long totalWrong = all[2 * n];
            double first = coldMax[0] / 1e3;
            double first100 = mean(coldMax, Math.min(100, n));
            double firstN = mean(coldMax, n);
            double steadyMedian = P2pBench.median(steadyMax) / 1e3;
            double ratio = steadyMedian > 0 ? firstN / steadyMedian : 0;
            long afterStart = all[2 * n + 1];
            if (csv) {
                out.printf("%s,%d,%d,%.2f,%.2f,%.2f,%d,%.2f,%.1f,%d,%d%n", t.coll().cliName(), comm.size(), t.bytes(), first, first100,
                        firstN, n, steadyMedian, ratio, afterStart, totalWrong);
            } else {
                out.printf("%12s %12.1f %12.1f %12.1f %8d %12.2f %10.1f %14d %8s%n", P2pBench.human(t.bytes()), first, first100, firstN, n,
                        steadyMedian, ratio, afterStart, totalWrong < 0 ? "N/A" : Long.toString(totalWrong));
            }
            out.flush();
            return totalWrong;
        }
    }

    /** Longest wait for the JIT to compile what the tool's own setup set off, before the first timed call. */
    static final long SETTLE_MAX_NANOS = 3_000_000_000L;
    /** The JIT counts as settled once its compilation time has not grown for this long. */
    private static final long SETTLE_QUIET_MILLIS = 100;

    /**
     * Waits until this JVM's JIT has compiled nothing for {@link #SETTLE_QUIET_MILLIS} (at most
     * {@link #SETTLE_MAX_NANOS}), then a barrier. The tool's setup (buffers, inputs with their check pattern) sets off
     * compilations of the tool's own code, and on a rank bound to one CPU the compiler threads then took that CPU from
     * the first timed calls: with {@code HCOMM_WARMUP=30s}, the first 1,000 calls at 4 KiB came out 5-11x of steady
     * without a pause and 1.7-2.3x after one of 1 s. Those are the tool's costs, not the library's; the wait counts in
     * "1st end".
     */
    static void settleJit(Communicator comm) {
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        if (jit != null && jit.isCompilationTimeMonitoringSupported()) {
            long end = System.nanoTime() + SETTLE_MAX_NANOS;
            long last = jit.getTotalCompilationTime();
            try {
                while (System.nanoTime() - end < 0) {
                    Thread.sleep(SETTLE_QUIET_MILLIS);
                    long now = jit.getTotalCompilationTime();
                    if (now == last) break;
                    last = now;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        comm.barrier();
    }

    /** The table's header lines. */
    static void header(PrintStream out, String op, int ranks, String details, String warmUp) {
        out.printf("# hcomm perf %s --cold: %d ranks, %s; fresh JVMs for every size, %s%n", op, ranks, details,
                warmUp == null ? "no warm-up before the first call" : "init warms up first (HCOMM_WARMUP=" + warmUp + ")");
        out.printf("# the tool's own setup compiles first (each rank waits until its JIT is quiet, at most %d s); per call: the slowest%n",
                SETTLE_MAX_NANOS / 1_000_000_000L);
        out.printf("# rank's time, a barrier before each; steady: median after %d untimed calls%n", STEADY_WARMUP);
        out.printf("#%11s %12s %12s %12s %8s %12s %10s %14s %8s%n", "size", "first (us)", "first 100", "first N", "N",
                "steady (us)", "N / steady", "1st end (ms)", "#wrong");
    }

    /** {@code n} calls, each after a barrier and timed alone; {@code firstEnd}, if given, gets the wall clock after the first. */
    private static long[] timed(Communicator comm, CollectiveBench.Call call, int n, long[] firstEnd) {
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            comm.barrier();
            long c0 = System.nanoTime();
            call.run();
            t[i] = System.nanoTime() - c0;
            if (i == 0 && firstEnd != null) firstEnd[0] = System.currentTimeMillis();
        }
        return t;
    }

    private static long[] concat(long[] cold, long[] steady, long wrong, long afterStart) {
        long[] all = Arrays.copyOf(cold, cold.length + steady.length + 2);
        System.arraycopy(steady, 0, all, cold.length, steady.length);
        all[all.length - 2] = wrong;
        all[all.length - 1] = afterStart;
        return all;
    }

    /** At rank 0: per index the maximum over ranks, except the wrong count (second to last): summed, -1 if unchecked. */
    private static long[] slowest(Communicator comm, long[] mine) {
        if (comm.rank() != 0) {
            comm.send(mine, 0, TAG_TIMES);
            return mine;
        }
        long[] max = mine.clone();
        long[] theirs = new long[mine.length];
        int w = mine.length - 2;
        for (int r = 1; r < comm.size(); r++) {
            comm.recv(theirs, r, TAG_TIMES);
            for (int i = 0; i < max.length; i++) {
                if (i == w) max[i] = max[i] < 0 || theirs[i] < 0 ? Math.max(max[i], theirs[i]) : max[i] + theirs[i];
                else max[i] = Math.max(max[i], theirs[i]);
            }
        }
        return max;
    }

    private static double mean(long[] nanos, int n) {
        long sum = 0;
        for (int i = 0; i < n; i++) sum += nanos[i];
        return sum / 1e3 / n;
    }
}
