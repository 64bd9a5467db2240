package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.cli.CollectiveBench.Coll;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
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
        modelTransformer = PerfHelp.class)
final class PerfCommand implements Callable<Integer> {
    /** Every op {@code hcomm perf} measures. */
    static final List<String> OPS = List.of("p2p", "allreduce", "broadcast", "reduce", "allgather", "reducescatter",
            "gather", "scatter", "alltoall", "sendrecv", "allgatherv", "gatherv", "scatterv", "alltoallv",
            "put", "get", "accumulate", "fetch_and_op", "counter", "transfer");

    /** The variable that forces a collective's algorithm: {@code HCOMM_ALGO=allreduce=ring}. */
    static final String ALGO_ENV = "HCOMM_ALGO";

    /** Its system-property form (HCOMM_X is hcomm.x, see CommConfig), which a rank inside a job sets for --algo. */
    static final String ALGO_PROPERTY = "hcomm.algo";

    /** Default sweep of the collectives: 4 KiB to 64 MiB, times 4. */
    static final long DEFAULT_MIN = 4L << 10;
    static final long DEFAULT_MAX = 64L << 20;
    static final int DEFAULT_FACTOR = 4;

    private static final Pattern ALGO_NAME = Pattern.compile("[A-Za-z0-9_.-]+");

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

    @Parameters(index = "0", arity = "0..1", paramLabel = "OP", description = "The op: p2p, allreduce, broadcast, reduce, allgather,"
            + " reducescatter, gather, scatter, alltoall, sendrecv, or a V form: allgatherv, gatherv, scatterv, alltoallv"
            + " (equal counts, displacements at the blocks, as OSU's), or one-sided: put, get, accumulate, fetch_and_op, counter,"
            + " transfer (TransferEngine batches). Without OP, --plot with --compare draws the saved runs alone.")
    String op;

    @Option(names = "-n", paramLabel = "N", defaultValue = "2",
            description = "Ranks to start on this machine (default: ${DEFAULT-VALUE}); ignored inside a job.")
    int ranks;

    @Option(names = {"-b", "--minbytes"}, paramLabel = "SIZE", converter = HcommCli.SizeConverter.class,
            description = "Smallest size of a sweep (4096, 64K, 4M, 1G). Default: by op (collectives: 4K to 64M; the"
                    + " others: in the notes below).")
    Long minBytes;

    @Option(names = {"-e", "--maxbytes"}, paramLabel = "SIZE", converter = HcommCli.SizeConverter.class,
            description = "Largest size of a sweep. Default: by op (collectives: 4K to 64M; the others: in the notes below).")
    Long maxBytes;

    @Option(names = {"-f", "--stepfactor"}, paramLabel = "F",
            description = "Factor between the sizes of a sweep (default: 2; 4 for the collectives' default sizes).")
    Integer factor;

    @Option(names = {"-d", "--dtype"}, paramLabel = "TYPE", defaultValue = "float32", converter = PerfConverters.DataTypeConverter.class,
            description = "Element type of the collectives: int8, uint8, int32, int64, float16, bfloat16, float32,"
                    + " float64 (default: ${DEFAULT-VALUE}).")
    DataType dtype;

    @Option(names = {"-o", "--op"}, paramLabel = "REDOP", defaultValue = "sum", converter = PerfConverters.ReduceOpConverter.class,
            description = "Reduction of allreduce, reduce, reducescatter: sum, prod, min, max, avg (default: ${DEFAULT-VALUE}).")
    ReduceOp redop;

    @Option(names = {"-r", "--root"}, paramLabel = "RANK", defaultValue = "0",
            description = "Root of broadcast, reduce, gather, scatter (default: ${DEFAULT-VALUE}).")
    int root;

    @Option(names = "--algo", paramLabel = "ALGO",
            description = {"Collectives: forces the library's algorithm for the op: the ranks get"
                    + " HCOMM_ALGO=<op>=<ALGO> (e.g. allreduce=ring; init fails on a name the library does not know)."
                    + " Default: the library chooses (algo column: auto, or what HCOMM_ALGO already forces).",
                "p2p: pingpong or stream only (default: both for a sweep, the default sizes otherwise).",
                "transfer: write or read only (default: both)."})
    String algo;

