package io.hcomm4j.cli;

import io.hcomm4j.bootstrap.TcpStoreServer;
import io.hcomm4j.security.Auth;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Starts the ranks of one node of a job as child processes and supervises them: the engine of
 * {@code hcomm launch}, {@code hcomm demo} and {@code hcomm perf -n N}.
 *
 * <p>Node 0 hosts the job's store (a {@link TcpStoreServer} unless a test injects another {@link StoreHost}).
 * Every rank gets the torchrun-style environment ({@link #rankEnvironment}). Each line a rank writes is
 * copied to this process's stdout or stderr with a {@code [rank R] } prefix, whole lines at a time. When a
 * rank exits with a non-zero code the other ranks are stopped (SIGTERM to them and their descendants, then
 * SIGKILL after the grace period) and {@link #run} returns that code. A shutdown hook does the same when
 * this process is interrupted or terminated, so no rank outlives the launcher. On Linux the launcher adopts
 * the processes a rank leaves behind ({@link Subreaper}); they are stopped when the job ends. The launcher
 * owns the child processes its JVM starts while a job runs.
 */
final class LocalLauncher {
    /** The one line every JVM started with {@code --add-modules jdk.incubator.vector} writes to stderr. */
    static final String INCUBATOR_WARNING = "WARNING: Using incubator modules: jdk.incubator.vector";

    /** JVM flags of every rank JVM that {@link #javaCommand} builds. */
    static final List<String> RANK_JVM_FLAGS = List.of(
            "--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector", "-XX:+UseParallelGC");

    /**
     * Variables that would contradict the launcher's job if a rank inherited them from this process: an outer launcher's
     * (hcomm launch run by mpirun or Hydra gets their rank variables, which init would find against RANK) and a
     * replacement's own ({@code HCOMM_JOIN}).
     */
    private static final List<String> CLEARED_VARIABLES = List.of(
            "HCOMM_RANK", "HCOMM_WORLD_SIZE", "HCOMM_INIT_METHOD", "HCOMM_STORE_PORT", "HCOMM_JOIN", "HCOMM_RESTART_COUNT",
            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE");

    /** How long to wait for killed processes to disappear. */
    private static final Duration KILL_WAIT = Duration.ofSeconds(5);

    /**
     * The shape of a job and this node's place in it, like torchrun's options.
     *
     * @param procsPerNode ranks started on each node
     * @param nnodes       number of nodes
     * @param nodeRank     this node's index, {@code 0 .. nnodes-1}; node 0 hosts the store
     * @param masterAddr   address of the store (node 0 binds it)
     * @param masterPort   port of the store; 0 lets node 0 pick a free one (single node only)
     * @param secret       the job secret every rank proves; the same on every node
     * @param late         this node came after the job formed ({@code --nnodes MIN:MAX}, {@code nodeRank >= nnodes}):
     *                     its ranks join the running job as replacements ({@code HCOMM_JOIN=1}, no {@code RANK})
     */
    record Job(int procsPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, String secret, boolean late) {
        Job {
            Objects.requireNonNull(masterAddr, "masterAddr");
            if (procsPerNode < 1) throw new IllegalArgumentException("ranks per node must be >= 1, was " + procsPerNode);
            if (nnodes < 1) throw new IllegalArgumentException("number of nodes must be >= 1, was " + nnodes);
            if (nodeRank < 0 || nodeRank >= nnodes && !late) {
                throw new IllegalArgumentException("node rank must be in 0.." + (nnodes - 1) + ", was " + nodeRank);
            }
            if (late && nodeRank < nnodes) throw new IllegalArgumentException("a late node's rank is >= " + nnodes + ", was " + nodeRank);
            if (masterPort < 0 || masterPort > 65535) throw new IllegalArgumentException("master port must be in 0..65535, was " + masterPort);
            if (nnodes > 1 && masterPort == 0) throw new IllegalArgumentException("a job of several nodes needs a master port (not 0)");
            if (secret != null) Auth.checkSecret(secret, "the job secret");
        }

        /** A node that is part of the job as it starts. */
        Job(int procsPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, String secret) {
            this(procsPerNode, nnodes, nodeRank, masterAddr, masterPort, secret, false);
        }

        /** This job with {@code nodes} nodes (as {@code --nnodes MIN:MAX} formed it). */
        Job withNodes(int nodes) {
            return new Job(procsPerNode, nodes, nodeRank, masterAddr, masterPort, secret, nodeRank >= nodes);
        }

        /** A job of {@code n} ranks on this machine, with its store on a free loopback port. */
        static Job local(int n, String secret) {
            return new Job(n, 1, 0, "127.0.0.1", 0, secret);
        }

        /** Number of ranks of the whole job. */
        int worldSize() {
            return procsPerNode * nnodes;
        }

        /** Global rank of this node's local rank 0. */
        int firstRank() {
            return nodeRank * procsPerNode;
        }

        /** True on the node whose launcher serves the store. */
        boolean hostsStore() {
            return nodeRank == 0;
        }
    }

    /** Starts the job's store; production uses {@link #TCP_STORE}, tests inject their own. */
    @FunctionalInterface
    interface StoreHost {
        /** Starts serving on {@code bind} (port 0: a free port); the result says where and how to stop it. */
        HostedStore start(InetSocketAddress bind, String secret) throws Exception;
    }

    /**
     * A running store.
     *
     * @param address where it listens (the actual port, never 0)
     * @param server  closing it stops the store
     */
    record HostedStore(InetSocketAddress address, AutoCloseable server) {
    }

    /** Hosts the store with the core's {@link TcpStoreServer}. */
    static final StoreHost TCP_STORE = tcpStore(null);

    /** Hosts the store with the core's {@link TcpStoreServer}, every connection under {@code tls} (null: plain TCP). */
    static StoreHost tcpStore(io.hcomm4j.TlsConfig tls) {
        return (bind, secret) -> {
            TcpStoreServer server = TcpStoreServer.start(bind, io.hcomm4j.security.Auth.of(secret, tls));
            return new HostedStore(server.address(), server);
        };
    }

    private final String name;
    private final PrintStream out;
    private final PrintStream err;
    private StoreHost storeHost = TCP_STORE;
    private Duration gracePeriod = Duration.ofSeconds(5);
    private boolean rank0StdoutRaw;
    private Predicate<String> stderrFilter = line -> true;
    private Map<String, String> extraEnvironment = Map.of();
    /** TLS under the launcher's own store connections (HCOMM_TLS), or null. */
    private io.hcomm4j.TlsConfig tls;
    private volatile List<Process> started = List.of();
    private CpuBind cpuBind = CpuBind.AUTO;
    private int maxRestarts;
    /** {@code --nnodes MIN:MAX} on node 0: {min, max}, and how long to wait for more than MIN; null: a fixed number. */
    private int[] nodesRange;
    private Duration nodesWait;
    private Duration nodesTimeout;
    private String tasksetPath;
    private AotCache aotCache;

    /**
     * Whether each local rank runs on CPUs of its own. AUTO: when this node's ranks are no more than the CPUs this
     * launcher may use, rank i gets the i-th of as many equal, contiguous shares of them (2 ranks on 2 CPUs: one
     * each; 2 ranks on 64 CPUs: 32 each), through {@code taskset}; with more ranks than CPUs, rank i gets CPU
     * {@code i mod CPUs} (4 ranks on 2 CPUs: two on each). NONE: the scheduler places the ranks. Why: left alone,
     * Linux often puts two ranks that wake each other on the same CPU (a 1 MiB all-reduce on 2 ranks over loopback
     * TCP measured 440–600 µs unbound, 204–306 µs bound), and ranks that outnumber the CPUs migrate between them (4
     * ranks on 2 CPUs, 4 KiB zero-copy all-reduce: 8.4–17 µs unbound, 8.4–8.6 µs two to a CPU); Open MPI's mpirun
     * binds too (to a core each for up to 2 ranks).
     */
    enum CpuBind { AUTO, NONE }

    /** Starts the ranks' JVMs from, or trains, the JDK's ahead-of-time cache {@code file} (see {@link AotCache}). */
    LocalLauncher aotCache(java.nio.file.Path file) {
        this.aotCache = file == null ? null : new AotCache(file.toAbsolutePath());
        return this;
    }

    /** The {@code JDK_JAVA_OPTIONS} option for local rank {@code local} of this run, or null. */
    String aotOption(int local) {
        return aotCache == null ? null : aotCache.option(local);
    }

    /**
     * How many times a rank that failed (a non-zero exit, a signal) is replaced by a new process instead of the job being
     * stopped (default 0: the first failure stops it), over this node's ranks together. The replacement runs the same
     * command with the same environment plus {@code HCOMM_JOIN=1} (so {@code Hcomm.init()} joins the running job, as
     * {@code Hcomm.join()} does, and takes the dead rank's place when the others grow) and {@code HCOMM_RESTART_COUNT}
     * (1 for the first replacement on this node). Unlike torchrun, which restarts every rank of the job, the ranks that
     * are alive go on: the program must shrink and grow (see the elastic example); for one that does not, the others
     * fail too.
     */
    LocalLauncher maxRestarts(int restarts) {
        if (restarts < 0) throw new IllegalArgumentException("max restarts must be >= 0, was " + restarts);
        this.maxRestarts = restarts;
        return this;
    }

    /**
     * On node 0 of a job of {@code min} to {@code max} nodes ({@code --nnodes MIN:MAX}): once the store is up, waits
     * for the other nodes' launchers ({@link NodeRendezvous}) up to {@code timeout} for MIN, {@code wait} more for
     * up to MAX, and runs the job with the nodes that came.
     */
    LocalLauncher elasticNodes(int min, int max, Duration wait, Duration timeout) {
        this.nodesRange = new int[] {min, max};
        this.nodesWait = Objects.requireNonNull(wait, "wait");
        this.nodesTimeout = Objects.requireNonNull(timeout, "timeout");
        return this;
    }

    /** Sets how ranks are bound to CPUs (default {@link CpuBind#AUTO}). */
    LocalLauncher cpuBind(CpuBind bind) {
        this.cpuBind = Objects.requireNonNull(bind, "bind");
        return this;
    }

    /**
     * @param name prefix of the launcher's own messages, e.g. {@code "hcomm launch"}
     * @param out  where the ranks' stdout lines go
     * @param err  where the ranks' stderr lines and the launcher's messages go
     */
    LocalLauncher(String name, PrintStream out, PrintStream err) {
        this.name = name;
        this.out = out;
        this.err = err;
    }

    /** Replaces how node 0 hosts the store. */
    LocalLauncher storeHost(StoreHost host) {
        this.storeHost = Objects.requireNonNull(host, "host");
        return this;
    }

    /** Time between SIGTERM and SIGKILL when ranks are stopped (default 5 s). */
    LocalLauncher gracePeriod(Duration grace) {
        this.gracePeriod = Objects.requireNonNull(grace, "grace");
        return this;
    }

    /** Copies the stdout of global rank 0 without a prefix: its output is the job's result (a table, CSV). */
    LocalLauncher rank0StdoutRaw(boolean raw) {
        this.rank0StdoutRaw = raw;
        return this;
    }

    /**
     * Variables every rank gets besides this process's environment (e.g. {@code HCOMM_ALGO} from
     * {@code hcomm perf --algo}); the launcher's own ({@link #rankEnvironment}) take precedence.
     */
    LocalLauncher environment(Map<String, String> variables) {
        this.extraEnvironment = Map.copyOf(variables);
        return this;
    }

    /**
     * The launcher's own store connections (node rendezvous) run under {@code tls} (null: plain TCP); the store it hosts
     * does so with {@link #storeHost} {@link #tcpStore tcpStore(tls)}.
     */
    LocalLauncher tls(io.hcomm4j.TlsConfig tls) {
        this.tls = tls;
        return this;
    }

    /** Drops the ranks' stderr lines equal to {@code line} (used for the JVM's incubator warning). */
    LocalLauncher dropStderrLine(String line) {
        this.stderrFilter = l -> !l.equals(line);
        return this;
    }

    /** The rank processes the last {@link #run} started (for tests that check nothing outlives it). */
    List<ProcessHandle> startedProcesses() {
        return started.stream().map(Process::toHandle).toList();
    }

    /**
     * The command line that runs {@code mainClass} in a JVM like this one: the same java binary and
     * class path, {@link #RANK_JVM_FLAGS}, then {@code args}.
     */
    static List<String> javaCommand(String mainClass, List<String> args) {
        String java = ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        String classPath = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !e.isEmpty())
                .map(e -> Path.of(e).toAbsolutePath().toString())
                .reduce((a, b) -> a + File.pathSeparator + b)
                .orElse(".");
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(RANK_JVM_FLAGS);
        cmd.add("-cp");
        cmd.add(classPath);
        cmd.add(mainClass);
        cmd.addAll(args);
        return cmd;
    }

    /** The variables the launcher sets for local rank {@code localRank} of {@code job}. */
    static Map<String, String> rankEnvironment(Job job, int localRank, int storePort) {
        Map<String, String> env = new LinkedHashMap<>();
        // a late node's ranks get their world ranks when the job grows to take them in
        if (job.late()) {
            env.put("HCOMM_JOIN", "1");
            env.put("HCOMM_RESTART_COUNT", "0"); // not a restart: a node that came after the job formed
        } else {
            env.put("RANK", Integer.toString(job.firstRank() + localRank));
        }
        env.put("LOCAL_RANK", Integer.toString(localRank));
        env.put("WORLD_SIZE", Integer.toString(job.worldSize()));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(job.procsPerNode()));
        env.put("NODE_RANK", Integer.toString(job.nodeRank()));
        env.put("MASTER_ADDR", job.masterAddr());
        env.put("MASTER_PORT", Integer.toString(storePort));
        if (job.secret() != null) env.put("HCOMM_SECRET", job.secret());
        // Node 0's launcher serves the store for the whole job, so no rank starts one.
        env.put("HCOMM_STORE_HOSTED", "1");
        return env;
    }

    /**
     * Runs a job of {@code n} ranks on this machine, each a JVM running {@code mainClass} ({@link #javaCommand}),
     * with a new job secret. Drops the JVM's incubator warning, which {@link #RANK_JVM_FLAGS} cause, from their stderr.
     *
     * @return as {@link #run}
     */
    int runJava(int n, String mainClass, List<String> args) {
        dropStderrLine(INCUBATOR_WARNING);
        return run(Job.local(n, Auth.newSecret()), javaCommand(mainClass, args));
    }

    /**
     * Runs this node's ranks of {@code job}, each executing {@code command}, until all have exited or one
     * has failed.
     *
     * @return 0 when every rank exited with 0; otherwise the failing rank's exit code (or 1)
     */
    int run(Job job, List<String> command) {
        if (command.isEmpty()) throw new IllegalArgumentException("no command to launch");
        HostedStore store = null;
        if (job.hostsStore()) {
            InetSocketAddress bind = new InetSocketAddress(job.masterAddr(), job.masterPort());
            try {
                store = storeHost.start(bind, job.secret());
            } catch (Exception e) {
                // the root cause says why (e.g. "Address already in use"); the address is already in our sentence
                Throwable root = e;
                while (root.getCause() != null) root = root.getCause();
                err.println(name + ": cannot host the store on " + job.masterAddr() + ":" + job.masterPort() + ": "
                        + (root.getMessage() != null ? root.getMessage() : root.toString()));
                return 1;
            }
        }
        int storePort = store != null ? store.address().getPort() : job.masterPort();
        if (store != null && nodesRange != null) {
            try {
                int nodes = NodeRendezvous.formOnNode0(store.address(), io.hcomm4j.security.Auth.of(job.secret(), tls), nodesRange[0], nodesRange[1], nodesWait, nodesTimeout);
                err.println(name + ": the job formed with " + nodes + " node(s) (--nnodes " + nodesRange[0] + ":"
                        + nodesRange[1] + "): " + nodes * job.procsPerNode() + " ranks");
                job = job.withNodes(nodes);
            } catch (RuntimeException e) {
                err.println(name + ": " + e.getMessage());
                closeQuietly(store);
                return 1;
            }
        }
        String[] cpuShares = new String[job.procsPerNode()];
        if (cpuBind == CpuBind.AUTO) {
            List<Integer> cpus = CpuShares.allowedCpus();
            String taskset = job.procsPerNode() > 1 ? Executables.taskset() : null;
            if (taskset != null) {
                for (int i = 0; i < cpuShares.length; i++) cpuShares[i] = CpuShares.cpuShare(cpus, i, job.procsPerNode());
            }
            tasksetPath = taskset;
        }
        if (aotCache != null) err.println(name + ": " + aotCache.startRun());
        Subreaper.activate();
        Ranks ranks = new Ranks(job);
        HostedStore hosted = store;
        Thread hook = Thread.ofPlatform().name(name + "-shutdown").unstarted(() -> {
            if (!ranks.stopRequested()) err.println(name + ": interrupted: stopping the ranks");
            ranks.stop(); // also waits for a stop the main thread has begun
            closeQuietly(hosted);
        });
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            for (int i = 0; i < job.procsPerNode(); i++) {
                try {
                    List<String> rankCommand = command;
                    if (cpuShares[i] != null) {
                        // taskset would start even if the command cannot: keep the launcher's own clear report
                        if (!Executables.executable(command.getFirst())) throw new IOException("no such executable file");
                        rankCommand = new ArrayList<>(List.of(tasksetPath, "-c", cpuShares[i]));
                        rankCommand.addAll(command);
                    }
                    ranks.start(i, rankCommand, rankEnvironment(job, i, storePort));
                } catch (IOException e) {
                    err.println(name + ": cannot start rank " + (job.firstRank() + i) + " (" + command.getFirst() + "): " + e.getMessage());
                    return 1;
                }
            }
            started = ranks.processes();
            return ranks.supervise();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 130;
        } finally {
            started = ranks.processes();
            ranks.stop();
            ranks.drainOutput(Duration.ofSeconds(2));
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or has run; it stops the ranks and closes the store itself
            }
            closeQuietly(store);
        }
    }

    private static void closeQuietly(HostedStore store) {
        if (store == null) return;
        try {
            store.server().close();
        } catch (Exception ignored) {
            // nothing to do about a store that fails to close at the end of the job
        }
    }

    /** This node's rank processes, their output pumps and their exits. */
    private final class Ranks {
        private final Job job;
        private final Process[] processes;
        /** Per local rank, the command and environment it was started with (a replacement gets the same). */
        private final List<List<String>> commands;
        private final List<Map<String, String>> environments;
        private int restarts;
        private final List<Thread> pumps = new ArrayList<>();
        private final BlockingQueue<Integer> exits = new LinkedBlockingQueue<>();
        private volatile boolean stopRequested;

        /** Children this process had before the job: not the job's, never stopped. */
        private final Set<Long> otherChildren;

        Ranks(Job job) {
            this.job = job;
            this.processes = new Process[job.procsPerNode()];
            this.commands = new ArrayList<>(java.util.Collections.nCopies(job.procsPerNode(), null));
            this.environments = new ArrayList<>(java.util.Collections.nCopies(job.procsPerNode(), null));
            this.otherChildren = ProcessHandle.current().children().map(ProcessHandle::pid).collect(Collectors.toSet());
        }

        void start(int local, List<String> command, Map<String, String> rankEnv) throws IOException {
            commands.set(local, command);
            environments.set(local, rankEnv);
            ProcessBuilder pb = new ProcessBuilder(command);
            Map<String, String> env = pb.environment();
            CLEARED_VARIABLES.forEach(env::remove);
            env.putAll(extraEnvironment);
            env.putAll(rankEnv);
            String aot = aotOption(local);
            if (aot != null) {
                String given = env.get("JDK_JAVA_OPTIONS");
                env.put("JDK_JAVA_OPTIONS", given == null || given.isBlank() ? aot : given + " " + aot);
            }
            int rank = job.firstRank() + local;
            Process p;
            synchronized (this) {
                if (stopRequested) throw new IOException("the launcher is stopping");
                p = pb.start();
                processes[local] = p;
            }
            // Ranks read no input: a job's ranks sharing this terminal would fight over it.
            p.getOutputStream().close();
            String prefix = "[rank " + rank + "] ";
            pumps.add(LinePump.start(p.getInputStream(), out, rank == 0 && rank0StdoutRaw ? "" : prefix, line -> true,
                    "rank-" + rank + "-stdout"));
            pumps.add(LinePump.start(p.getErrorStream(), err, prefix, stderrFilter, "rank-" + rank + "-stderr"));
            p.onExit().thenRun(() -> exits.add(local));
        }

        synchronized List<Process> processes() {
            return Arrays.stream(processes).filter(Objects::nonNull).toList();
        }

        boolean stopRequested() {
            return stopRequested;
        }

        /** Waits for the ranks, replacing failed ones while {@link #maxRestarts} allows; returns the job's exit code. */
        int supervise() throws InterruptedException {
            for (int remaining = processes.length; remaining > 0; ) {
                int local = exits.take();
                int code = processes[local].exitValue();
                if (code == 0 || stopRequested) {
                    remaining--;
                    continue;
                }
                int rank = job.firstRank() + local;
                if (restarts < maxRestarts && replace(local, rank, code)) continue;
                stop();
                drainOutput(Duration.ofSeconds(2));
                err.println(name + ": rank " + rank + " exited with code " + code + (maxRestarts > 0
                        ? " after " + restarts + " of " + maxRestarts + " restarts" : "") + "; stopped the other ranks");
                return code > 0 && code < 256 ? code : 1;
            }
            return stopRequested ? 143 : 0; // stopped from outside (SIGTERM): the job did not finish
        }

        /** Starts a process that joins the running job in the place of {@code rank}, which exited with {@code code}. */
        private boolean replace(int local, int rank, int code) {
            restarts++;
            err.println(name + ": rank " + rank + " exited with code " + code + "; starting a replacement that joins the"
                    + " running job (restart " + restarts + " of " + maxRestarts + ")");
            Map<String, String> env = new LinkedHashMap<>(environments.get(local));
            env.put("HCOMM_JOIN", "1");
            env.put("HCOMM_RESTART_COUNT", Integer.toString(restarts));
            try {
                start(local, commands.get(local), env);
                return true;
            } catch (IOException e) {
                err.println(name + ": cannot start a replacement for rank " + rank + ": " + e.getMessage());
                return false;
            }
        }

        /**
         * Stops every rank that still runs and its descendants: SIGTERM, then SIGKILL to whatever is left
         * after the grace period. Idempotent and safe from any thread.
         */
        synchronized void stop() {
            stopRequested = true;
            Set<ProcessHandle> targets = aliveTree();
            if (targets.isEmpty()) return;
            targets.forEach(ProcessHandle::destroy);
            if (awaitGone(targets, gracePeriod)) return;
            // Whatever is still alive, and what it started meanwhile, is killed.
            targets.addAll(aliveTree());
            targets.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
            awaitGone(targets, KILL_WAIT); // SIGKILL takes effect asynchronously
        }

        /** Waits up to {@code limit} until none of {@code targets} is alive; true if so. */
        private boolean awaitGone(Set<ProcessHandle> targets, Duration limit) {
            long deadline = System.nanoTime() + limit.toNanos();
            while (true) {
                adopted().forEach(orphan -> Subreaper.reap(orphan.pid()));
                if (targets.stream().noneMatch(ProcessHandle::isAlive)) return true;
                if (System.nanoTime() - deadline > 0) return false;
                sleep(10);
            }
        }

        /** Children of this process that are neither ranks nor older than the job: orphans it adopted. */
        private Stream<ProcessHandle> adopted() {
            Set<Long> ranks = Arrays.stream(processes).filter(Objects::nonNull).map(Process::pid).collect(Collectors.toSet());
            return ProcessHandle.current().children().filter(c -> !otherChildren.contains(c.pid()) && !ranks.contains(c.pid()));
        }

        /**
         * The live ranks and all their descendants, and the processes they left behind that this process adopted
         * ({@link #adoptOrphans}). Taken before any signal: a process whose parent dies leaves the parent's tree.
         */
        private Set<ProcessHandle> aliveTree() {
            Set<ProcessHandle> all = new LinkedHashSet<>();
            for (Process p : processes) {
                if (p == null) continue;
                p.descendants().forEach(all::add);
                if (p.isAlive()) all.add(p.toHandle());
            }
            adopted().forEach(orphan -> {
                Subreaper.reap(orphan.pid()); // gone if it has exited
                all.add(orphan);
                orphan.descendants().forEach(all::add);
            });
            all.removeIf(h -> !h.isAlive());
            return all;
        }

        /** Waits (bounded) until the output of every rank has been copied. */
        void drainOutput(Duration limit) {
            long deadline = System.nanoTime() + limit.toNanos();
            for (Thread t : pumps) {
                long left = deadline - System.nanoTime();
                if (left <= 0) return;
                try {
                    t.join(Duration.ofNanos(left));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
