package io.hcomm4j.cli;

import java.nio.file.Files;
import java.nio.file.Path;

import io.hcomm4j.security.Auth;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code hcomm launch}: starts the ranks of a job on this node, like torchrun or mpirun. */
@Command(name = "launch", sortOptions = false, usageHelpAutoWidth = true, mixinStandardHelpOptions = true,
        versionProvider = HcommCli.Version.class,
        description = {
            "Starts N ranks of COMMAND on this node and serves the job's store (on node 0), like torchrun or mpirun.",
            "",
            "World size = N x K; this node runs ranks NODE_RANK*N .. NODE_RANK*N+N-1. Each rank gets RANK, LOCAL_RANK,"
                    + " WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR, MASTER_PORT, HCOMM_SECRET and"
                    + " HCOMM_STORE_HOSTED=1 in its environment, which Hcomm.init() reads.",
            "Every line a rank writes is printed with a '[rank R] ' prefix (stderr to stderr). When a rank exits with"
                    + " a non-zero code, the other ranks are stopped (SIGTERM, then SIGKILL after the grace period)"
                    + " and hcomm launch exits with that code; when all exit with 0, it exits with 0. Processes the"
                    + " ranks started are stopped with them, and (on Linux) so are those still running when the job ends.",
            "On start it prints the store's address and the job file that holds it with the job's secret (the secret"
                    + " itself is never printed): job-<launcher pid>.properties in $XDG_RUNTIME_DIR/hcomm, else in"
                    + " /tmp/hcomm-<uid> (a directory of mode 0700, the file 0600), removed when the job ends. hcomm status"
                    + " finds a job there by itself.",
            "",
        },
        footer = {
            "",
            "Several nodes: run hcomm launch on every node with the same -n, --nnodes, --master-addr, --master-port"
                    + " and the same secret (--secret S or HCOMM_SECRET=S, at least 16 bytes, made by hcomm secret; prefer"
                    + " the variable, a command line is visible to other users); node 0 (--node-rank 0) serves the store at"
                    + " --master-addr:--master-port.",
            "",
            "Examples:",
            "  hcomm launch -n 4 -- java -cp app.jar com.example.Train",
            "  export HCOMM_SECRET=$(hcomm secret)    # the same on both nodes",
            "  hcomm launch -n 2 --nnodes 2 --node-rank 0 \\",
            "      --master-addr 10.0.0.1 --master-port 29500 -- ./train.sh     # on node 0 (10.0.0.1)",
            "  hcomm launch -n 2 --nnodes 2 --node-rank 1 \\",
            "      --master-addr 10.0.0.1 --master-port 29500 -- ./train.sh     # on node 1",
            "  hcomm launch -n 4 --max-restarts 1 -- java -cp app.jar com.example.ElasticTrain   # replace a dead rank",
            "  hcomm launch -n 2 --nnodes 2:4 --node-rank 0 --master-addr 10.0.0.1 --master-port 29500 -- ./train.sh",
            "  hcomm launch -n 2 --nnodes 2:4 --master-addr 10.0.0.1 --master-port 29500 -- ./train.sh   # other nodes",
        })
final class LaunchCommand implements Callable<Integer> {
    @ParentCommand
    HcommCli parent;

    @Spec
    CommandSpec spec;

    @Option(names = {"-n", "--nproc-per-node"}, paramLabel = "N", defaultValue = "1",
            description = "Ranks to start on this node (default: ${DEFAULT-VALUE}).")
    int procsPerNode;

    @Option(names = "--nnodes", paramLabel = "K|MIN:MAX", defaultValue = "1",
            description = "Number of nodes of the job (default: ${DEFAULT-VALUE}), or MIN:MAX: the job starts with the"
                    + " nodes whose launchers came (at least MIN; once MIN are there, node 0 waits --nodes-wait for more,"
                    + " up to MAX); a node that comes later runs its ranks as replacements that join the running job"
                    + " (HCOMM_JOIN=1) when its ranks grow; a node that leaves (its ranks die) is shrunk away by them.")
    String nnodesSpec;

    @Option(names = "--node-rank", paramLabel = "I", defaultValue = "-1",
            description = "This node's index, 0..K-1; node 0 serves the store (default: 0). With --nnodes MIN:MAX only"
                    + " node 0 gives it; the others get theirs in the order they come.")
    int nodeRank;

