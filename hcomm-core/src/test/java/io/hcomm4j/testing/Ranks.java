package io.hcomm4j.testing;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Hcomm;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/** Starts the ranks of a test job: as separate JVM processes (real sockets between processes) or as threads. */
public final class Ranks {
    private Ranks() {
    }

    /** What one rank process did. */
    public record Outcome(int rank, int exitCode, String output) {
    }

    /** Ports this JVM handed out already (each test job gets its own). */
    private static final java.util.Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * A free TCP port on loopback (for the store), below Linux's ephemeral range (32768-60999): a port the kernel picked
     * (bind to 0) is free now, but every outgoing connection of every process draws its local port from that same
     * range, and one did take a test's store port between this call and the store's bind (BindException, seen with
     * several test JVMs beside each other). Below it only another test's explicit choice can collide, which the bind
     * check here makes rare.
     */
    public static int freePort() {
        java.util.concurrent.ThreadLocalRandom rnd = java.util.concurrent.ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = rnd.nextInt(20000, 32768);
            if (!HANDED_OUT.add(port)) continue;
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port), 1);
                return port;
            } catch (IOException e) {
                // taken: try another
            }
        }
        throw new IllegalStateException("no free port in [20000, 32768) on loopback after 200 attempts");
    }

    /**
     * Ends a rank JVM as soon as its main thread is done. At exit HotSpot waits up to 30 x 10 ms for threads in native
     * code to block (VM_Exit::wait_for_threads_in_native_to_block); a JVM whose virtual threads did socket I/O always
     * has one (the JDK's MasterPoller in epoll_wait), so every rank JVM ended 300 ms after its last line (measured: 350
     * ms from Hcomm.close to the process's exit, 45 ms with this flag). The wait protects nothing a test looks at: the
     * threads in native are stopped at their way back into the VM, with or without it.
     */
    public static final String FAST_EXIT = "-XX:UserThreadWaitAttemptsAtExit=0";

    /**
     * The JIT of the rank JVMs the tests start: C1 only. A rank JVM lives seconds, and its C2 compiler threads spent
     * most of them competing with the ranks for the two cores of CI: P2pProcessTest's 4-rank jobs took 15 s with both
     * tiers and 8 s with C1 alone, same checks. C2's code (its reorderings included) is still what the thread-rank tests
     * run, in the test JVM, and {@link #javaCommand} keeps it for the single JVMs that look at compiled code (allocation
     * probes, deoptimization). {@code -Dhcomm.test.rankJit=} (empty) gives rank JVMs both tiers again.
     */
    static final String RANK_JIT = System.getProperty("hcomm.test.rankJit", "-XX:TieredStopAtLevel=1");

    /** The command that starts {@code main} in a new JVM with this JVM's classpath and test flags, both JIT tiers. */
    public static List<String> javaCommand(Class<?> main, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        String flags = System.getProperty("hcomm.test.jvmArgs", "--enable-native-access=ALL-UNNAMED");
        cmd.addAll(Arrays.asList(flags.trim().split("\\s+")));
        cmd.add(FAST_EXIT);
        cmd.add(System.getProperty("hcomm.test.rankXmx", "-Xmx1g"));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }

    /** {@link #javaCommand} for a rank JVM: with {@link #RANK_JIT}. */
    public static List<String> rankCommand(Class<?> main, String... args) {
        List<String> cmd = javaCommand(main, args);
        if (!RANK_JIT.isBlank()) cmd.add(cmd.indexOf("-cp"), RANK_JIT);
        return cmd;
    }

    /** A running job of rank processes. */
    public static final class Job implements AutoCloseable {
        public final List<Process> processes = new ArrayList<>();
        public final List<Path> logs = new ArrayList<>();
        public final int port;
        private Path dir;

        Job(int port) {
            this.port = port;
        }

        /**
         * Starts rank {@code rank} of a job of {@code worldSize} ranks (the environment {@code hcomm launch} gives, plus
         * {@code extraEnv}); it is {@code processes.get(processes.size() - 1)} afterwards, its log next to the others.
         */
        public Process startRank(int rank, int worldSize, Class<?> main, Map<String, String> extraEnv, String... args) throws IOException {
            return startRank(rank, worldSize, main, extraEnv, List.of(), args);
        }

        Process startRank(int rank, int worldSize, Class<?> main, Map<String, String> extraEnv, List<String> prefix, String... args)
                throws IOException {
            if (dir == null) dir = Files.createTempDirectory("hcomm-ranks");
            List<String> cmd = new ArrayList<>(prefix);
            cmd.addAll(rankCommand(main, args));
            ProcessBuilder pb = new ProcessBuilder(cmd);
            Map<String, String> env = pb.environment();
            env.keySet().removeIf(k -> k.startsWith("HCOMM_"));
            env.put("RANK", String.valueOf(rank));
            env.put("LOCAL_RANK", String.valueOf(rank));
            env.put("WORLD_SIZE", String.valueOf(worldSize));
            env.put("MASTER_ADDR", "127.0.0.1");
            env.put("MASTER_PORT", String.valueOf(port));
            env.put("HCOMM_SECRET", "test-job-secret-0001");
            env.put("HCOMM_TIMEOUT", "60s");
            env.put("HCOMM_TRACE_DIR", dir.toString()); // flight records beside the ranks' logs
            if (TRANSPORT != null) env.put("HCOMM_TRANSPORT", TRANSPORT);
            env.putAll(extraEnv);
            Path log = dir.resolve("rank" + rank + (logs.size() == rank ? "" : "-" + logs.size()) + ".log");
            pb.redirectErrorStream(true).redirectOutput(log.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            logs.add(log);
            Process p = pb.start();
            processes.add(p);
            return p;
        }

        /** Waits for every rank (killing all at the timeout) and returns their outcomes. */
        public List<Outcome> await(Duration timeout) throws InterruptedException, IOException {
            long deadline = System.nanoTime() + timeout.toNanos();
            List<Outcome> out = new ArrayList<>();
            for (int r = 0; r < processes.size(); r++) {
                Process p = processes.get(r);
                long left = deadline - System.nanoTime();
                if (!p.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                    close();
                    throw new AssertionError("rank " + r + " did not finish within " + timeout + "; output of all ranks:\n" + outputs());
                }
                out.add(new Outcome(r, p.exitValue(), Files.readString(logs.get(r))));
            }
            return out;
        }

        /**
         * Starts one more process of {@code main} for this job, without RANK and WORLD_SIZE (a replacement that joins the
         * running job through its store); it is {@code processes.get(processes.size() - 1)} afterwards.
         */
        public Process startJoiner(Class<?> main, Map<String, String> extraEnv, String... args) throws IOException {
            ProcessBuilder pb = new ProcessBuilder(rankCommand(main, args));
            Map<String, String> env = pb.environment();
            env.keySet().removeIf(k -> k.startsWith("HCOMM_") || k.equals("RANK") || k.equals("WORLD_SIZE") || k.equals("LOCAL_RANK"));
            env.put("MASTER_ADDR", "127.0.0.1");
            env.put("MASTER_PORT", String.valueOf(port));
            env.put("HCOMM_SECRET", "test-job-secret-0001");
            env.put("HCOMM_TIMEOUT", "60s");
            env.put("HCOMM_TRACE_DIR", dir.toString()); // flight records beside the ranks' logs
            if (TRANSPORT != null) env.put("HCOMM_TRANSPORT", TRANSPORT);
            env.putAll(extraEnv);
            if (dir == null) dir = Files.createTempDirectory("hcomm-ranks");
            Path log = dir.resolve("joiner" + processes.size() + ".log");
            pb.redirectErrorStream(true).redirectOutput(log.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            logs.add(log);
            Process p = pb.start();
            processes.add(p);
            return p;
        }

        /** All ranks' output, for failure messages. */
        /** Waits (90 s at most) until the logs of ranks {@code 0..n-1} all contain {@code word}; fails if a rank exits first. */
        public void awaitAll(int n, String word) throws Exception {
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while (true) {
                boolean all = true;
                for (int r = 0; r < n; r++) all &= Files.readString(logs.get(r)).contains(word);
                if (all) return;
                if (System.nanoTime() > deadline) throw new AssertionError("not all ranks said " + word + ":\n" + outputs());
                for (Process p : processes) if (!p.isAlive()) throw new AssertionError("a rank exited early:\n" + outputs());
                Thread.sleep(20);
            }
        }

        public String outputs() throws IOException {
            StringBuilder sb = new StringBuilder();
            for (int r = 0; r < logs.size(); r++) sb.append("--- rank ").append(r).append('\n').append(Files.readString(logs.get(r)));
            return sb.toString();
        }

        @Override
        public void close() {
            for (Process p : processes) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
            for (Process p : processes) {
                try {
                    p.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** Starts {@code n} rank processes of {@code main} with the env that {@code hcomm launch} gives (rank 0 hosts the store). */
    public static Job start(int n, Class<?> main, Map<String, String> extraEnv, String... args) throws IOException {
        return start(n, main, extraEnv, r -> List.of(), args);
    }

    /**
     * As {@link #start(int, Class, Map, String...)}, with rank r's command run behind {@code commandPrefix.apply(r)}
     * (e.g. {@code ip netns exec <ns>}). {@code extraEnv} may replace MASTER_ADDR and MASTER_PORT (a store the test
     * serves itself, with {@code HCOMM_STORE_HOSTED=1}).
     */
    public static Job start(int n, Class<?> main, Map<String, String> extraEnv, java.util.function.IntFunction<List<String>> commandPrefix,
                            String... args) throws IOException {
        return startSome(n, n, main, extraEnv, commandPrefix, args);
    }

    /**
     * Starts ranks {@code 0 .. started-1} of a job of {@code worldSize} ranks; the others may come later
     * ({@link Job#startRank}). {@code extraEnv} may replace MASTER_ADDR and MASTER_PORT (see {@link #start}).
     */
    public static Job startSome(int worldSize, int started, Class<?> main, Map<String, String> extraEnv, String... args) throws IOException {
        return startSome(worldSize, started, main, extraEnv, r -> List.of(), args);
    }

    private static Job startSome(int worldSize, int started, Class<?> main, Map<String, String> extraEnv,
                                 java.util.function.IntFunction<List<String>> commandPrefix, String... args) throws IOException {
        Job job = new Job(extraEnv.containsKey("MASTER_PORT") ? Integer.parseInt(extraEnv.get("MASTER_PORT")) : freePort());
        try {
            for (int r = 0; r < started; r++) job.startRank(r, worldSize, main, extraEnv, commandPrefix.apply(r), args);
        } catch (IOException | RuntimeException e) {
            job.close();
            throw e;
        }
        return job;
    }

    /** Runs a job of processes and asserts that every rank exited 0; returns the outcomes. */
    public static List<Outcome> run(int n, Class<?> main, Duration timeout, String... args) throws Exception {
        return run(n, main, Map.of(), timeout, args);
    }

    /** As {@link #run(int, Class, Duration, String...)}, with {@code extraEnv} (e.g. {@code HCOMM_TRANSPORT}) for every rank. */
    public static List<Outcome> run(int n, Class<?> main, Map<String, String> extraEnv, Duration timeout, String... args) throws Exception {
        return run(n, main, extraEnv, r -> List.of(), timeout, args);
    }

    /** As {@link #run(int, Class, Map, Duration, String...)}, each rank behind its command prefix (see {@link #start}). */
    public static List<Outcome> run(int n, Class<?> main, Map<String, String> extraEnv, java.util.function.IntFunction<List<String>> commandPrefix,
                                    Duration timeout, String... args) throws Exception {
        try (Job job = start(n, main, extraEnv, commandPrefix, args)) {
            List<Outcome> out = job.await(timeout);
            for (Outcome o : out) {
                if (o.exitCode() != 0) {
                    throw new AssertionError("rank " + o.rank() + " exited with " + o.exitCode() + "; output of all ranks:\n" + job.outputs());
                }
            }
            return out;
        }
    }

    /** Prints, for every other rank, what carries messages to it ({@code rank R transport to P: shm|tcp|none}). */
    public static void printTransports(Hcomm h) {
        int me = h.world().rank();
        for (int p = 0; p < h.world().size(); p++) {
            if (p != me) System.out.printf("rank %d transport to %d: %s%n", me, p, h.transportTo(p));
        }
        System.out.flush();
    }

    /**
     * Asserts that the ranks' {@link #printTransports} lines name {@code kind} (or {@code none}: never connected) for
     * every pair, and {@code kind} at least once per rank.
     */
    public static void assertTransports(List<Outcome> outcomes, String kind) {
        java.util.regex.Pattern line = java.util.regex.Pattern.compile("rank (\\d+) transport to (\\d+): (\\w+)");
        for (Outcome o : outcomes) {
            java.util.regex.Matcher m = line.matcher(o.output());
            int seen = 0;
            while (m.find()) {
                if (!m.group(3).equals(kind) && !m.group(3).equals("none")) {
                    throw new AssertionError("rank " + o.rank() + " used " + m.group(3) + " to rank " + m.group(2) + ", expected " + kind);
                }
                if (m.group(3).equals(kind)) seen++;
            }
            if (seen == 0) throw new AssertionError("rank " + o.rank() + " never used " + kind + ":\n" + o.output());
        }
    }

    /**
     * The transport every test job uses unless its test names one: {@code -Dhcomm.test.transport=ucx} runs the suite over
     * UCX (with {@code UCX_TLS} from the environment), {@code tcp} over TCP; unset, the default (auto).
     */
    public static final String TRANSPORT = System.getProperty("hcomm.test.transport", "").isBlank() ? null
            : System.getProperty("hcomm.test.transport").trim();

    /** Config for rank {@code rank} of an in-JVM job of {@code n} ranks whose store rank 0 hosts on {@code port}. */
    public static CommConfig.Builder threadConfig(int rank, int n, int port) {
        CommConfig.Builder b = threadConfigOfDefaults(rank, n, port);
        return TRANSPORT == null ? b : b.transport(CommConfig.Transport.valueOf(TRANSPORT.toUpperCase(java.util.Locale.ROOT)));
    }

    private static CommConfig.Builder threadConfigOfDefaults(int rank, int n, int port) {
        return CommConfig.builder().initMethod("tcp://127.0.0.1:" + port).rank(rank).worldSize(n).secret("thread-job-secret-01")
                .timeout(Duration.ofSeconds(60)).initTimeout(Duration.ofSeconds(60))
                // flight records of a test that times out stay with the build, not in the machine's temp folder
                .monitor(io.hcomm4j.MonitorConfig.DEFAULT.withTraceDir(Path.of("target", "hcomm-trace", "job-" + port)));
    }

    /** Runs {@code body} on {@code n} ranks that are threads of this JVM, each in its own session; rethrows the first failure. */
    public static void runThreads(int n, Duration timeout, Consumer<Hcomm> body) throws Exception {
        runThreads(n, timeout, b -> b, body);
    }

    /** As {@link #runThreads(int, Duration, Consumer)}, with each rank's config adjusted by {@code config}. */
    public static void runThreads(int n, Duration timeout, java.util.function.UnaryOperator<CommConfig.Builder> config,
                                  Consumer<Hcomm> body) throws Exception {
        runThreadsPerRank(n, freePort(), timeout, (rank, b) -> config.apply(b), body);
    }

    /** As {@link #runThreads(int, Duration, java.util.function.UnaryOperator, Consumer)}, rank 0 serving the store on {@code port}. */
    public static void runThreads(int n, int port, Duration timeout, java.util.function.UnaryOperator<CommConfig.Builder> config,
                                  Consumer<Hcomm> body) throws Exception {
        runThreadsPerRank(n, port, timeout, (rank, b) -> config.apply(b), body);
    }

    /** As {@link #runThreads(int, Duration, Consumer)}, with rank r's config adjusted by {@code config.apply(r, builder)}. */
    public static void runThreadsPerRank(int n, Duration timeout,
                                         java.util.function.BiFunction<Integer, CommConfig.Builder, CommConfig.Builder> config,
                                         Consumer<Hcomm> body) throws Exception {
        runThreadsPerRank(n, freePort(), timeout, config, body);
    }

    /** As {@link #runThreadsPerRank(int, Duration, java.util.function.BiFunction, Consumer)}, rank 0 serving the store on {@code port}. */
    public static void runThreadsPerRank(int n, int port, Duration timeout,
                                         java.util.function.BiFunction<Integer, CommConfig.Builder, CommConfig.Builder> config,
                                         Consumer<Hcomm> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                fs.add(pool.submit(() -> {
                    try (Hcomm h = Hcomm.init(config.apply(rank, threadConfig(rank, n, port)).build())) {
                        body.accept(h);
                    }
                    return null;
                }));
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            for (Future<?> f : fs) {
                try {
                    f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) throw ex;
                    throw e;
                }
            }
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(30, TimeUnit.SECONDS);
        }
    }
}
