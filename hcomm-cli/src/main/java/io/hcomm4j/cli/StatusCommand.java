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
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
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
            "Without any of these, or with --job, it finds a job that hcomm launch runs on this machine by itself,"
                    + " from the job file the launcher writes (store address and secret; $XDG_RUNTIME_DIR/hcomm, else"
                    + " /tmp/hcomm-<uid>): one job is used; when several run, it lists them and asks for --job PID."
                    + " Files of launchers that are gone are ignored and removed.",
            "",
        },
        footer = {
            "",
            "Examples:",
            "  hcomm status                                   # the job hcomm launch runs here",
            "  hcomm status --job 12345                       # one of several (the launcher's pid)",
            "  HCOMM_SECRET=... hcomm status --init-method tcp://10.0.0.1:29500",
            "  MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 HCOMM_SECRET=... hcomm status",
            "  hcomm status --watch                           # a fresh table every 2 s",
            "  hcomm status --json",
            "  hcomm status --dump /shared/dumps && hcomm trace /shared/dumps",
        })
final class StatusCommand implements Callable<Integer> {
    @ParentCommand
    HcommCli parent;

    @Spec
    CommandSpec spec;

    @Option(names = "--init-method", paramLabel = "URL",
            description = "The job's store: tcp://host:port or file:///dir (default: HCOMM_INIT_METHOD, else MASTER_ADDR:MASTER_PORT).")
    String initMethod;

    @Option(names = "--secret", paramLabel = "S",
            description = "The job secret (default: HCOMM_SECRET, or the job file's for a job found on this machine;"
                    + " prefer the variable).")
    String secret;

    @Option(names = "--job", paramLabel = "PID",
            description = "The job of hcomm launch on this machine whose launcher has this pid (as hcomm launch printed it"
                    + " and hcomm status lists them; default: the only one running).")
    Long job;

    @Option(names = "--generation", paramLabel = "G",
            description = "Which session of the store (the G-th Hcomm.init of rank 0; default: the latest).")
    Long generation;

    @Option(names = "--timeout", paramLabel = "D", defaultValue = "10s", converter = HcommCli.DurationConverter.class,
            description = "How long to try reaching the store, and with --dump DIR to wait for the records (default: ${DEFAULT-VALUE}).")
    Duration timeout;

    @Option(names = "--json", description = "Print the status as JSON (every rank's state and the findings) instead of the table.")
    boolean json;

    @Option(names = "--watch", paramLabel = "D", arity = "0..1", fallbackValue = "2s", converter = HcommCli.DurationConverter.class,
            description = "Ask every rank to publish its state, print the table, and again every D (default when given: 2s)"
                    + " until interrupted, or --count times.")
    Duration watch;

    @Option(names = "--count", paramLabel = "N", description = "With --watch: stop after N tables.")
    Integer count;

    @Option(names = "--dump", paramLabel = "DIR", arity = "0..1", fallbackValue = "",
            description = "Ask every rank to write its flight record (into DIR, else into its own HCOMM_TRACE_DIR), wait for"
                    + " them when DIR is given, and say how to read them (hcomm trace).")
    String dump;

