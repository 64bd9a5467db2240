package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Topology;
import io.hcomm4j.algo.LinkProbe;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.algo.Tuner.Algo;
import io.hcomm4j.algo.Tuner.Op;
import io.hcomm4j.algo.TuningTable;
import io.hcomm4j.cli.CollectiveBench.Coll;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code hcomm tune}: measures, on the job's own links, every algorithm of the collectives that have a choice at a
 * sweep of sizes, and writes the tuning table ({@link TuningTable}) that {@code HCOMM_TUNING_FILE} loads: per size
 * class the fastest algorithm, and the links' α and β (ping-pong and stream between two ranks of different hosts, and
 * of one host). Outside a job it starts {@code -n} local ranks like {@code hcomm perf}; inside one it is one rank and
 * rank 0 writes the file (an entry of the same topology already in it is replaced, the others kept).
 */
@Command(name = "tune", sortOptions = false, usageHelpAutoWidth = true, mixinStandardHelpOptions = true,
        versionProvider = HcommCli.Version.class,
        description = {"Measures every algorithm of allreduce, broadcast, allgather, reducescatter and alltoall at a sweep"
                + " of sizes on this job's links, and writes the table HCOMM_TUNING_FILE loads: per size the fastest"
                + " algorithm, and the links' alpha and beta.",
                "Started on its own it runs -n ranks on this machine; inside a job (hcomm launch, torchrun, mpirun, srun)"
                        + " it is one rank, and rank 0 writes the file. Prints, per op and size, each algorithm's time, the"
                        + " table's choice and the built-in model's, and how much faster the table's choice measured."})
final class TuneCommand implements Callable<Integer> {
    /** The collectives with more than one algorithm. */
    static final List<Op> OPS = List.of(Op.ALLREDUCE, Op.BROADCAST, Op.ALLGATHER, Op.REDUCESCATTER, Op.ALLTOALL);

    @ParentCommand
    HcommCli parent;

    @Spec
    CommandSpec spec;

    @Option(names = "-n", paramLabel = "N", defaultValue = "2",
            description = "Ranks to start on this machine (default: ${DEFAULT-VALUE}); ignored inside a job.")
    int ranks;

    @Option(names = {"-o", "--output"}, paramLabel = "FILE", defaultValue = "hcomm-tuning.json",
            description = "The table to write (default: ${DEFAULT-VALUE}); an entry of the same topology in it is replaced.")
    Path output;

    @Option(names = "--ops", paramLabel = "OPS", split = ",", description = "Which collectives (default: all five).")
    List<String> ops;

    @Option(names = {"-b", "--minbytes"}, paramLabel = "SIZE", defaultValue = "8", converter = HcommCli.SizeConverter.class,
            description = "Smallest size (default: ${DEFAULT-VALUE}).")
    long minBytes;

    @Option(names = {"-e", "--maxbytes"}, paramLabel = "SIZE", defaultValue = "16M", converter = HcommCli.SizeConverter.class,
            description = "Largest size (default: ${DEFAULT-VALUE}).")
    long maxBytes;

    @Option(names = {"-f", "--stepfactor"}, paramLabel = "F", defaultValue = "8",
            description = "Factor between sizes (default: ${DEFAULT-VALUE}).")
    int factor;

    @Option(names = "--warmup", paramLabel = "TIME", defaultValue = "20s", converter = HcommCli.DurationConverter.class,
            description = "At most this long warming the JIT up before measuring: the library's warm-up (every collective"
                    + " on every path), then at most a second per algorithm (default: ${DEFAULT-VALUE}; 0 for none, and the"
                    + " first rounds then carry the compiler's time).")
    Duration warmup;

    @Option(names = "--cpu-bind", paramLabel = "HOW", defaultValue = "auto", converter = LaunchCommand.CpuBindConverter.class,
            description = "With -n: auto (default) or none, as hcomm perf.")
    LocalLauncher.CpuBind cpuBind = LocalLauncher.CpuBind.AUTO;

