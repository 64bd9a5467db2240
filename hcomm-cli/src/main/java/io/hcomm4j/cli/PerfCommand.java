package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code hcomm perf OP}: measures one communication op like nccl-tests. Outside a job it starts {@code -n}
 * local ranks (child JVMs running {@code hcomm perf} again); inside a job ({@link JobEnv}) it is one rank.
 */
@Command(name = "perf", sortOptions = false, usageHelpAutoWidth = true, mixinStandardHelpOptions = true,
        versionProvider = HcommCli.Version.class,
        description = {
            "Measures a communication op between ranks and prints time, algbw and busbw per size (like nccl-tests).",
            "Started on its own, it runs -n ranks on this machine; started inside a job (hcomm launch, torchrun,"
                    + " mpirun, srun: RANK and WORLD_SIZE set), it runs as that one rank and rank 0 prints the results.",
            "",
            "p2p measures ranks 0 and 1 (other ranks wait):",
            "  pingpong: rank 0 sends, rank 1 echoes the message back;",
            "            time = one-way latency = round trip / 2 (median).",
            "  stream:   rank 0 sends a window of messages back to back, rank 1",
            "            acknowledges the window; time = window time / messages",
            "            (median): unidirectional bandwidth.",
            "  Default sizes: pingpong 8 B and 4 KiB, stream 4 MiB and 64 MiB.",
            "algbw = size / time; busbw = algbw for p2p; GB/s = 1e9 bytes/s.",
            "",
        })
final class PerfCommand implements Callable<Integer> {
    /** Every op {@code hcomm perf} knows; only {@link #IMPLEMENTED} are measured so far. */
    static final List<String> OPS = List.of("p2p", "allreduce", "broadcast", "reduce", "allgather", "reducescatter",
            "gather", "scatter", "alltoall", "sendrecv");

    static final List<String> IMPLEMENTED = List.of("p2p");

    /** How a p2p size is measured. */
    enum P2pAlgo { PINGPONG, STREAM }

    /**
     * One measurement of the plan.
     *
     * @param algo   ping-pong or stream
     * @param bytes  message size
     * @param iters  timed round trips (pingpong) or windows (stream)
     * @param warmup untimed ones before
     * @param window messages per window (stream; 1 for pingpong)
     */
    record P2pTest(P2pAlgo algo, long bytes, int iters, int warmup, int window) {
    }