    @Option(names = "--iters", paramLabel = "N",
            description = "Timed iterations per size (p2p pingpong: round trips; stream: windows; counter: per rank)."
                    + " Default: by size (collectives: 4 GiB / size within 20..1000; one-sided: as many as fit in 1 s;"
                    + " counter: 20000).")
    Integer iters;

    @Option(names = {"-w", "--warmup-iters", "--warmup"}, paramLabel = "N",
            description = "Untimed iterations per size before the timed ones (nccl-tests' -w). Default: a function of"
                    + " --iters: collectives iters / 5 within 1..200 (--iters 20: 4); p2p pingpong iters / 10 within"
                    + " 2..1000; stream iters / 4 within 1..500 (100..500 below 64 KiB without --iters); one-sided: 50;"
                    + " transfer: 5.")
    Integer warmup;

    @Option(names = "--jit-warmup", paramLabel = "WHEN", defaultValue = "auto",
            description = "A JIT warm-up before the first size: untimed calls until the JIT has compiled the op's code"
                    + " (collectives: Communicator.warmUp, thousands of calls at 4K, 2 s at 1M; p2p, one-sided,"
                    + " transfer: rounds until no rank compiles, 0.5 to 10 s). auto (default): only when neither --iters"
                    + " nor -w is given, so that a short run stays short; on; off. '# JIT warm-up' lines say what ran"
                    + " and the last line counts the calls made.")
    JitWhen jitWarmup = JitWhen.AUTO;

    /** {@code --jit-warmup}: whether the JIT warm-up runs before the first size. */
    enum JitWhen { AUTO, ON, OFF }

    @Option(names = "--tls",
            description = "With -n: every TCP connection of the ranks (store and data) under TLS 1.3, with a key pair made"
                    + " for the run (as hcomm launch --tls; HCOMM_TLS_* stores if set). Measure it with HCOMM_TRANSPORT=tcp:"
                    + " shared memory is never encrypted.")
    boolean tls;

    @Option(names = "--cpu-bind", paramLabel = "HOW", defaultValue = "auto", converter = LaunchCommand.CpuBindConverter.class,
            description = "With -n: auto (default) runs each rank on CPUs of its own when there are enough, else on one CPU"
                    + " each, round robin (as hcomm launch does; Open MPI's mpirun binds too); none leaves placement to the"
                    + " scheduler.")
    LocalLauncher.CpuBind cpuBind = LocalLauncher.CpuBind.AUTO;

    @Option(names = "--aot-cache", paramLabel = "FILE",
            description = "With -n: rank JVMs start from the JDK's AOT cache FILE, or train it if it does not exist (as"
                    + " hcomm launch --aot-cache).")
    java.nio.file.Path aotCache;

    @Option(names = "--mem", paramLabel = "MEM", defaultValue = "native", converter = PerfConverters.MemConverter.class,
            description = "Collectives' buffers (one-sided: the origin's): native (default; Arena.ofShared() off-heap memory), pool"
                    + " (registered buffers of comm.memory(): same-host ranks read them in place) or heap (Java arrays).")
    CollectiveBench.Mem mem = CollectiveBench.Mem.NATIVE;

    @Option(names = "--window", paramLabel = "HOW", defaultValue = "alloc",
            description = "One-sided ops: alloc (default; allocateWindow: pool memory, which same-host origins map) or create"
                    + " (createWindow over Arena.ofShared() memory: every access through the target's progress engine).")
    RmaBench.WindowKind window = RmaBench.WindowKind.ALLOC;

    @Option(names = "--batch", paramLabel = "N", description = "transfer: ops per batch (default: 64; -b/-e: bytes per op,"
            + " default 1 MiB).")
    Integer batch;

    @Option(names = "--in-place", description = "allreduce: the receive buffer is the send buffer (each call's output is"
            + " the next one's input, as nccl-tests' in-place column); the default is out of place.")
    boolean inPlace;

    @Option(names = "--timing", paramLabel = "HOW", defaultValue = "mean",
            converter = PerfConverters.TimingConverter.class,
            description = "Collectives: mean (default; nccl-tests: calls back to back, loop time / iters, slowest rank)"
                    + " or median (as OSU's benchmarks time, and this project's Open MPI baseline: a barrier before every"
                    + " call, each call timed, the slowest rank's time per call, median over calls).")
    CollectiveBench.Timing timing = CollectiveBench.Timing.MEAN;

    @Option(names = "--cold", description = "Collectives: the first --iters calls (default 1000) of a job that ran nothing"
            + " before, each timed, then the same calls in steady state; fresh JVMs for every size (default sizes 4K, 64K,"
            + " 1M). See --help's notes.")
    boolean cold;

