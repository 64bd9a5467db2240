package io.hcomm4j.cli;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code hcomm demo}: a 4-rank job on this machine running {@link DemoRank}. */
@Command(name = "demo", sortOptions = false, usageHelpAutoWidth = true, mixinStandardHelpOptions = true,
        versionProvider = HcommCli.Version.class,
        description = {
            "Runs a job of 4 ranks (separate JVMs) on this machine, started as hcomm launch starts any job.",
            "Each rank runs the seed example and says what it does: init, world communicator, off-heap buffers,"
                    + " a stream, send to the next rank and receive from the previous one, synchronize, check every"
                    + " element, cleanup. Then ranks 0 and 1 measure ping-pong latency (8 B) and bandwidth (4 MiB),"
                    + " all ranks a ring exchange (1 MiB), and rank 0 prints a summary.",
            "",
        })
final class DemoCommand implements Callable<Integer> {
    @ParentCommand
    HcommCli parent;

    @Spec
    CommandSpec spec;

    @Option(names = "-n", paramLabel = "N", defaultValue = "4", description = "Number of ranks (default: ${DEFAULT-VALUE}).")
    int ranks;

    @Override
    public Integer call() {
        if (ranks < 2) throw new ParameterException(spec.commandLine(), "the demo needs at least 2 ranks, not " + ranks);
        parent.err.println("hcomm demo: starting " + ranks + " ranks on this machine (each a JVM; lines are prefixed with"
                + " [rank R])");
        SummaryTap tap = new SummaryTap(parent.out);
        int code = new LocalLauncher("hcomm demo", new PrintStream(tap, true), parent.err)
                .runJava(ranks, DemoRank.class.getName(), List.of());
        tap.printHeld();
        parent.err.println(code == 0 ? "hcomm demo: all " + ranks + " ranks finished" : "hcomm demo: failed (exit code " + code + ")");
        return code;
    }

    /**
     * Passes the ranks' output through, except rank 0's summary lines ({@link DemoRank#SUMMARY}): those are
     * held back and printed, without prefix, once every rank has finished, so the summary comes last.
     * The launcher writes each line with one call, so every call here is one whole line.
     */
    private static final class SummaryTap extends OutputStream {
        private static final byte[] MARKER = ("[rank 0] " + DemoRank.SUMMARY).getBytes(StandardCharsets.UTF_8);

        private final PrintStream out;
        private final ByteArrayOutputStream held = new ByteArrayOutputStream();

        SummaryTap(PrintStream out) {
            this.out = out;
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            if (len >= MARKER.length && Arrays.equals(b, off, off + MARKER.length, MARKER, 0, MARKER.length)) {
                held.write(b, off + MARKER.length, len - MARKER.length);
            } else {
                out.write(b, off, len);
            }
        }

        @Override
        public synchronized void write(int b) {
            out.write(b);
        }

        @Override
        public void flush() {
            out.flush();
        }

        synchronized void printHeld() {
            if (held.size() == 0) return;
            out.println();
            out.write(held.toByteArray(), 0, held.size());
            out.flush();
        }
    }
}