    @Override
    public Integer call() {
        if (job != null && initMethod != null) {
            throw new ParameterException(spec.commandLine(), "--job and --init-method both name the store: give one of them");
        }
        String method = initMethod != null ? initMethod : parent.env.get("HCOMM_INIT_METHOD");
        String key = secret != null ? secret : parent.env.get("HCOMM_SECRET");
        if (key != null && key.isBlank()) key = null;
        boolean local = job != null || !addressGiven(method);
        // a job found on this machine brings its own secret; only the one used is checked
        if (key != null && (!local || secret != null)) {
            try {
                io.hcomm4j.security.Auth.checkSecret(key, secret != null ? "--secret" : "HCOMM_SECRET");
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        if (count != null && (watch == null || count < 1)) {
            throw new ParameterException(spec.commandLine(), watch == null ? "--count goes with --watch" : "--count must be >= 1, was " + count);
        }
        if (watch != null && (watch.isNegative() || watch.isZero())) {
            throw new ParameterException(spec.commandLine(), "--watch must be a positive duration, was " + watch);
        }
        if (watch != null && dump != null) throw new ParameterException(spec.commandLine(), "--watch and --dump: give one of them");
        try (Store store = local ? openLocalJob() : open(method, key)) {
            if (store == null) return 2; // several jobs, listed: the user picks one
            OptionalLong gen = generation == null ? OptionalLong.empty() : OptionalLong.of(generation);
            if (dump != null) return dump(store, JobStatus.read(store, gen));
            if (watch == null) {
                print(JobStatus.read(store, gen));
                return 0;
            }
            for (int shown = 0; count == null || shown < count; shown++) {
                JobStatus.requestRefresh(store, JobStatus.read(store, gen).namespace());
                sleep(watch);
                JobStatus status = JobStatus.read(store, gen);
                if (!json) {
                    parent.out.printf("--- %s%n", java.time.LocalTime.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS));
                }
                print(status);
            }
            return 0;
        } catch (HcommException e) {
            parent.err.println("hcomm status: " + e.getMessage());
            return 1;
        }
    }

    private void print(JobStatus status) {
        parent.out.print(json ? status.toJson() : status.render(System.currentTimeMillis()));
        parent.out.flush();
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("interrupted");
        }
    }