    @Option(names = "--format", paramLabel = "FORMAT", defaultValue = "table",
            description = "table, csv or json (default: ${DEFAULT-VALUE}). A table comes out on stdout with its '#' comment"
                    + " lines (warm-up, progress, transport) in order, as nccl-tests prints it; with csv or json stdout is"
                    + " the CSV or the JSON document alone and the comment lines go to stderr. CSV columns: "
                    + PerfReport.CSV_HEADER + ". The table adds p50, p99 and max (us) per call after algo (collectives,"
                    + " p2p, put, get, accumulate, fetch_and_op, transfer; counter: N/A, its calls are not timed one by"
                    + " one). json: {settings, notes, rows}: the run's settings (op, ranks, transport, memory, in-place,"
                    + " timing, algo, iters, warm-up, JDK, version, date) and every row with the CSV's fields and"
                    + " p50_us, p99_us, max_us. Not with --cold.")
    PerfReport.Format format;

    @Option(names = "--check", description = "Verify the data of one more iteration after the timed ones;"
            + " #wrong counts wrong elements (p2p: bytes) and the exit code is 1 if any.")
    boolean check;

    @Option(names = "--plot", paramLabel = "FILE.png",
            description = "Also draw busbw (GB/s) against size (log2) per op and algo into this PNG (rank 0 writes it).")
    Path plot;

    @Option(names = "--compare", paramLabel = "FILE", split = ",",
            description = "With --plot: saved runs (--format csv or json output) whose lines the plot overlays, each named"
                    + " after its file (a.csv: 'a: allreduce auto'). Without OP only they are drawn. Every file is read"
                    + " before anything runs; one that is not a saved run is a usage error naming it.")
    List<Path> compare;

    /** The saved runs of {@code --compare}, read before the run. */
    private List<PerfRuns.Run> compared = List.of();

