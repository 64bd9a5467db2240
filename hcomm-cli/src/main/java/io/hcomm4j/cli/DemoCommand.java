package io.hcomm4j.cli;

import io.hcomm4j.security.Auth;
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
        int code = new LocalLauncher("hcomm demo", parent.out, parent.err)
                .dropStderrLine(LocalLauncher.INCUBATOR_WARNING)
                .run(LocalLauncher.Job.local(ranks, Auth.newSecret()),
                        LocalLauncher.javaCommand(DemoRank.class.getName(), List.of()));
        parent.err.println(code == 0 ? "hcomm demo: all " + ranks + " ranks finished" : "hcomm demo: failed (exit code " + code + ")");
        return code;
    }
}