    @Override
    public Integer call() {
        List<Op> chosen;
        long[] sizes;
        try {
            chosen = ops(ops);
            sizes = sizes(minBytes, maxBytes, factor);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        Optional<JobEnv> job = JobEnv.detect(parent.env);
        int n = job.map(JobEnv::worldSize).orElse(ranks);
        if (n < 2) {
            String why = "tune needs at least 2 ranks (-n 2), not " + n;
            if (job.isEmpty()) throw new ParameterException(spec.commandLine(), why);
            parent.err.println("hcomm tune: " + why);
            return 2;
        }
        if (job.isPresent()) return runAsRank(chosen, sizes);
        LocalLauncher launcher = new LocalLauncher("hcomm tune", parent.out, parent.err).rank0StdoutRaw(true).cpuBind(cpuBind);
        List<String> args = new ArrayList<>(List.of("tune", "-o", output.toAbsolutePath().toString(),
                "-b", Long.toString(minBytes), "-e", Long.toString(maxBytes), "-f", Integer.toString(factor),
                "--warmup", warmup.toNanos() + "ns"));
        if (ops != null) args.addAll(List.of("--ops", String.join(",", ops)));
        return launcher.runJava(ranks, HcommCli.class.getName(), args);
    }

    static List<Op> ops(List<String> names) {
        if (names == null || names.isEmpty()) return OPS;
        List<Op> out = new ArrayList<>();
        for (String s : names) {
            Op op = OPS.stream().filter(o -> Tuner.name(o).equals(s.trim().toLowerCase(Locale.ROOT))).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("--ops: '" + s + "' is not one of "
                            + OPS.stream().map(Tuner::name).toList() + " (the collectives with a choice of algorithm)"));
            if (!out.contains(op)) out.add(op);
        }
        return out;
    }

    static long[] sizes(long min, long max, int factor) {
        if (min < 1) throw new IllegalArgumentException("--minbytes must be >= 1, was " + min);
        if (max < min) throw new IllegalArgumentException("--maxbytes " + max + " is below --minbytes " + min);
        if (factor < 2) throw new IllegalArgumentException("--stepfactor must be >= 2, was " + factor);
        List<Long> l = new ArrayList<>();
        for (long s = min; s <= max; s = s > Long.MAX_VALUE / factor ? Long.MAX_VALUE : s * factor) {
            l.add(s);
            if (s == Long.MAX_VALUE) break;
        }
        return l.stream().mapToLong(Long::longValue).toArray();
    }

    private static Coll coll(Op op) {
        return switch (op) {
            case ALLREDUCE -> Coll.ALLREDUCE;
            case BROADCAST -> Coll.BROADCAST;
            case ALLGATHER -> Coll.ALLGATHER;
            case REDUCESCATTER -> Coll.REDUCESCATTER;
            case ALLTOALL -> Coll.ALLTOALL;
            default -> throw new IllegalArgumentException(Tuner.name(op));
        };
    }

    /** Time of each link probe: half a second (the table is measured once; init's own probe takes 50 ms). */
    static final long PROBE_NANOS = 500_000_000L;

    /** Rounds of each size, the algorithms in turn. */
    static final int ROUNDS = 3;
    /** How much faster than the model's choice another algorithm must be, its slowest round against the model's fastest. */
    static final double MARGIN = 0.10;

    /**
     * The algorithm for size {@code k}: the one with the fastest round, if even its slowest round beat the model's
     * fastest by {@link #MARGIN}; else the model's. A lead that does not exceed the spread between rounds is noise:
     * with more ranks than cores the same algorithm at the same size took 610-3,631 µs from round to round, and a rule
     * comparing round by round (10 % in each of three) chose all-reduce ring at 256 KiB on 4 ranks from such noise and
     * then ran 0.78-0.91x the model's speed. On 2 ranks ring and halving-doubling are one exchange and differ by noise:
     * the table then keeps what runs without it.
     */
    static Algo choose(Map<Algo, double[][]> rounds, int k, Algo model) {
        Algo best = null;
        double bt = Double.MAX_VALUE;
        for (Map.Entry<Algo, double[][]> e : rounds.entrySet()) {
            double t = min(e.getValue()[k]);
            if (t < bt) {
                bt = t;
                best = e.getKey();
            }
        }
        double[][] m = rounds.get(model);
        if (m == null || best == model) return best;
        return max(rounds.get(best)[k]) < min(m[k]) * (1 - MARGIN) ? best : model;
    }

    static double max(double[] v) {
        double m = -Double.MAX_VALUE;
        for (double x : v) m = Math.max(m, x);
        return m;
    }

    static double min(double[] v) {
        double m = Double.MAX_VALUE;
        for (double x : v) m = Math.min(m, x);
        return m;
    }

    /** The built-in model (what runs without a table), for the report and the ties. */
    private static Tuner model(String within) {
        return new Tuner(Tuner.LinkCost.TCP_LOOPBACK, within.equals("tcp") ? Tuner.LinkCost.TCP_LOOPBACK : Tuner.LinkCost.SHM,
                Map.of());
    }