    @Override
    public Integer call() {
        if (compare != null) {
            if (plot == null) throw new ParameterException(spec.commandLine(), "--compare needs --plot FILE.png to draw into");
            try {
                compared = compare.stream().map(PerfRuns::read).toList();
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--compare: " + e.getMessage());
            }
            if (op == null) return plotSaved();
        }
        if (op == null) throw new ParameterException(spec.commandLine(), "Missing required parameter: 'OP' (one of "
                + String.join(", ", OPS) + ")");
        if (format == PerfReport.Format.JSON && cold) {
            throw new ParameterException(spec.commandLine(), "--format json does not apply to --cold (table or csv)");
        }
        Coll coll = collective().orElse(null);
        RmaBench.Op rmaOp = RmaBench.Op.of(op).orElse(null);
        List<P2pTest> p2p = null;
        List<CollectiveBench.Test> plan = null;
        List<RmaBench.Test> rma = null;
        List<TransferBench.Test> xfer = null;
        try {
            if (batch != null && !op.equals("transfer")) throw new IllegalArgumentException("--batch applies to transfer only, not to " + op);
            if (window != RmaBench.WindowKind.ALLOC && rmaOp == null) {
                throw new IllegalArgumentException("--window applies to the one-sided ops only, not to " + op);
            }
            if (coll == null && inPlace) throw new IllegalArgumentException("--in-place applies to allreduce only, not to " + op);
            if (cold) checkCold(coll);
            if (op.equals("transfer")) {
                xfer = TransferBench.plan(algo, minBytes, maxBytes, factor, batch, iters, warmup);
            } else if (rmaOp != null) {
                if (algo != null) throw new IllegalArgumentException("--algo does not apply to " + op + " (--window and"
                        + " HCOMM_TRANSPORT choose its path)");
                rma = RmaBench.plan(rmaOp, minBytes, maxBytes, factor, iters, warmup);
            } else if (coll == null) {
                p2p = p2pTests();
            } else {
                plan = collectiveTests();
            }
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        Optional<JobEnv> job = JobEnv.detect(parent.env);
        int n = job.map(JobEnv::worldSize).orElse(ranks);
        int minRanks = coll == null || coll == Coll.SENDRECV ? 2 : 1;
        String tooFew = null;
        if (n < minRanks) {
            tooFew = op + " needs at least " + minRanks + (minRanks == 1 ? " rank" : " ranks") + " (-n " + minRanks + "), not " + n;
        } else if (coll != null && coll.rooted && root >= n) {
            tooFew = "--root " + root + " is out of range for " + n + " ranks";
        }
        if (tooFew != null) {
            if (job.isEmpty()) throw new ParameterException(spec.commandLine(), tooFew);
            parent.err.println("hcomm perf: " + tooFew + " (this job has " + n + ")");
            return 2;
        }
        if (job.isPresent()) return cold ? runColdAsRank(coll, plan.getFirst()) : runAsRank(coll, p2p, plan, rma, xfer);
        LocalLauncher launcher = new LocalLauncher("hcomm perf", parent.out, parent.err).rank0StdoutRaw(true).cpuBind(cpuBind).aotCache(aotCache);
        JobTls jobTls;
        try {
            jobTls = JobTls.choose(tls, parent.env, 1, JobFile.directory(parent.env));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        } catch (java.io.IOException e) {
            parent.err.println("hcomm perf: cannot make the job's TLS keys: " + e.getMessage());
            return 1;
        }
        try (jobTls) {
            Map<String, String> rankEnv = new java.util.HashMap<>(jobTls.rankVariables());
            if (coll != null && algo != null) rankEnv.put(ALGO_ENV, coll.cliName() + "=" + algo);
            launcher.environment(rankEnv).tls(jobTls.config()).storeHost(LocalLauncher.tcpStore(jobTls.config()));
            if (!cold) return launcher.runJava(ranks, HcommCli.class.getName(), rankArgs());
            return ColdBench.launch(launcher, ranks, plan, rankArgs(), format == PerfReport.Format.CSV, parent.out,
                    op, typeName(dtype) + " " + opName(redop) + ", " + mem.name().toLowerCase(Locale.ROOT) + " memory", warmUpSetting());
        }
    }

    /** The ranks' {@code HCOMM_WARMUP} (they inherit this process's environment), or null when unset or zero. */
    private String warmUpSetting() {
        String v = parent.env.get("HCOMM_WARMUP");
        return v == null || v.isBlank() || v.trim().matches("0+(us|ms|s|m|h)?") ? null : v.trim();
    }

    private void checkCold(Coll coll) {
        if (coll == null) throw new IllegalArgumentException("--cold applies to the collectives, not to " + op);
        if (warmup != null) throw new IllegalArgumentException("--cold runs no warm-up before its first call: drop --warmup-iters (-w)");
        if (jitWarmup == JitWhen.ON) throw new IllegalArgumentException("--cold runs no warm-up before its first call: drop --jit-warmup on");
        if (timing != CollectiveBench.Timing.MEAN) throw new IllegalArgumentException("--cold times every call on its own: drop --timing");
        if (plot != null) throw new IllegalArgumentException("--plot does not apply to --cold");
    }

    /** One size of {@code --cold} on this rank: no JIT warm-up, no header (the launcher printed it). */
    private int runColdAsRank(Coll coll, CollectiveBench.Test t) {
        if (coll != null && algo != null) System.setProperty(ALGO_PROPERTY, coll.cliName() + "=" + algo);
        return ColdBench.runAsRank(t, check, format == PerfReport.Format.CSV, parent.out);
    }

    /** The collective {@link #op} names, or empty for p2p and the one-sided ops; a usage error for an unknown op. */
    private Optional<Coll> collective() {
        if (op.equals("p2p") || op.equals("transfer") || RmaBench.Op.of(op).isPresent()) return Optional.empty();
        return Optional.of(Coll.of(op).orElseThrow(() -> new ParameterException(spec.commandLine(),
                "Unknown op '" + op + "': one of " + String.join(", ", OPS))));
    }

    /** The p2p plan these options give. */
    List<P2pTest> p2pTests() {
        return PerfPlan.p2pPlan(minBytes, maxBytes, factor != null ? factor : 2, PerfPlan.p2pAlgo(algo), iters, warmup);
    }

    /** The collective plan these options give (the op must be a collective). */
    List<CollectiveBench.Test> collectiveTests() {
        Coll coll = Coll.of(op).orElseThrow();
        if (algo != null) {
            if (coll == Coll.SENDRECV) {
                throw new IllegalArgumentException("--algo does not apply to sendrecv (point-to-point, no algorithm to choose)");
            }
            if (coll.isV()) {
                throw new IllegalArgumentException("--algo does not apply to " + coll.cliName() + " (HCOMM_ALGO names the plain"
                        + " collectives; the V forms take the zero-copy path on one host, else their one algorithm)");
            }
            if (!ALGO_NAME.matcher(algo).matches()) {
                throw new IllegalArgumentException("--algo '" + algo + "' is not an algorithm name (letters, digits, _ . -)");
            }
        }
        if (root < 0) throw new IllegalArgumentException("--root must be >= 0, was " + root);
        Long lo = minBytes;
        Long hi = maxBytes;
        Integer f = factor;
        Integer n = iters;
        if (cold) { // issue 13's sizes: 4K, 64K, 1M; the first 1,000 calls
            if (lo == null && hi == null) {
                lo = 4096L;
                hi = 1L << 20;
                if (f == null) f = 16;
            }
            if (n == null) n = 1000;
        }
        return PerfPlan.collectivePlan(coll, lo, hi, f, dtype, redop, root, n, warmup).stream()
                .map(t -> new CollectiveBench.Test(t.coll(), t.bytes(), t.type(), t.op(), t.root(), t.iters(), t.warmup(), mem,
                        inPlace))
                .toList();
    }

    /** The arguments of the rank JVMs: this command without {@code -n}. */
    List<String> rankArgs() {
        List<String> args = new ArrayList<>(List.of("perf", op, "--format", format.name().toLowerCase(Locale.ROOT)));
        if (minBytes != null) args.addAll(List.of("-b", Long.toString(minBytes)));
        if (maxBytes != null) args.addAll(List.of("-e", Long.toString(maxBytes)));
        if (factor != null) args.addAll(List.of("-f", Integer.toString(factor)));
        if (algo != null) args.addAll(List.of("--algo", algo));
        if (iters != null) args.addAll(List.of("--iters", Integer.toString(iters)));
        if (warmup != null) args.addAll(List.of("--warmup", Integer.toString(warmup)));
        if (jitWarmup != JitWhen.AUTO) args.addAll(List.of("--jit-warmup", jitWarmup.name().toLowerCase(Locale.ROOT)));
        if (check) args.add("--check");
        if (inPlace) args.add("--in-place");
        if (cold) args.add("--cold");
        if (timing != CollectiveBench.Timing.MEAN) args.addAll(List.of("--timing", timing.name().toLowerCase(Locale.ROOT)));
        if (mem != CollectiveBench.Mem.NATIVE) args.addAll(List.of("--mem", mem.name().toLowerCase(Locale.ROOT)));
        if (batch != null) args.addAll(List.of("--batch", Integer.toString(batch)));
        if (window != RmaBench.WindowKind.ALLOC) args.addAll(List.of("--window", window.name().toLowerCase(Locale.ROOT)));
        if (!op.equals("p2p") && !op.equals("transfer") && RmaBench.Op.of(op).isEmpty()) {
            args.addAll(List.of("--dtype", typeName(dtype), "--op", opName(redop), "--root", Integer.toString(root)));
        }
        if (plot != null) args.addAll(List.of("--plot", plot.toAbsolutePath().toString()));
        if (compare != null) {
            args.addAll(List.of("--compare", String.join(",", compare.stream().map(p -> p.toAbsolutePath().toString()).toList())));
        }
        return args;
    }

    /** Runs the plan as this process's rank of the job; rank 0 prints. */
    private int runAsRank(Coll coll, List<P2pTest> p2p, List<CollectiveBench.Test> plan, List<RmaBench.Test> rma,
                          List<TransferBench.Test> xfer) {
        // Inside a job this process cannot change its own environment: the property form of HCOMM_ALGO forces the
        // algorithm the same way (a rank started by this command's launcher has both, with the same value).
        if (coll != null && algo != null) System.setProperty(ALGO_PROPERTY, coll.cliName() + "=" + algo);
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            PerfReport report = comm.rank() == 0 ? new PerfReport(format, parent.out) : null;
            List<PerfReport.Row> rows = xfer != null
                    ? TransferBench.run(comm, xfer, mem, check, jitWarmUp(), r -> "hcomm-perf-rank-" + r, report, notes())
                    : rma != null
                    ? RmaBench.run(comm, rma, window, mem, check, jitWarmUp(), hcomm::transportTo, report, notes())
                    : coll == null
                    ? runP2p(comm, p2p, report)
                    : CollectiveSweep.run(comm, plan, jitWarmUp() ? CollectiveSweep.JIT_WARMUP_CALLS : 0, check,
                            algoLabel(coll, algo, parent.env), report, notes(), timing, CollectiveSweep.JIT_WARMUP_BUDGET);
            // looked at before a barrier: rank 1 may not close its connections until rank 0 has looked
            String via = comm.rank() == 0 && comm.size() > 1 ? hcomm.transportTo(1) : null;
            List<Hcomm.Link> links = comm.rank() == 0 && comm.size() > 1 ? hcomm.linksTo(1) : List.of();
            String choices = comm.rank() == 0 && coll != null ? CollectiveSweep.tunerChoices(hcomm, coll, plan) : null;
            comm.barrier();
            if (comm.rank() != 0) return 0;
            if (via != null) notes().println("# transport to rank 1: " + via + " (HCOMM_TRANSPORT)");
            printLinks(links);
            if (choices != null) notes().println(choices);
            report.finish(PerfJson.settings(this, coll, comm.size(), via));
            if (plot != null) {
                try {
                    PerfPlot.write(plot, rma != null || xfer != null ? "hcomm perf " + op + ", " + comm.size() + " ranks, " + rows.getFirst().algo()
                            : plotTitle(coll, comm.size()), rows, compared);
                } catch (IOException | RuntimeException e) {
                    parent.err.println("hcomm perf: cannot write the plot " + plot + ": " + e);
                    return 1;
                }
            }
            long wrong = rows.stream().mapToLong(r -> Math.max(0, r.wrong())).sum();
            if (wrong > 0) {
                parent.err.println("hcomm perf: the check found " + wrong + (p2p != null || xfer != null ? " wrong bytes" : " wrong elements"));
                return 1;
            }
            return 0;
        }
    }

