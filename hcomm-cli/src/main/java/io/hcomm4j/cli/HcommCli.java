package io.hcomm4j.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import io.hcomm4j.CommConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Entry point of the {@code hcomm} command: {@code hcomm launch} starts the ranks of a job (like torchrun
 * or mpirun), {@code hcomm demo} runs a 4-rank example job, {@code hcomm perf} measures communication,
 * {@code hcomm status} shows a running job's ranks and who is behind, {@code hcomm store} serves a job's store in a
 * process of its own, {@code hcomm secret} prints a new job secret. The exit code of the command (for {@code launch}: of the job) is the exit code of the process.
 */
@Command(name = "hcomm", mixinStandardHelpOptions = true, versionProvider = HcommCli.Version.class,
        subcommands = {LaunchCommand.class, DemoCommand.class, PerfCommand.class, TuneCommand.class, StatusCommand.class, StoreCommand.class,
                SecretCommand.class, TraceCommand.class},
        description = "HComm4J: communication between JVM processes (point-to-point and collectives), "
                + "and the tools to launch, measure and inspect its jobs.",
        footer = {"", "Run 'hcomm COMMAND --help' for the options of a command."})
public final class HcommCli implements Callable<Integer> {
    final PrintStream out;
    final PrintStream err;
    final Map<String, String> env;

    @Spec
    CommandSpec spec;

    private HcommCli(PrintStream out, PrintStream err, Map<String, String> env) {
        this.out = out;
        this.err = err;
        this.env = env;
    }

    /** Runs the command line and exits with its exit code. */
    public static void main(String[] args) {
        System.exit(execute(args, System.out, System.err, System.getenv()));
    }

    /** Runs the command line with the given streams and environment; returns the exit code. */
    static int execute(String[] args, PrintStream out, PrintStream err, Map<String, String> env) {
        return commandLine(out, err, env).execute(args);
    }

    /** The {@code hcomm} command line, writing to {@code out} and {@code err}, reading {@code env}. */
    static CommandLine commandLine(PrintStream out, PrintStream err, Map<String, String> env) {
        CommandLine cl = new CommandLine(new HcommCli(out, err, env));
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        // Everything after the command's first word is the command's own: `hcomm launch -n 2 python x.py --lr 3`.
        cl.getSubcommands().get("launch").setStopAtPositional(true);
        cl.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            String name = commandLine.getCommandSpec().qualifiedName();
            if (e instanceof IllegalArgumentException) {
                err.println(name + ": " + e.getMessage());
                return 2;
            }
            err.print(name + ": ");
            e.printStackTrace(err);
            return 1;
        });
        return cl;
    }

    @Override
    public Integer call() {
        throw new ParameterException(spec.commandLine(), "Missing command: launch, demo, perf, tune, status, store or secret");
    }

    /** {@code hcomm --version}: the HComm4J version and the JVM it runs on. */
    static final class Version implements IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {
                "hcomm " + version(),
                "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vendor") + ") on "
                        + System.getProperty("os.name") + " " + System.getProperty("os.arch"),
            };
        }

        static String version() {
            Properties p = new Properties();
            try (InputStream in = HcommCli.class.getResourceAsStream("version.properties")) {
                if (in != null) p.load(in);
            } catch (IOException ignored) {
                // fall through to "unknown"
            }
            return p.getProperty("version", "unknown");
        }
    }

    /** Reads sizes such as {@code 4096}, {@code 64K}, {@code 4M}, {@code 1G} (powers of 1024). */
    static final class SizeConverter implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            return CommConfig.parseSize(value);
        }
    }

    /** Reads durations such as {@code 500ms}, {@code 5s}, {@code 1m}. */
    static final class DurationConverter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            return CommConfig.parseDuration(value.toLowerCase(Locale.ROOT));
        }
    }
}
