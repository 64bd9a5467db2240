package io.hcomm4j.cli;

import io.hcomm4j.HcommException;
import io.hcomm4j.bootstrap.FileStore;
import io.hcomm4j.bootstrap.JobEnvironment;
import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.bootstrap.TcpStore;
import io.hcomm4j.monitor.JobStatus;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code hcomm status}: every rank's published state from the job's store, and who is behind. */
@Command(name = "status", sortOptions = false, usageHelpAutoWidth = true, mixinStandardHelpOptions = true,
        versionProvider = HcommCli.Version.class,
        description = {
            "Reads every rank's state from a running job's store and prints it: health, collectives called per"
                    + " communicator, the ops that run (STUCK once they waited longer than HCOMM_STUCK_REPORT) and the"
                    + " ranks they wait for; then who is behind.",
            "A rank publishes its state only when one of its ops is stuck (and the ranks that op waits for are asked"
                    + " to publish theirs), when that ends, or when a communicator's health changes; a rank without a"
                    + " status was none of these (or cannot reach the store).",
            "The store is found like Hcomm.init() finds it: --init-method, else HCOMM_INIT_METHOD, else"
                    + " MASTER_ADDR:MASTER_PORT (HCOMM_STORE_PORT, if set, in place of MASTER_PORT); the secret is"
                    + " HCOMM_SECRET (or --secret).",
            "",
        },
        footer = {
            "",
            "Examples:",
            "  HCOMM_SECRET=... hcomm status --init-method tcp://10.0.0.1:29500",
            "  MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 HCOMM_SECRET=... hcomm status",
        })
final class StatusCommand implements Callable<Integer> {
    @ParentCommand
    HcommCli parent;

    @Spec
    CommandSpec spec;

    @Option(names = "--init-method", paramLabel = "URL",
            description = "The job's store: tcp://host:port or file:///dir (default: HCOMM_INIT_METHOD, else MASTER_ADDR:MASTER_PORT).")
    String initMethod;

    @Option(names = "--secret", paramLabel = "S", description = "The job secret (default: HCOMM_SECRET; prefer the variable).")
    String secret;

    @Option(names = "--generation", paramLabel = "G",
            description = "Which session of the store (the G-th Hcomm.init of rank 0; default: the latest).")
    Long generation;

    @Option(names = "--timeout", paramLabel = "D", defaultValue = "10s", converter = HcommCli.DurationConverter.class,
            description = "How long to try reaching the store (default: ${DEFAULT-VALUE}).")
    Duration timeout;

    @Override
    public Integer call() {
        String method = initMethod != null ? initMethod : parent.env.get("HCOMM_INIT_METHOD");
        String key = secret != null ? secret : parent.env.get("HCOMM_SECRET");
        try (Store store = open(method, key)) {
            JobStatus status = JobStatus.read(store, generation == null ? OptionalLong.empty() : OptionalLong.of(generation));
            parent.out.print(status.render(System.currentTimeMillis()));
            parent.out.flush();
            return 0;
        } catch (HcommException e) {
            parent.err.println("hcomm status: " + e.getMessage());
            return 1;
        }
    }

    private Store open(String method, String key) {
        if (method != null && !method.isBlank() && !method.toLowerCase(Locale.ROOT).startsWith("env://")) {
            String m = method.trim();
            String lower = m.toLowerCase(Locale.ROOT);
            if (lower.startsWith("file://")) return new FileStore(Path.of(m.substring("file://".length())));
            if (lower.startsWith("tcp://")) {
                String rest = m.substring("tcp://".length());
                int colon = rest.lastIndexOf(':');
                if (colon <= 0) throw new ParameterException(spec.commandLine(), "--init-method " + m + " is not tcp://host:port");
                return TcpStore.connect(new InetSocketAddress(rest.substring(0, colon), port(rest.substring(colon + 1))), key, timeout);
            }
            throw new ParameterException(spec.commandLine(), "--init-method " + m + " is not tcp://host:port or file:///dir");
        }
        InetSocketAddress address;
        try {
            address = JobEnvironment.storeAddress(parent.env); // init's own rule (HCOMM_STORE_PORT, an srun step's defaults)
        } catch (HcommException e) {
            throw new ParameterException(spec.commandLine(), "where is the job's store? give --init-method tcp://host:port,"
                    + " or set HCOMM_INIT_METHOD, or MASTER_ADDR and MASTER_PORT (" + e.getMessage() + ")");
        }
        return TcpStore.connect(address, key, timeout);
    }

    private int port(String text) {
        try {
            int p = Integer.parseInt(text);
            if (p > 0 && p <= 65535) return p;
        } catch (NumberFormatException ignored) {
            // below
        }
        throw new ParameterException(spec.commandLine(), "'" + text + "' is not a port number");
    }
}