    /** {@code --plot FILE.png --compare A,B} without OP: the saved runs alone. */
    private int plotSaved() {
        try {
            PerfPlot.write(plot, "hcomm perf: " + String.join(" vs ", compared.stream().map(PerfRuns.Run::label).toList()),
                    List.of(), compared);
        } catch (IOException | RuntimeException e) {
            parent.err.println("hcomm perf: cannot write the plot " + plot + ": " + e);
            return 1;
        }
        parent.err.println("hcomm perf: wrote " + plot + " (" + compared.size() + " saved runs)");
        return 0;
    }

    private String plotTitle(Coll coll, int n) {
        if (coll == null) return "hcomm perf p2p, ranks 0 <-> 1";
        return "hcomm perf " + coll.cliName() + ", " + n + " ranks, " + typeName(dtype) + (coll.reduces ? ", " + opName(redop) : "");
    }

    /**
     * Rank 0's TCP connections to rank 1, when it has several (HCOMM_SOCKET_IFNAME=a,b, HCOMM_CHANNELS): the route of
     * each, the share of the chunk bytes it carried (the striping weights its throughput earned) and the rate its
     * acknowledgements measured last.
     */
    private void printLinks(List<Hcomm.Link> links) {
        if (links.size() < 2) return;
        long total = 0;
        for (Hcomm.Link l : links) total += l.bytes();
        for (Hcomm.Link l : links) {
            String probe = l.roundTripNanos() == 0 ? "" : String.format(java.util.Locale.ROOT, ", 4 KiB probe round trip %.3f ms",
                    l.roundTripNanos() / 1e6);
            String unsent = l.unsentBytes() == 0 ? "" : String.format(java.util.Locale.ROOT, ", at most %d KiB unsent in the socket",
                    l.unsentBytes() >> 10);
            String congestion = l.congestion().isEmpty() ? "" : ", congestion control " + l.congestion();
            notes().printf(java.util.Locale.ROOT, "# link %d to rank 1: %s %s, %.1f%% of the chunk bytes, measured %.1f MB/s%s%s%s%n",
                    l.index(), l.kind(), l.route(), total == 0 ? 0.0 : 100.0 * l.bytes() / total, l.bytesPerSecond() / 1e6, probe,
                    unsent, congestion);
        }
    }