    @Option(names = "--nodes-wait", paramLabel = "TIME", defaultValue = "10s", converter = HcommCli.DurationConverter.class,
            description = "With --nnodes MIN:MAX: how long node 0 waits for more nodes once MIN are there (default:"
                    + " ${DEFAULT-VALUE}).")
    Duration nodesWait;

    @Option(names = "--master-addr", paramLabel = "ADDR",
            description = "Address of the store, served by node 0 (default: 127.0.0.1; required with --nnodes > 1).")
    String masterAddr;

    @Option(names = "--master-port", paramLabel = "PORT", defaultValue = "0",
            description = "Port of the store; 0 picks a free port (default; a single node only).")
    int masterPort;

    @Option(names = "--secret", paramLabel = "S",
            description = "The job secret every rank proves on every connection, at least 16 bytes (default:"
                    + " HCOMM_SECRET, else a new random secret; with --nnodes > 1 one of them is required and must be the"
                    + " same on every node: make one with hcomm secret).")
    String secret;

    @Option(names = "--tls",
            description = "Run every TCP connection of the job, store and data, under TLS 1.3 with mutual authentication"
                    + " (as HCOMM_TLS=1 in this shell does). With HCOMM_TLS_KEYSTORE set, the ranks and the store use the"
                    + " stores HCOMM_TLS_* name (what a job of several nodes needs: the same trust on every node);"
                    + " without it, on one node, the launcher makes the job's own key pair (EC P-256, in a folder only"
                    + " this user can open, removed when the job ends). Shared memory between ranks of one host stays"
                    + " as it is. See docs/configuration.md, \"TLS\".")
    boolean tls;

    @Option(names = "--grace-period", paramLabel = "TIME", defaultValue = "5s",
            converter = HcommCli.DurationConverter.class,
            description = "How long stopped ranks get between SIGTERM and SIGKILL (default: ${DEFAULT-VALUE}).")
    Duration gracePeriod;

    @Option(names = "--max-restarts", paramLabel = "N", defaultValue = "0",
            description = "Replace up to N failed ranks of this node (over all of them) by new processes that join the"
                    + " running job, instead of stopping it (default: ${DEFAULT-VALUE}). A replacement runs COMMAND with"
                    + " the dead rank's environment plus HCOMM_JOIN=1, so Hcomm.init() joins the running job"
                    + " (Hcomm.join()) and takes the dead rank's place when the other ranks grow, and HCOMM_RESTART_COUNT."
                    + " The other ranks go on (torchrun restarts them all): for programs that shrink and grow, like the"
                    + " elastic example; docs/deploy.md, \"Elastic jobs\".")
    int maxRestarts;

    @Option(names = "--aot-cache", paramLabel = "FILE",
            description = "Start Java ranks from the JDK's ahead-of-time cache FILE (classes loaded and linked, method"
                    + " profiles): if FILE does not exist, this run trains it (local rank 0 runs with"
                    + " -XX:AOTCacheOutput=FILE and writes it as it exits); if it exists, every rank runs with"
                    + " -XX:AOTCache=FILE. Passed in JDK_JAVA_OPTIONS, so COMMAND must start its JVM with the java"
                    + " launcher. Retrain (delete FILE) after changing the JDK or the class path. See docs/performance.md.")
    java.nio.file.Path aotCache;

    @Option(names = "--cpu-bind", paramLabel = "HOW", defaultValue = "auto", converter = CpuBindConverter.class,
            description = "auto (default): when this node's ranks are no more than its CPUs, each rank runs on an equal,"
                    + " contiguous share of them of its own (taskset); with more ranks than CPUs, rank i on CPU i mod CPUs;"
                    + " none: no binding.")
    LocalLauncher.CpuBind cpuBind = LocalLauncher.CpuBind.AUTO;

    /** Parses {@code --cpu-bind}. */
    static final class CpuBindConverter implements picocli.CommandLine.ITypeConverter<LocalLauncher.CpuBind> {
        @Override
        public LocalLauncher.CpuBind convert(String value) {
            return switch (value.trim().toLowerCase(java.util.Locale.ROOT)) {
                case "auto" -> LocalLauncher.CpuBind.AUTO;
                case "none" -> LocalLauncher.CpuBind.NONE;
                default -> throw new picocli.CommandLine.TypeConversionException("'" + value + "' is not a CPU binding; choose auto or none");
            };
        }
    }

