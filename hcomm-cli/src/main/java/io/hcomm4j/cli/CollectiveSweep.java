package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.OpStats;
import io.hcomm4j.cli.CollectiveBench.Coll;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One rank's part of {@code hcomm perf <collective>}: the header, the JIT warm-up when there is one, every size of the
 * plan measured and reported, and a closing line that counts the calls of the op this rank made
 * ({@link Communicator#metrics()}), so that what the warm-up cost is on the screen.
 */
final class CollectiveSweep {
    /**
     * The JIT warm-up runs this many calls of the op at {@link #JIT_WARMUP_BYTES} (or the largest size if smaller),
     * untimed: a new rank JVM interprets the reduction kernels and transport code at first, and the few warm-up calls of
     * a large size are not enough for the JIT (measured: 16 MiB allreduce 3x slower).
     */
    static final int JIT_WARMUP_CALLS = 300;
    static final long JIT_WARMUP_BYTES = 1L << 20;
    /**
     * Rounds of {@link #JIT_WARMUP_CALLS} at {@link #JIT_WARMUP_BYTES} go on until this much time has passed
     * (measured: 1 MiB all-reduce on 2 ranks, median 200 µs but p90 1.4 ms after 300 warm-up calls while C2 was
     * still compiling; p90 234 µs after 15000).
     */
    static final Duration JIT_WARMUP_BUDGET = Duration.ofSeconds(2);
    /** At most this long for {@link Communicator#warmUp} before the op's own warm-up (it stops once the JIT is quiet). */
    static final Duration LIBRARY_WARMUP_BUDGET = Duration.ofSeconds(30);
    /**
     * And before those, this many times as many calls at the smallest size (at most 4 KiB): the small-message path
     * needs far more calls than a few hundred before C2 compiles it (measured: 4 KiB allreduce 95 µs after 2000
     * warm-up calls, 21–31 µs after ~20000).
     */
    static final int JIT_WARMUP_SMALL_FACTOR = 66;
    static final long JIT_WARMUP_SMALL_BYTES = 4L << 10;

    private CollectiveSweep() {
    }

    /**
     * Measures {@code plan} on this rank of {@code comm} (every rank calls it with the same plan), after
     * {@code jitWarmupCalls} untimed calls (see {@link #JIT_WARMUP_CALLS}; 0 for none). Rank 0 prints the
     * header and each row to {@code report} and the comment lines (warm-up, progress per size, calls made) to
     * {@code notes}, and returns the rows; the other ranks return none ({@code report} and {@code notes} may be null
     * there).
     */
    static List<PerfReport.Row> run(Communicator comm, List<CollectiveBench.Test> plan, int jitWarmupCalls,
                                    boolean check, String algoLabel, PerfReport report, PrintStream notes) {
        return run(comm, plan, jitWarmupCalls, check, algoLabel, report, notes, CollectiveBench.Timing.MEAN, Duration.ZERO);
    }

    /** {@link #run} with each size timed as {@code timing} says, the JIT warm-up's rounds at 1 MiB for {@code jitWarmupBudget}. */
    static List<PerfReport.Row> run(Communicator comm, List<CollectiveBench.Test> plan, int jitWarmupCalls,
                                    boolean check, String algoLabel, PerfReport report, PrintStream notes,
                                    CollectiveBench.Timing timing, Duration jitWarmupBudget) {
        int rank = comm.rank();
        int n = comm.size();
        List<PerfReport.Row> rows = new ArrayList<>();
        if (plan.isEmpty()) return rows;
        CollectiveBench.Test first = plan.getFirst();
        Coll coll = first.coll();
        if (rank == 0) header(report, first, n, algoLabel, check, timing);
        long callsBefore = callsOf(comm, coll);
        if (jitWarmupCalls > 0) {
            jitWarmUp(comm, plan, jitWarmupCalls, jitWarmupBudget, notes);
        } else if (rank == 0) {
            notes.println(JitWarmUp.NONE);
        }
        for (CollectiveBench.Test t : plan) {
            CollectiveBench.Shape shape = CollectiveBench.shape(t.coll(), t.bytes(), n, t.type());
            if (rank == 0) {
                notes.println(String.format(Locale.ROOT, "# %s %s %s%s: %d warmup + %d iters", coll.cliName(),
                        P2pBench.human(shape.bytes()), PerfCommand.typeName(t.type()),
                        coll.reduces ? " " + PerfCommand.opName(t.op()) : "", t.warmup(), t.iters()));
            }
            CollectiveBench.Result r = CollectiveBench.combine(comm, CollectiveBench.run(comm, t, check, timing));
            if (rank == 0 && r.tailNanos() != null) {
                long[] q = r.tailNanos();
                notes.println(String.format(Locale.ROOT, "# %s %s: per call p50 %.2f us, p99 %.2f us, max %.2f us (%s)",
                        coll.cliName(), P2pBench.human(shape.bytes()), q[0] / 1e3, q[1] / 1e3, q[2] / 1e3,
                        timing == CollectiveBench.Timing.MEAN ? "back to back; the largest over ranks" : "the slowest rank's"));
            }
            if (rank == 0) {
                double algbw = r.algbwGBs();
                PerfReport.Row row = new PerfReport.Row(coll.cliName(), algoLabel, n, shape.bytes(), shape.count(),
                        PerfCommand.typeName(t.type()), coll.reduces ? PerfCommand.opName(t.op()) : "none",
                        coll.rooted ? t.root() : -1, r.timeUs(), algbw, algbw * coll.busFactor(n), r.wrong())
                        .withTails(r.tailNanos() == null ? null : new double[] {
                            r.tailNanos()[0] / 1e3, r.tailNanos()[1] / 1e3, r.tailNanos()[2] / 1e3});
                report.row(row);
                rows.add(row);
            }
        }
        if (rank == 0) {
            String made = callsMade(coll, callsOf(comm, coll) - callsBefore, plan, check);
            if (made != null) notes.println(made);
        }
        return rows;
    }

    private static void header(PerfReport report, CollectiveBench.Test first, int n, String algoLabel, boolean check,
                               CollectiveBench.Timing timing) {
        Coll coll = first.coll();
        String placement = first.inPlace() ? "in place (each call's output is the next one's input)" : "out of place";
        report.header(
                "hcomm perf " + coll.cliName() + ": " + n + " ranks, " + PerfCommand.typeName(first.type())
                        + (coll.reduces ? ", redop " + PerfCommand.opName(first.op()) : "")
                        + (coll.rooted ? ", root " + first.root() : "")
                        + ", algo " + algoLabel + ", check " + (check ? "on" : "off")
                        + ", mem " + first.mem().name().toLowerCase(Locale.ROOT),
                timing == CollectiveBench.Timing.MEAN
                        ? "time = max over ranks of each rank's mean time per blocking call: warmup untimed, a barrier, then"
                        + " the time of iters calls back to back / iters; " + placement
                        : "time = median over calls of the slowest rank's time per blocking call: warmup untimed, then"
                        + " iters calls each after a barrier and timed alone; " + placement,
                coll.blocked
                        ? "size = bytes of all " + n + " ranks' blocks; count = elements per block" + (coll.base() == Coll.ALLTOALL ? " (per peer)" : "")
                        : "size = bytes of the buffer; count = elements",
                String.format(Locale.ROOT, "algbw = size / time, busbw = algbw * %s = algbw * %.4f, GB/s = 1e9 B/s%s",
                        coll.busFactorFormula(), coll.busFactor(n), check ? "; #wrong = wrong elements on all ranks" : ""));
    }

    /**
     * Untimed calls before the first size, so that C2 has compiled the op's paths: the library's {@link
     * Communicator#warmUp} (with a budget only: the overload without one, which tests use, skips it), then
     * {@code jitWarmupCalls} x {@link #JIT_WARMUP_SMALL_FACTOR} calls at the smallest size, then rounds of
     * {@code jitWarmupCalls} at 1 MiB until {@code budget} has passed. Rank 0 says what ran.
     */
    private static void jitWarmUp(Communicator comm, List<CollectiveBench.Test> plan, int jitWarmupCalls, Duration budget,
                                  PrintStream notes) {
        int rank = comm.rank();
        int n = comm.size();
        CollectiveBench.Test first = plan.getFirst();
        Coll coll = first.coll();
        if (!budget.isZero()) {
            // every collective on every path first, so that C2 compiles code for all of them and the sweep's change of
            // size does not deoptimize it (docs/performance.md, "Tails with more ranks than cores")
            int rounds = comm.warmUp(LIBRARY_WARMUP_BUDGET);
            if (rank == 0) notes.println("# JIT warm-up: " + rounds + " rounds of every collective (Communicator.warmUp)");
        }
        long smallest = plan.stream().mapToLong(CollectiveBench.Test::bytes).min().orElseThrow();
        int smallCalls = jitWarmupCalls * JIT_WARMUP_SMALL_FACTOR;
        CollectiveBench.Test small = new CollectiveBench.Test(coll, Math.min(JIT_WARMUP_SMALL_BYTES, smallest), first.type(),
                first.op(), first.root(), smallCalls, 0, first.mem(), first.inPlace());
        if (rank == 0) {
            notes.println(String.format(Locale.ROOT, "# JIT warm-up: %d calls of %s %s", smallCalls,
                    coll.cliName(), P2pBench.human(CollectiveBench.shape(coll, small.bytes(), n, small.type()).bytes())));
        }
        CollectiveBench.run(comm, small, false);
        long largest = plan.stream().mapToLong(CollectiveBench.Test::bytes).max().orElseThrow();
        CollectiveBench.Test jit = new CollectiveBench.Test(coll, Math.min(JIT_WARMUP_BYTES, largest), first.type(),
                first.op(), first.root(), jitWarmupCalls, 0, first.mem(), first.inPlace());
        // rounds until the budget is spent (rank 0's clock decides for all): the multi-chunk paths of the
        // algorithms need thousands of calls before C2 has compiled them
        int calls = 0;
        long start = System.nanoTime();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment more = arena.allocate(4);
            do {
                CollectiveBench.run(comm, jit, false);
                calls += jitWarmupCalls;
                more.set(ValueLayout.JAVA_INT, 0, System.nanoTime() - start < budget.toNanos() ? 1 : 0);
                comm.broadcast(more, 1, DataType.INT32, 0);
            } while (more.get(ValueLayout.JAVA_INT, 0) == 1);
        }
        if (rank == 0) {
            notes.println(String.format(Locale.ROOT, "# JIT warm-up: %d calls of %s %s", calls,
                    coll.cliName(), P2pBench.human(CollectiveBench.shape(coll, jit.bytes(), n, jit.type()).bytes())));
        }
    }

    /**
     * Calls of {@code coll} this rank's {@code comm} has made so far, as its metrics count them (the API's name of the
     * op, e.g. allReduce for allreduce), or -1 for an op the metrics do not name so (sendrecv: sends and receives).
     */
    static long callsOf(Communicator comm, Coll coll) {
        if (coll == Coll.SENDRECV) return -1;
        for (OpStats s : comm.metrics()) {
            if (s.op().equalsIgnoreCase(coll.cliName())) return s.calls();
        }
        return 0;
    }

    /**
     * {@code # rank 0 called allreduce 72 times: 60 timed, 12 warm-up}: the calls of the op this rank made during the
     * sweep ({@code calls}, from the metrics), split into the plan's timed ones, its check calls and the rest, which is
     * every untimed call of the warm-ups (the JIT's, the library's and each size's own); null when not counted.
     */
    static String callsMade(Coll coll, long calls, List<CollectiveBench.Test> plan, boolean check) {
        if (calls < 0) return null;
        long timed = plan.stream().mapToLong(CollectiveBench.Test::iters).sum();
        long checks = check ? plan.size() : 0;
        return String.format(Locale.ROOT, "# rank 0 called %s %d times: %d timed, %d warm-up%s", coll.cliName(), calls, timed,
                calls - timed - checks, check ? ", " + checks + " checks" : "");
    }

    /**
     * {@code # tuner's choice: <size>:<algorithm> ...} for the sizes of {@code plan}, what the library would run for
     * each ({@link Hcomm#algorithmFor}: forced, from the tuning table, or the model's), or null for an op the tuner does
     * not choose for.
     */
    static String tunerChoices(Hcomm hcomm, Coll coll, List<CollectiveBench.Test> plan) {
        if (coll == Coll.SENDRECV) return null;
        StringBuilder b = new StringBuilder("# tuner's choice (" + coll.cliName() + "):");
        long last = -1;
        for (CollectiveBench.Test t : plan) {
            if (t.bytes() == last) continue;
            last = t.bytes();
            try {
                b.append(' ').append(t.bytes()).append(':').append(hcomm.algorithmFor(coll.cliName(), t.bytes()));
            } catch (IllegalArgumentException e) {
                return null; // an op outside the tuner's (the V forms)
            }
        }
        return b.toString();
    }
}