    /**
     * The algo column of a collective: {@code --algo}, else what {@code HCOMM_ALGO} of {@code env} forces for the op
     * (entries {@code op=algo}, separated by commas, semicolons or spaces), else {@code auto}.
     */
    static String algoLabel(Coll coll, String algo, Map<String, String> env) {
        if (coll == Coll.SENDRECV) return "p2p";
        if (algo != null) return algo;
        String forced = env.get(ALGO_ENV);
        if (forced != null) {
            for (String entry : forced.trim().split("[,;\\s]+")) {
                int eq = entry.indexOf('=');
                if (eq > 0 && entry.substring(0, eq).trim().equalsIgnoreCase(coll.cliName())) {
                    String name = entry.substring(eq + 1).trim();
                    if (!name.isEmpty()) return name;
                }
            }
        }
        return "auto";
    }

    /**
     * Where rank 0 prints its comment lines ({@code # ...}: warm-up, progress, transport, tuner): with the table, on
     * stdout between its rows, one stream in the order written, as nccl-tests prints them (under the launcher, rank
     * 0's stdout is copied without a prefix, its stderr with one, and two streams would interleave anyhow); with CSV
     * on stderr, so that stdout stays the CSV alone.
     */
    private java.io.PrintStream notes() {
        return format == PerfReport.Format.TABLE ? parent.out : parent.err;
    }