    @ParentCommand
    HcommCli parent;

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "OP", description = "The op: p2p (implemented); allreduce, broadcast, reduce,"
            + " allgather, reducescatter, gather, scatter, alltoall, sendrecv (not yet).")
    String op;

    @Option(names = "-n", paramLabel = "N", defaultValue = "2",
            description = "Ranks to start on this machine (default: ${DEFAULT-VALUE}); ignored inside a job.")
    int ranks;

    @Option(names = {"-b", "--minbytes"}, paramLabel = "SIZE", converter = HcommCli.SizeConverter.class,
            description = "Smallest size of a sweep (4096, 64K, 4M, 1G).")
    Long minBytes;

    @Option(names = {"-e", "--maxbytes"}, paramLabel = "SIZE", converter = HcommCli.SizeConverter.class,
            description = "Largest size of a sweep.")
    Long maxBytes;

    @Option(names = {"-f", "--stepfactor"}, paramLabel = "F", defaultValue = "2",
            description = "Factor between the sizes of a sweep (default: ${DEFAULT-VALUE}).")
    int factor;

    @Option(names = "--algo", paramLabel = "ALGO",
            description = "p2p: pingpong or stream only (default: both for a sweep, the default sizes otherwise).")
    P2pAlgo algo;

    @Option(names = "--iters", paramLabel = "N",
            description = "Timed iterations per size (pingpong: round trips; stream: windows). Default: by size.")
    Integer iters;

    @Option(names = "--warmup", paramLabel = "N", description = "Untimed iterations before them. Default: by size.")
    Integer warmup;

    @Option(names = "--format", paramLabel = "FORMAT", defaultValue = "table",
            description = "table or csv (default: ${DEFAULT-VALUE}); csv columns: " + PerfReport.CSV_HEADER)
    PerfReport.Format format;

    @Option(names = "--check", description = "Verify every received byte (after the timed iterations);"
            + " #wrong counts the wrong ones and the exit code is 1 if any.")
    boolean check;

    @Override
    public Integer call() {
        if (!OPS.contains(op)) {
            throw new ParameterException(spec.commandLine(), "Unknown op '" + op + "': one of " + String.join(", ", OPS));
        }
        if (!IMPLEMENTED.contains(op)) {
            parent.err.println("hcomm perf: " + op + " is not yet implemented (implemented: " + String.join(", ", IMPLEMENTED) + ")");
            return 2;
        }
        List<P2pTest> plan;
        try {
            plan = p2pPlan(minBytes, maxBytes, factor, algo, iters, warmup);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        Optional<JobEnv> job = JobEnv.detect(parent.env);
        if (job.isPresent()) return runAsRank(plan);
        if (ranks < 2) throw new ParameterException(spec.commandLine(), "p2p needs at least 2 ranks (-n 2), not " + ranks);
        return new LocalLauncher("hcomm perf", parent.out, parent.err)
                .rank0StdoutRaw(true)
                .runJava(ranks, HcommCli.class.getName(), rankArgs());
    }

    /** The arguments of the rank JVMs: this command without {@code -n}. */
    List<String> rankArgs() {
        List<String> args = new ArrayList<>(List.of("perf", op, "--format", format.name().toLowerCase(Locale.ROOT)));
        if (minBytes != null) args.addAll(List.of("-b", Long.toString(minBytes)));
        if (maxBytes != null) args.addAll(List.of("-e", Long.toString(maxBytes)));
        args.addAll(List.of("-f", Integer.toString(factor)));
        if (algo != null) args.addAll(List.of("--algo", algo.name().toLowerCase(Locale.ROOT)));
        if (iters != null) args.addAll(List.of("--iters", Integer.toString(iters)));
        if (warmup != null) args.addAll(List.of("--warmup", Integer.toString(warmup)));
        if (check) args.add("--check");
        return args;
    }

    /**
     * What p2p measures. Without {@code -b}/{@code -e}: pingpong at 8 B and 4 KiB, stream at 4 MiB and
     * 64 MiB (or those of {@code algo}). With them: every size from min to max, times {@code factor}, with
     * each algo (or {@code algo}). Iterations not given are chosen by size so each size takes about a second.
     */
    static List<P2pTest> p2pPlan(Long minBytes, Long maxBytes, int factor, P2pAlgo algo, Integer iters, Integer warmup) {
        if (iters != null && iters < 1) throw new IllegalArgumentException("--iters must be >= 1, was " + iters);
        if (warmup != null && warmup < 0) throw new IllegalArgumentException("--warmup must be >= 0, was " + warmup);
        List<P2pTest> plan = new ArrayList<>();
        if (minBytes == null && maxBytes == null) {
            for (long b : new long[] {8, 4 << 10}) {
                if (algo == null || algo == P2pAlgo.PINGPONG) plan.add(test(P2pAlgo.PINGPONG, b, iters, warmup));
            }
            for (long b : new long[] {4 << 20, 64 << 20}) {
                if (algo == null || algo == P2pAlgo.STREAM) plan.add(test(P2pAlgo.STREAM, b, iters, warmup));
            }
            return plan;
        }
        long min = minBytes != null ? minBytes : maxBytes;
        long max = maxBytes != null ? maxBytes : minBytes;
        if (min < 1) throw new IllegalArgumentException("-b must be at least 1 byte, was " + min);
        if (max < min) throw new IllegalArgumentException("-e (" + max + ") is smaller than -b (" + min + ")");
        if (factor < 2 && max > min) throw new IllegalArgumentException("-f must be >= 2, was " + factor);
        for (long b = min; b <= max; b = b > Long.MAX_VALUE / factor ? Long.MAX_VALUE : b * factor) {
            for (P2pAlgo a : P2pAlgo.values()) {
                if (algo == null || algo == a) plan.add(test(a, b, iters, warmup));
            }
            if (b == Long.MAX_VALUE || max == min) break;
        }
        return plan;
    }

    private static P2pTest test(P2pAlgo algo, long bytes, Integer iters, Integer warmup) {
        if (algo == P2pAlgo.PINGPONG) {
            int n = iters != null ? iters : (int) clamp((256L << 20) / bytes, 20, 10_000);
            int w = warmup != null ? warmup : (int) clamp(n / 10, 2, 1_000);
            return new P2pTest(algo, bytes, n, w, 1);
        }
        int window = (int) clamp((256L << 20) / bytes, 1, 16);
        int n = iters != null ? iters : (int) clamp((1L << 30) / (bytes * window), 5, 100);
        int w = warmup != null ? warmup : bytes * window >= (256L << 20) ? 1 : 2;
        return new P2pTest(algo, bytes, n, w, window);
    }

    private static long clamp(long v, long lo, long hi) {
        return Math.max(lo, Math.min(hi, v));
    }

    /** Runs the plan as this process's rank of the job; rank 0 prints. */
    private int runAsRank(List<P2pTest> plan) {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int rank = comm.rank();
            int size = comm.size();
            if (size < 2) {
                parent.err.println("hcomm perf: p2p needs at least 2 ranks; this job has " + size);
                return 2;
            }
            PerfReport report = new PerfReport(format, parent.out);
            if (rank == 0) {
                report.header("hcomm perf p2p: ranks 0 <-> 1 of " + size + ", check " + (check ? "on" : "off"),
                        "pingpong: time = one-way latency (round trip / 2), median over round trips",
                        "stream:   rank 0 sends a window of messages, rank 1 acknowledges it; time = window time / messages, median",
                        "algbw = size / time, busbw = algbw (point to point), GB/s = 1e9 B/s");
            }
            long wrong = 0;
            if (rank <= 1) {
                for (P2pTest t : plan) {
                    if (rank == 0) parent.err.println(progress(t));
                    P2pBench.Result r = t.algo() == P2pAlgo.PINGPONG
                            ? P2pBench.pingpong(comm, t.bytes(), t.iters(), t.warmup(), check)
                            : P2pBench.stream(comm, t.bytes(), t.window(), t.iters(), t.warmup(), check);
                    if (rank == 0) {
                        report.row(new PerfReport.Row("p2p", t.algo().name().toLowerCase(Locale.ROOT), size, r.bytes(),
                                r.bytes(), "int8", "none", -1, r.timeUs(), r.algbwGBs(), r.algbwGBs(), r.wrong()));
                        wrong += Math.max(0, r.wrong());
                    }
                }
            }
            if (wrong > 0) {
                parent.err.println("hcomm perf: the check found " + wrong + " wrong bytes");
                return 1;
            }
            return 0;
        }
    }

    private static String progress(P2pTest t) {
        return t.algo() == P2pAlgo.PINGPONG
                ? String.format(Locale.ROOT, "# p2p pingpong %s: %d warmup + %d round trips", P2pBench.human(t.bytes()), t.warmup(), t.iters())
                : String.format(Locale.ROOT, "# p2p stream %s: %d warmup + %d windows of %d messages", P2pBench.human(t.bytes()),
                        t.warmup(), t.iters(), t.window());
    }
}
