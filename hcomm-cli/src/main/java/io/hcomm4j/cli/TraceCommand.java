package io.hcomm4j.cli;

import io.hcomm4j.monitor.TraceAnalysis;
import io.hcomm4j.monitor.TraceDump;
import io.hcomm4j.monitor.TraceEntry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code hcomm trace DIR}: reads every rank's flight record and names where the ranks part ways. */
@Command(name = "trace", sortOptions = false, usageHelpAutoWidth = true, mixinStandardHelpOptions = true,
        versionProvider = HcommCli.Version.class,
        description = {
            "Reads the flight records the ranks of a job wrote (hcomm-trace-rank<R>.json: on a timeout, an abort,"
                    + " comm.dumpTrace or hcomm status --dump) and says, per communicator, the first collective where the"
                    + " ranks part ways: a mismatch (ranks called another op or other arguments there), ranks that are"
                    + " behind (never called it, and what they do instead), or an op some ranks have not finished; then"
                    + " point-to-point ops that had not ended.",
            "Without DIR it reads the folder of the newest job hcomm launch ran on this machine (trace-<pid> beside the"
                    + " job files).",
            "Exit status: 0 the records agree, 1 they show a divergence or pending ops, 2 no records could be read.",
            "",
        },
        footer = {
            "",
            "Examples:",
            "  hcomm trace /tmp/hcomm-trace               # HCOMM_TRACE_DIR's default",
            "  hcomm trace --last 20 ./dumps              # and each rank's last 20 ops",
        })
final class TraceCommand implements Callable<Integer> {
    private static final Pattern FILE = Pattern.compile("hcomm-trace-rank(\\d+)\\.json");

    @ParentCommand
    HcommCli parent;

    @Spec
    CommandSpec spec;

    @Parameters(arity = "0..1", paramLabel = "DIR", description = "The folder of the dumps (default: the newest local job's).")
    Path dir;

    @Option(names = "--last", paramLabel = "N", defaultValue = "0",
            description = "Also print each rank's last N ops per communicator (default: ${DEFAULT-VALUE}).")
    int last;

    @Override
    public Integer call() {
        if (last < 0) throw new ParameterException(spec.commandLine(), "--last must be >= 0, was " + last);
        Path folder = dir != null ? dir : newestJobFolder();
        if (!Files.isDirectory(folder)) {
            parent.err.println("hcomm trace: " + folder + " is not a folder");
            return 2;
        }
        List<TraceDump> dumps = new ArrayList<>();
        try (Stream<Path> files = Files.list(folder)) {
            List<Path> sorted = files.filter(p -> FILE.matcher(p.getFileName().toString()).matches())
                    .sorted(Comparator.comparingInt(TraceCommand::rankOf)).toList();
            for (Path f : sorted) {
                try {
                    dumps.add(TraceDump.parse(Files.readString(f)));
                } catch (IOException | IllegalArgumentException | ClassCastException e) {
                    parent.err.println("hcomm trace: skipped " + f + ": " + e.getMessage());
                }
            }
        } catch (IOException e) {
            parent.err.println("hcomm trace: cannot list " + folder + ": " + e.getMessage());
            return 2;
        }
        if (dumps.isEmpty()) {
            parent.err.println("hcomm trace: no flight records (hcomm-trace-rank<R>.json) in " + folder);
            return 2;
        }
        int worldSize = dumps.getFirst().worldSize();
        parent.out.println(dumps.size() + " of " + worldSize + " ranks' flight records in " + folder + ":");
        List<Integer> missing = new ArrayList<>();
        for (int r = 0; r < worldSize; r++) {
            int rank = r;
            if (dumps.stream().noneMatch(d -> d.rank() == rank)) missing.add(r);
        }
        for (TraceDump d : dumps) {
            long ops = d.comms().stream().mapToLong(c -> c.entries().size()).sum();
            parent.out.printf("  rank %d (pid %d on %s) at %s: %s; %d communicator(s), %d ops kept%n", d.rank(), d.pid(), d.host(),
                    java.time.Instant.ofEpochMilli(d.dumpedAtMillis()), d.reason(), d.comms().size(), ops);
        }
        if (!missing.isEmpty()) parent.out.println("  no record from rank(s) " + missing);
        if (last > 0) printLast(dumps);
        TraceAnalysis a = TraceAnalysis.of(dumps);
        parent.out.println();
        parent.out.print(a.text());
        parent.out.flush();
        return a.findings().isEmpty() && missing.isEmpty() ? 0 : 1;
    }

    private void printLast(List<TraceDump> dumps) {
        for (TraceDump d : dumps) {
            for (TraceDump.Comm c : d.comms()) {
                List<TraceEntry> es = c.entries();
                parent.out.printf("%nrank %d, communicator %s (rank %d of %d):%n", d.rank(), Long.toHexString(c.id()), c.rank(), c.size());
                for (TraceEntry e : es.subList(Math.max(0, es.size() - last), es.size())) {
                    parent.out.printf("  %-10s %-4s %-14s %8s %-9s %10s  %s%s%n", e.kind().name().toLowerCase(java.util.Locale.ROOT),
                            e.seq() > 0 ? "#" + e.seq() : "", e.op(), e.bytes() < 0 ? "" : io.hcomm4j.Units.bytes(e.bytes()),
                            e.state().label(), io.hcomm4j.Units.duration(e.durationNanos()),
                            (e.algorithm() == null ? (e.path() == null ? "" : e.path()) : e.algorithm() + "/" + e.path())
                                    + (e.channels() > 1 ? " x" + e.channels() : ""),
                            e.error() == null ? "" : "  " + e.error());
                }
            }
        }
    }

    private static int rankOf(Path p) {
        Matcher m = FILE.matcher(p.getFileName().toString());
        return m.matches() ? Integer.parseInt(m.group(1)) : Integer.MAX_VALUE;
    }

    /** trace-<pid> beside the job files, the newest; a usage error if there is none. */
    private Path newestJobFolder() {
        Path jobs = JobFile.directory(parent.env);
        try (Stream<Path> s = Files.list(jobs)) {
            return s.filter(p -> p.getFileName().toString().startsWith(LaunchCommand.TRACE_FOLDER_PREFIX) && Files.isDirectory(p))
                    .max(Comparator.comparingLong(TraceCommand::modified))
                    .orElseThrow(() -> new ParameterException(spec.commandLine(), "no DIR given and no trace folder of hcomm launch in "
                            + jobs + ": give the folder of the dumps (HCOMM_TRACE_DIR; default <java.io.tmpdir>/hcomm-trace)"));
        } catch (IOException e) {
            throw new ParameterException(spec.commandLine(), "no DIR given and " + jobs + " cannot be read (" + e.getMessage()
                    + "): give the folder of the dumps");
        }
    }

    private static long modified(Path p) {
        try {
            return Files.getLastModifiedTime(p).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }
}