    /** How long to wait for the other nodes: HCOMM_INIT_TIMEOUT, as a rank waits for the others at init (2 minutes). */
    private Duration initTimeout() {
        String t = parent.env.get("HCOMM_INIT_TIMEOUT");
        return t == null || t.isBlank() ? Duration.ofMinutes(2) : io.hcomm4j.CommConfig.parseDuration(t.trim());
    }

    @Parameters(arity = "1..*", paramLabel = "COMMAND",
            description = "The command every rank runs, with its arguments (put it after --).")
    List<String> command;

    @Override
    public Integer call() {
        int[] range;
        try {
            range = NodeRendezvous.parse(nnodesSpec);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        boolean elastic = range[0] != range[1];
        int nnodes = range[1];
        if (elastic && nodeRank > 0) {
            throw new ParameterException(spec.commandLine(), "With --nnodes " + nnodesSpec + " only node 0 gives --node-rank"
                    + " (0: it serves the store); the other nodes get theirs in the order they come, so leave it out there.");
        }
        String jobSecret = secret != null ? secret : parent.env.get("HCOMM_SECRET");
        if (jobSecret != null && jobSecret.isBlank()) jobSecret = null;
        if (nnodes > 1) {
            if (jobSecret == null) {
                throw new ParameterException(spec.commandLine(), "A job of several nodes needs the same secret on every"
                        + " node: give --secret S or set HCOMM_SECRET (e.g. " + Auth.HOW_TO_MAKE_ONE + ").");
            }
            if (masterAddr == null) {
                throw new ParameterException(spec.commandLine(), "A job of several nodes needs --master-addr: the address"
                        + " of node 0, where the store is served.");
            }
            if (masterPort == 0) {
                throw new ParameterException(spec.commandLine(), "A job of several nodes needs --master-port: a port"
                        + " free on node 0 (e.g. 29500).");
            }
        }
        if (jobSecret != null) {
            try {
                Auth.checkSecret(jobSecret, secret != null ? "--secret" : "HCOMM_SECRET");
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        if (maxRestarts < 0) {
            throw new ParameterException(spec.commandLine(), "--max-restarts must be >= 0, was " + maxRestarts);
        }
        if (jobSecret == null) jobSecret = Auth.newSecret();
        JobTls jobTls;
        try {
            jobTls = JobTls.choose(tls, parent.env, nnodes, JobFile.directory(parent.env));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        } catch (java.io.IOException e) {
            parent.err.println("hcomm launch: cannot make the job's TLS keys: " + e.getMessage());
            return 1;
        }
        try {
            return launch(jobSecret, jobTls, elastic, range, nnodes);
        } finally {
            jobTls.close();
        }
    }

    private int launch(String jobSecret, JobTls jobTls, boolean elastic, int[] range, int nnodes) {
        Auth auth = Auth.of(jobSecret, jobTls.config());
        LocalLauncher launcher = new LocalLauncher("hcomm launch", parent.out, parent.err)
                .gracePeriod(gracePeriod)
                .aotCache(aotCache)
                .cpuBind(cpuBind)
                .maxRestarts(maxRestarts)
                .tls(jobTls.config())
                .environment(rankVariables(jobTls.rankVariables()));
        if (jobTls.config() != null) parent.err.println("hcomm launch: TLS 1.3 on every TCP connection (" + jobTls.describe() + ")");
        String addr = masterAddr != null ? masterAddr : "127.0.0.1";
        LocalLauncher.Job job;
        try {
            if (!elastic) {
                job = new LocalLauncher.Job(procsPerNode, nnodes, Math.max(nodeRank, 0), addr, masterPort, jobSecret);
            } else if (nodeRank == 0) {
                job = new LocalLauncher.Job(procsPerNode, nnodes, 0, addr, masterPort, jobSecret);
                launcher.elasticNodes(range[0], range[1], nodesWait, initTimeout());
            } else {
                NodeRendezvous.Place place = NodeRendezvous.arriveAt(new java.net.InetSocketAddress(addr, masterPort), auth, initTimeout());
                parent.err.println("hcomm launch: this is node " + place.nodeRank() + "; the job formed with " + place.nodes()
                        + " node(s)" + (place.late() ? ": this node came late, its ranks join the running job as replacements" : ""));
                job = new LocalLauncher.Job(procsPerNode, place.nodes(), place.nodeRank(), addr, masterPort, jobSecret, place.late());
            }
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        } catch (io.hcomm4j.HcommException e) {
            parent.err.println("hcomm launch: " + e.getMessage());
            return 1;
        }
        JobFile[] jobFile = new JobFile[1];
        String ranks = elastic && job.hostsStore() ? procsPerNode * range[0] + ".." + procsPerNode * range[1]
                : Integer.toString(job.worldSize());
        String key = jobSecret;
        String secretFrom = secret != null ? "the value of --secret" : parent.env.get("HCOMM_SECRET") != null
                ? "HCOMM_SECRET of this shell" : "a new one, in the ranks' environment only";
        if (job.hostsStore()) {
            // the port is known once the store listens (0 picks a free one)
            launcher.storeHost((bind, s) -> {
                LocalLauncher.HostedStore hosted = LocalLauncher.tcpStore(jobTls.config()).start(bind, s);
                jobFile[0] = announce(hosted.address(), ranks, key, secretFrom);
                return hosted;
            });
        } else {
            jobFile[0] = announce(java.net.InetSocketAddress.createUnresolved(addr, masterPort), ranks, key, secretFrom);
        }
        try {
            return launcher.run(job, command);
        } finally {
            if (jobFile[0] != null) jobFile[0].close();
            Path traces = traceFolder();
            if (traces != null && Files.isDirectory(traces)) {
                parent.err.println("hcomm launch: the ranks wrote flight records to " + traces + "; read them with hcomm trace " + traces);
            }
        }
    }

    /** The folder of the job's trace dumps beside the job files: {@value #TRACE_FOLDER_PREFIX}{@code <launcher pid>}. */
    static final String TRACE_FOLDER_PREFIX = "trace-";

    /** Where this job's ranks write their flight records, unless the shell sets HCOMM_TRACE_DIR (then null). */
    private Path traceFolder() {
        String given = parent.env.get("HCOMM_TRACE_DIR");
        if (given != null && !given.isBlank()) return null;
        return JobFile.directory(parent.env).resolve(TRACE_FOLDER_PREFIX + ProcessHandle.current().pid());
    }

    /** The ranks' extra variables: {@code tlsVariables} and HCOMM_TRACE_DIR (the job's trace folder, unless the shell sets one). */
    private java.util.Map<String, String> rankVariables(java.util.Map<String, String> tlsVariables) {
        java.util.Map<String, String> vars = new java.util.LinkedHashMap<>(tlsVariables);
        Path traces = traceFolder();
        if (traces != null) vars.put("HCOMM_TRACE_DIR", traces.toString());
        return vars;
    }

    /**
     * Says on stderr how to reach the job: the store's address, and the job file that holds it with the secret (which
     * never goes to the terminal, where others may read it over a shoulder or in a log). Returns the job file, or null
     * when none could be written (the job runs all the same).
     */
    private JobFile announce(java.net.InetSocketAddress store, String ranks, String jobSecret, String secretFrom) {
        String address = hostPort(store);
        parent.err.println("hcomm launch: job " + ProcessHandle.current().pid() + ", " + ranks + " ranks, store at " + address);
        try {
            JobFile file = JobFile.write(parent.env, address, jobSecret, ranks, command);
            parent.err.println("hcomm launch: the store's address and the job's secret are in " + file.path()
                    + " (mode 0600, removed when the job ends); hcomm status finds the job there by itself");
            return file;
        } catch (java.io.IOException | RuntimeException e) {
            parent.err.println("hcomm launch: no job file (" + e.getMessage() + "); hcomm status --init-method tcp://"
                    + address + " reaches the job with its secret in HCOMM_SECRET (" + secretFrom + ")");
            return null;
        }
    }

    /** {@code host:port} of {@code address} as a client reaches it: a wildcard bind as 127.0.0.1, IPv6 in brackets. */
    static String hostPort(java.net.InetSocketAddress address) {
        java.net.InetAddress ip = address.getAddress();
        String host = ip == null ? address.getHostString() : ip.isAnyLocalAddress() ? "127.0.0.1" : ip.getHostAddress();
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + address.getPort();
    }
}