    /**
     * Whether the JIT warm-up runs before the first size: {@code --jit-warmup on} or {@code off}, and with {@code auto}
     * only when the user gave neither {@code --iters} nor {@code -w}. Those ask for a number of calls, and a warm-up of
     * thousands of calls or seconds in front of {@code --iters 20} is not what anyone asking for 20 expects.
     */
    boolean jitWarmUp() {
        return switch (jitWarmup) {
            case ON -> true;
            case OFF -> false;
            case AUTO -> iters == null && warmup == null;
        };
    }

    /** The p2p plan on this rank (ranks 0 and 1 measure, the others wait); rank 0 prints and returns the rows. */
    private List<PerfReport.Row> runP2p(Communicator comm, List<P2pTest> plan, PerfReport report) {
        int rank = comm.rank();
        int size = comm.size();
        if (rank == 0) {
            report.header("hcomm perf p2p: ranks 0 <-> 1 of " + size + ", check " + (check ? "on" : "off"),
                    "pingpong: time = one-way latency (round trip / 2), median over round trips",
                    "stream:   rank 0 sends a window of messages, rank 1 acknowledges it; time = window time / messages, median",
                    "algbw = size / time, busbw = algbw (point to point), GB/s = 1e9 B/s");
        }
        List<PerfReport.Row> rows = new ArrayList<>();
        if (rank > 1) return rows;
        if (jitWarmUp() && !plan.isEmpty()) {
            // 8 B round trips until neither rank's JIT compiled anything in the last round (JitWarmUp)
            String line = JitWarmUp.run(comm, 2, () -> P2pBench.pingpong(comm, 8, JitWarmUp.CHUNK, 0, false), "round trips of 8 B");
            if (rank == 0) notes().println(line);
        } else if (rank == 0) {
            notes().println(JitWarmUp.NONE);
        }
        for (P2pTest t : plan) {
            if (rank == 0) notes().println(progress(t));
            P2pBench.Result r = t.algo() == P2pAlgo.PINGPONG
                    ? P2pBench.pingpong(comm, t.bytes(), t.iters(), t.warmup(), check)
                    : P2pBench.stream(comm, t.bytes(), t.window(), t.iters(), t.warmup(), check);
            if (rank == 0) {
                PerfReport.Row row = new PerfReport.Row("p2p", t.algo().name().toLowerCase(Locale.ROOT), size, r.bytes(),
                        r.bytes(), "int8", "none", -1, r.timeUs(), r.algbwGBs(), r.algbwGBs(), r.wrong()).withTails(r.tailsUs());
                report.row(row);
                rows.add(row);
            }
        }
        return rows;
    }

    private static String progress(P2pTest t) {
        return t.algo() == P2pAlgo.PINGPONG
                ? String.format(Locale.ROOT, "# p2p pingpong %s: %d warmup + %d round trips", P2pBench.human(t.bytes()), t.warmup(), t.iters())
                : String.format(Locale.ROOT, "# p2p stream %s: %d warmup + %d windows of %d messages", P2pBench.human(t.bytes()),
                        t.warmup(), t.iters(), t.window());
    }

    /** The command-line name of a type: {@code float32}, {@code bfloat16} ... */
    static String typeName(DataType type) {
        return type.name().toLowerCase(Locale.ROOT);
    }

    /** The command-line name of a reduction: {@code sum} ... */
    static String opName(ReduceOp op) {
        return op.name().toLowerCase(Locale.ROOT);
    }
}
