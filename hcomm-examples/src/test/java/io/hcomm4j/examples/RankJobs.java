package io.hcomm4j.examples;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Starts the examples as real jobs for the tests: every rank a JVM of its own with this test JVM's class path.
 * {@link #torchrun} gives each rank the environment torchrun gives (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; rank 0
 * serves the store), {@link #run} runs any command (mpirun) and collects what it printed.
 */
final class RankJobs {
    /** How long a job may take before the test kills it (the examples take seconds; the machine may be busy). */
    static final Duration TIMEOUT = Duration.ofSeconds(150);

    /**
     * Variables a rank must not inherit from the test's environment: they would place it in another job (a test
     * run inside `hcomm launch` or Slurm) or change its settings.
     */
    private static final List<String> FOREIGN_PREFIXES = List.of("HCOMM_", "SLURM_", "OMPI_", "PMI_", "PMIX_");
    private static final List<String> FOREIGN = List.of("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
            "NODE_RANK", "MASTER_ADDR", "MASTER_PORT");

    private RankJobs() {
    }

    /** What one process printed (stdout and stderr together) and how it exited. */
    record Outcome(int index, int exitCode, String output) {
        List<String> lines() {
            return output.lines().toList();
        }
    }

    /** A free TCP port on loopback, for the store. */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The JIT of the rank JVMs: C1 only, as hcomm-core's rank JVMs (its Ranks.RANK_JIT) and hcomm-cli's. A rank JVM
     * lives seconds, and C2 compiling in each of them took the two cores of CI from the ranks: a 4-rank
     * DataParallelTraining job used 25 CPU-seconds with both tiers and 12 with C1, same result lines (Java's arithmetic
     * does not depend on the JIT). {@code -Dhcomm.test.rankJit=} (empty) gives every rank JVM both tiers again.
     */
    static final String RANK_JIT = System.getProperty("hcomm.test.rankJit", "-XX:TieredStopAtLevel=1");

    /**
     * The mains whose rank JVMs keep both tiers: the GPT's, whose hot loops are Vector API kernels that only C2 compiles
     * into vector instructions (C1 took 10 times as long), and RmaParameterServer, whose fixed-point loops over 65,536
     * parameters per pull and push ran longer under C1 than C2 took to compile them (17 CPU-seconds against 12).
     */
    private static final Set<String> BOTH_TIERS = Set.of(GptTraining.class.getName(), GptBench.class.getName(),
            RmaParameterServer.class.getName());

    /** {@code java <test JVM flags> -cp <this class path> <main> <args>}: a rank JVM like the ones scripts/example.sh starts. */
    static List<String> javaCommand(Class<?> main, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        String flags = System.getProperty("hcomm.test.jvmArgs", "--enable-native-access=ALL-UNNAMED");
        cmd.addAll(Arrays.asList(flags.trim().split("\\s+")));
        // no 300 ms wait at exit for the JDK's poller thread in native code (see hcomm-core's Ranks.FAST_EXIT)
        cmd.add("-XX:UserThreadWaitAttemptsAtExit=0");
        if (!RANK_JIT.isBlank() && !BOTH_TIERS.contains(main.getName())) cmd.add(RANK_JIT);
        cmd.add("-Xmx256m");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }

    /** Rank {@code r} of {@code n} of {@code main}, with torchrun's variables for a store on this host at {@code port}. */
    private static ProcessBuilder torchrunRank(int r, int n, int port, Class<?> main, String... args) {
        return torchrunRank(r, n, port, Map.of(), main, args);
    }

    private static ProcessBuilder torchrunRank(int r, int n, int port, Map<String, String> extra, Class<?> main, String... args) {
        ProcessBuilder pb = new ProcessBuilder(javaCommand(main, args));
        Map<String, String> env = cleanEnvironment(pb);
        env.putAll(extra);
        env.put("RANK", Integer.toString(r));
        env.put("WORLD_SIZE", Integer.toString(n));
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(port));
        env.put("HCOMM_SECRET", "examples-test-secret");
        return pb;
    }

    /** Runs {@code n} ranks of {@code main} with torchrun's variables; returns each rank's outcome, in rank order. */
    static List<Outcome> torchrun(int n, Class<?> main, String... args) throws Exception {
        return torchrun(n, Map.of(), main, args);
    }

    /** As {@link #torchrun(int, Class, String...)}, with {@code env} added to every rank's environment (HCOMM_TRANSPORT=tcp). */
    static List<Outcome> torchrun(int n, Map<String, String> env, Class<?> main, String... args) throws Exception {
        int port = freePort();
        List<ProcessBuilder> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) ranks.add(torchrunRank(r, n, port, env, main, args));
        return run(ranks);
    }

    /**
     * As {@link #torchrun}, playing the orchestrator's part too (what Kubernetes does for a failed pod, or an elastic
     * agent for a failed worker): when a rank's process is killed (exit code 137, SIGKILL), a replacement is started with
     * the same environment and {@code args} plus {@code replacementArgs}, once per rank. Returns the outcomes of the
     * {@code n} ranks, in rank order, then those of the replacements, in the order they were started.
     */
    static List<Outcome> elastic(int n, Class<?> main, List<String> replacementArgs, String... args) throws Exception {
        int port = freePort();
        Path dir = Files.createTempDirectory("hcomm-examples");
        List<ProcessBuilder> builders = new ArrayList<>();
        List<Process> processes = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                ProcessBuilder pb = torchrunRank(r, n, port, main, args);
                builders.add(pb);
                start(pb, dir, processes, logs);
            }
            boolean[] replaced = new boolean[n];
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (processes.stream().anyMatch(Process::isAlive)) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("the job did not finish within " + TIMEOUT + "; output:\n" + outputs(logs));
                }
                for (int r = 0; r < n; r++) {
                    Process p = processes.get(r);
                    if (!replaced[r] && !p.isAlive() && p.exitValue() == 137) {
                        replaced[r] = true;
                        List<String> cmd = new ArrayList<>(builders.get(r).command());
                        cmd.addAll(replacementArgs);
                        ProcessBuilder pb = new ProcessBuilder(cmd);
                        pb.environment().clear();
                        pb.environment().putAll(builders.get(r).environment());
                        start(pb, dir, processes, logs);
                    }
                }
                Thread.sleep(20);
            }
            List<Outcome> out = new ArrayList<>();
            for (int i = 0; i < processes.size(); i++) out.add(new Outcome(i, processes.get(i).exitValue(), Files.readString(logs.get(i))));
            return out;
        } finally {
            for (Process p : processes) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
            for (Process p : processes) p.waitFor(10, TimeUnit.SECONDS);
            for (Path log : logs) Files.deleteIfExists(log);
            Files.deleteIfExists(dir);
        }
    }

    private static void start(ProcessBuilder pb, Path dir, List<Process> processes, List<Path> logs) throws IOException {
        Path log = dir.resolve("process" + processes.size() + ".log");
        pb.redirectErrorStream(true).redirectOutput(log.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        logs.add(log);
        processes.add(pb.start());
    }

    /** Removes the variables of {@link #FOREIGN} and {@link #FOREIGN_PREFIXES} and sets a short op timeout. */
    static Map<String, String> cleanEnvironment(ProcessBuilder pb) {
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> FOREIGN.contains(k) || FOREIGN_PREFIXES.stream().anyMatch(k::startsWith));
        // a hang fails in a minute with a message naming the op, rather than at the test's timeout
        env.put("HCOMM_TIMEOUT", "60s");
        return env;
    }

    /** Starts every process, waits for all (killing all at {@link #TIMEOUT}) and returns their outcomes. */
    static List<Outcome> run(List<ProcessBuilder> builders) throws Exception {
        Path dir = Files.createTempDirectory("hcomm-examples");
        List<Process> processes = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        try {
            for (int i = 0; i < builders.size(); i++) {
                Path log = dir.resolve("process" + i + ".log");
                builders.get(i).redirectErrorStream(true).redirectOutput(log.toFile())
                        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
                logs.add(log);
                processes.add(builders.get(i).start());
            }
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            List<Outcome> out = new ArrayList<>();
            for (int i = 0; i < processes.size(); i++) {
                Process p = processes.get(i);
                if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    throw new AssertionError("process " + i + " did not finish within " + TIMEOUT + "; output:\n" + outputs(logs));
                }
                out.add(new Outcome(i, p.exitValue(), Files.readString(logs.get(i))));
            }
            return out;
        } finally {
            for (Process p : processes) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
            for (Process p : processes) p.waitFor(10, TimeUnit.SECONDS);
            for (Path log : logs) Files.deleteIfExists(log);
            Files.deleteIfExists(dir);
        }
    }

    private static String outputs(List<Path> logs) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < logs.size(); i++) sb.append("--- process ").append(i).append('\n').append(Files.readString(logs.get(i)));
        return sb.toString();
    }
}