    /** --dump: the request; with a folder, the wait for every rank's record. */
    private int dump(Store store, JobStatus status) {
        String folder = dump.isBlank() ? "" : java.nio.file.Path.of(dump).toAbsolutePath().toString();
        long asked = System.currentTimeMillis();
        io.hcomm4j.monitor.TraceDump.Request r = io.hcomm4j.monitor.TraceDump.Request.make(store, status.namespace(), folder,
                "hcomm status --dump");
        int n = status.worldSize();
        parent.err.println("hcomm status: asked the " + n + " ranks of session " + status.namespace() + " to write their flight records"
                + (folder.isEmpty() ? " to their HCOMM_TRACE_DIR" : " to " + folder) + " (request " + r.generation() + ")");
        if (folder.isEmpty()) {
            parent.out.println("each rank writes hcomm-trace-rank<R>.json within about 2 s into its HCOMM_TRACE_DIR; read them with hcomm trace DIR");
            parent.out.flush();
            return 0;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        int got;
        while ((got = written(java.nio.file.Path.of(folder), n, asked)) < n && System.nanoTime() < deadline) sleep(Duration.ofMillis(200));
        parent.out.println(got + " of " + n + " ranks wrote their flight records to " + folder + "; read them with hcomm trace " + folder);
        parent.out.flush();
        return got == n ? 0 : 1;
    }

    /** How many of the n ranks' records in {@code dir} were written since {@code sinceMillis}. */
    private static int written(java.nio.file.Path dir, int n, long sinceMillis) {
        int got = 0;
        for (int rank = 0; rank < n; rank++) {
            java.nio.file.Path f = dir.resolve(io.hcomm4j.monitor.TraceDump.fileName(rank));
            try {
                if (java.nio.file.Files.getLastModifiedTime(f).toMillis() >= sinceMillis - 1000) got++;
            } catch (java.io.IOException absent) {
                // not yet
            }
        }
        return got;
    }

    /**
     * Whether the store's address comes from the command line or the environment (as init would find it), so that no
     * local job is looked for: a method other than {@code env://}, or the variables of {@code env://}.
     */
    private boolean addressGiven(String method) {
        if (method != null && !method.isBlank() && !method.trim().toLowerCase(Locale.ROOT).startsWith("env://")) return true;
        for (String v : new String[] {"MASTER_ADDR", "MASTER_PORT", "HCOMM_STORE_PORT"}) {
            String value = parent.env.get(v);
            if (value != null && !value.isBlank()) return true; // a half-given address gets init's own message below
        }
        try {
            JobEnvironment.storeAddress(parent.env); // e.g. an srun step's defaults
            return true;
        } catch (HcommException nothingGiven) {
            return false;
        }
    }

    /**
     * The store of the job of {@code hcomm launch} on this machine ({@code --job}, else the only one), from its job file;
     * null after listing them when several run and {@code --job} does not say which.
     */
    private Store openLocalJob() {
        List<JobFile.Job> jobs = JobFile.live(parent.env);
        JobFile.Job chosen;
        if (job != null) {
            chosen = jobs.stream().filter(j -> j.pid() == job).findFirst().orElseThrow(() -> new ParameterException(
                    spec.commandLine(), "--job " + job + ": no job of hcomm launch with that launcher pid runs on this"
                    + " machine" + (jobs.isEmpty() ? "" : "; these do: " + jobs.stream().map(JobFile.Job::describe)
                    .collect(Collectors.joining("; ")))));
        } else if (jobs.isEmpty()) {
            String problem = JobFile.directoryProblem(parent.env);
            throw new ParameterException(spec.commandLine(), "where is the job's store? no job of hcomm launch runs on this"
                    + " machine for this user (" + (problem != null ? problem : "no job file in " + JobFile.directory(parent.env))
                    + "); give --init-method tcp://host:port, or set HCOMM_INIT_METHOD, or MASTER_ADDR and MASTER_PORT");
        } else if (jobs.size() > 1) {
            parent.err.println("hcomm status: " + jobs.size() + " jobs of hcomm launch run on this machine; choose one with"
                    + " --job PID (or give --init-method):");
            for (JobFile.Job j : jobs) parent.err.println("  " + j.describe());
            return null;
        } else {
            chosen = jobs.getFirst();
        }
        parent.err.println("hcomm status: job " + chosen.pid() + " of hcomm launch, store at " + chosen.store() + " ("
                + chosen.file() + ")");
        // a job of hcomm launch --tls: its own keys beside the job file, unless this shell names TLS stores
        io.hcomm4j.TlsConfig tls = tlsOfShell().or(() -> JobTls.madeFor(JobFile.directory(parent.env), chosen.pid())).orElse(null);
        return TcpStore.connect(socketAddress(chosen.store(), "the job file's store"),
                io.hcomm4j.security.Auth.of(secret != null ? secret : chosen.secret(), tls), timeout, java.time.Duration.ZERO);
    }

    /** TLS as this shell's HCOMM_TLS* variables set it (a usage error if they are bad). */
    private java.util.Optional<io.hcomm4j.TlsConfig> tlsOfShell() {
        try {
            return io.hcomm4j.TlsConfig.fromVariables(parent.env);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private Store open(String method, String key) {
        if (method != null && !method.isBlank() && !method.toLowerCase(Locale.ROOT).startsWith("env://")) {
            String m = method.trim();
            String lower = m.toLowerCase(Locale.ROOT);
            if (lower.startsWith("file://")) return new FileStore(Path.of(m.substring("file://".length())));
            if (lower.startsWith("tcp://")) {
                return TcpStore.connect(socketAddress(m.substring("tcp://".length()), "--init-method " + m),
                        io.hcomm4j.security.Auth.of(key, tlsOfShell().orElse(null)), timeout, java.time.Duration.ZERO);
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
        return TcpStore.connect(address, io.hcomm4j.security.Auth.of(key, tlsOfShell().orElse(null)), timeout, java.time.Duration.ZERO);
    }

    /** {@code host:port} (an IPv6 host in brackets) as an address; a usage error naming {@code what} otherwise. */
    private InetSocketAddress socketAddress(String hostPort, String what) {
        int colon = hostPort.lastIndexOf(':');
        if (colon <= 0) throw new ParameterException(spec.commandLine(), what + " is not tcp://host:port");
        return new InetSocketAddress(hostPort.substring(0, colon), port(hostPort.substring(colon + 1)));
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