    /**
     * The JIT compiles an algorithm's path on its first few thousand calls: untimed calls at the smallest size (a
     * second at most) and a few at a middle one, so the first algorithm measured does not carry the compiler's time.
     */
    private static void warmUp(Communicator comm, Op op, Algo a, long[] sizes, Duration budget) {
        if (budget.isZero()) return;
        try {
            Tuner.forceForTuning(op, a);
            long small = sizes[0];
            long mid = Math.min(sizes[sizes.length - 1], 64L << 10);
            long end = System.nanoTime() + Math.min(1_000_000_000L, budget.toNanos());
            int calls = 0;
            // every rank runs the same number of calls: rank 0's clock decides, told with each batch's barrier-like op
            while (true) {
                CollectiveBench.run(comm, new CollectiveBench.Test(coll(op), small, DataType.FLOAT32, ReduceOp.SUM, 0, 200, 0), false);
                calls += 200;
                if (calls >= 3000 || !stillTime(comm, end)) break;
            }
            CollectiveBench.run(comm, new CollectiveBench.Test(coll(op), mid, DataType.FLOAT32, ReduceOp.SUM, 0, 50, 0), false);
        } finally {
            Tuner.forceForTuning(op, null);
        }
    }

    /** Rank 0's answer to "before {@code end}?", the same on every rank. */
    private static boolean stillTime(Communicator comm, long end) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment flag = arena.allocate(4);
            if (comm.rank() == 0) flag.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, System.nanoTime() - end < 0 ? 1 : 0);
            comm.broadcast(flag, 1, DataType.INT32, 0);
            return flag.get(java.lang.foreign.ValueLayout.JAVA_INT, 0) == 1;
        }
    }

    /** Calls per measurement: 64 MiB worth within [10, 1000], and a fifth of that (at least 3) untimed first. */
    static int iters(long bytes) {
        return (int) Math.max(10, Math.min(1000, (64L << 20) / Math.max(1, bytes)));
    }

    private int runAsRank(List<Op> chosen, long[] sizes) {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            Topology topo = comm.topology();
            Tuner.Shape shape = Tuner.Shape.of(topo);
            // as the session's tuner names the links within a host (SessionTuning), from the session's own settings
            String within = hcomm.config().transport().sharedMemoryWithinHost() ? "shm" : "tcp";
            if (!warmup.isZero()) comm.warmUp(warmup);
            LinkProbe.Result between = LinkProbe.between(comm, topo, PROBE_NANOS);
            LinkProbe.Result local = LinkProbe.within(comm, topo, PROBE_NANOS);
            Map<Op, Map<Algo, double[][]>> measured = new EnumMap<>(Op.class);
            long wrong = 0;
            Tuner model = model(within);
            for (Op op : chosen) {
                List<Algo> algos = new ArrayList<>();
                for (Algo a : Tuner.SERVES.get(op)) if (a != Algo.HIERARCHICAL || shape.multiLevel()) algos.add(a);
                for (Algo a : algos) warmUp(comm, op, a, sizes, warmup);
                Map<Algo, double[][]> rounds = new LinkedHashMap<>();
                for (Algo a : algos) rounds.put(a, new double[sizes.length][ROUNDS]);
                // size by size, the algorithms in turn, ROUNDS times: what drifts on a shared machine drifts for all of
                // them alike, and the fastest of a size's rounds is its time (a stall is noise, not the algorithm)
                for (int k = 0; k < sizes.length; k++) {
                    int it = iters(sizes[k]);
                    CollectiveBench.Test test = new CollectiveBench.Test(coll(op), sizes[k], DataType.FLOAT32, ReduceOp.SUM, 0,
                            it, Math.max(3, it / 5));
                    for (int round = 0; round < ROUNDS; round++) {
                        for (Algo a : algos) {
                            CollectiveBench.Result r;
                            try {
                                Tuner.forceForTuning(op, a);
                                r = CollectiveBench.combine(comm, CollectiveBench.run(comm, test, true));
                            } finally {
                                Tuner.forceForTuning(op, null);
                            }
                            rounds.get(a)[k][round] = r.timeUs() * 1e-6;
                            if (comm.rank() == 0 && r.wrong() > 0) {
                                wrong += r.wrong();
                                parent.err.println("hcomm tune: " + Tuner.name(op) + " " + Tuner.name(a) + " at " + sizes[k]
                                        + " bytes: " + r.wrong() + " wrong elements");
                            }
                        }
                    }
                }
                if (comm.rank() == 0) parent.err.println("# measured " + Tuner.name(op) + ": " + algos.stream().map(Tuner::name).toList());
                measured.put(op, rounds);
            }
            comm.barrier();
            if (comm.rank() != 0) return 0;
            if (wrong > 0) return 1;
            Map<Op, List<TuningTable.Step>> choices = new EnumMap<>(Op.class);
            Map<Op, Map<Algo, double[]>> fastest = new EnumMap<>(Op.class);
            for (Map.Entry<Op, Map<Algo, double[][]>> e : measured.entrySet()) {
                Algo[] choice = new Algo[sizes.length];
                for (int k = 0; k < sizes.length; k++) choice[k] = choose(e.getValue(), k, model.choose(e.getKey(), sizes[k], shape));
                choices.put(e.getKey(), TuningTable.steps(sizes, choice));
                Map<Algo, double[]> best = new LinkedHashMap<>();
                e.getValue().forEach((a, t) -> best.put(a, java.util.Arrays.stream(t).mapToDouble(TuneCommand::min).toArray()));
                fastest.put(e.getKey(), best);
            }
            TuningTable.Signature base = TuningTable.Signature.of(shape, within, "tcp");
            TuningTable.Signature sig = new TuningTable.Signature(base.ranks(), base.hosts(), base.minPerHost(),
                    base.maxPerHost(), base.within(), base.between(), between == null ? 0 : between.gbps());
            TuningTable.Entry entry = new TuningTable.Entry(sig, between == null ? null : between.cost(),
                    local == null ? null : local.cost(), choices, sizes, fastest);
            TuningTable table = merge(output, entry);
            Files.writeString(output, table.toJson());
            report(shape, within, entry, between, local);
            parent.out.println("# wrote " + output + " (fingerprint " + TuningTable.read(output).fingerprint()
                    + "): HCOMM_TUNING_FILE=" + output + " makes every rank of a job of this shape use it");
            return 0;
        } catch (IOException e) {
            parent.err.println("hcomm tune: cannot write " + output + ": " + e);
            return 1;
        }
    }

    /** The table in {@code file} (if any) with {@code entry} in place of one of the same topology. */
    static TuningTable merge(Path file, TuningTable.Entry entry) {
        List<TuningTable.Entry> entries = new ArrayList<>();
        if (Files.exists(file)) {
            for (TuningTable.Entry e : TuningTable.read(file).entries()) {
                if (!e.signature().sameTopology(entry.signature())) entries.add(e);
            }
        }
        entries.add(entry);
        return TuningTable.of(entries);
    }

    private void report(Tuner.Shape shape, String within, TuningTable.Entry entry, LinkProbe.Result between,
                        LinkProbe.Result local) {
        var out = parent.out;
        out.println("# hcomm tune: " + entry.signature());
        if (between != null) out.println("# link between hosts: " + between);
        if (local != null) out.println("# link within a host (" + within + "): " + local);
        Tuner model = model(within);
        for (Map.Entry<Op, Map<Algo, double[]>> e : entry.measured().entrySet()) {
            Op op = e.getKey();
            StringBuilder h = new StringBuilder(String.format(Locale.ROOT, "%12s", "size(B)"));
            for (Algo a : e.getValue().keySet()) h.append(String.format(Locale.ROOT, " %20s", Tuner.name(a) + "(us)"));
            h.append(String.format(Locale.ROOT, " %20s %20s %10s", "table", "model", "model/table"));
            out.println("# " + Tuner.name(op));
            out.println(h);
            long[] sizes = entry.sizes();
            for (int k = 0; k < sizes.length; k++) {
                StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%12d", sizes[k]));
                for (double[] t : e.getValue().values()) row.append(String.format(Locale.ROOT, " %20.2f", t[k] * 1e6));
                Algo tuned = entry.choice(op, sizes[k]);
                Algo byModel = model.choose(op, sizes[k], shape);
                double tt = e.getValue().get(tuned)[k];
                double[] mt = e.getValue().get(byModel);
                row.append(String.format(Locale.ROOT, " %20s %20s %10s", Tuner.name(tuned), Tuner.name(byModel),
                        mt == null ? "-" : String.format(Locale.ROOT, "%.2f", mt[k] / tt)));
                out.println(row);
            }
        }
    }
}
