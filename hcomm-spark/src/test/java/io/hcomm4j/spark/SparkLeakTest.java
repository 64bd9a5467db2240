package io.hcomm4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * 20 barrier stages in one JVM (16 on the driver's store, 4 on partition 0's), 4 ranks each: afterwards no HComm4J
 * thread is alive, this process listens on no more ports than before (the driver's store closed with its handle,
 * partition 0's with its task) and holds no more descriptors, and no shared-memory file of this process is left.
 */
class SparkLeakTest {
    private static final int STAGES = 20;
    private static final int ON_PARTITION_ZERO = 4;
    private static final List<String> SPARK_POOLS = List.of("block-manager-ask-thread-pool", "block-manager-storage-async-thread-pool",
            "Executor task", "ForkJoinPool", "task-result-getter", "map-output-dispatcher", "shuffle-", "rpc-", "dispatcher-event-loop");

    @Test
    void twentyStagesLeaveNoThreadsPortsOrSharedMemoryFiles() throws Exception {
        var sc = TestSpark.session().sparkContext();
        // a stage of each kind first, so that Spark's own threads (task pool, shuffle, the barrier() timers) exist
        // before the baseline
        try (SparkHcomm warm = SparkHcomm.start(sc)) {
            SparkHcommTest.assertAllReduceChecked(warm, 0);
        }
        try (SparkHcomm warm = SparkHcomm.builder(sc).storeOnPartitionZero().start()) {
            SparkHcommTest.assertAllReduceChecked(warm, 1);
        }
        awaitNoHcommThreads();
        Set<Long> listening = listeningInodes();
        java.util.Map<String, Long> threads = threadKinds();
        int fds = fds();
        long start = System.nanoTime();
        try (SparkHcomm driverStore = SparkHcomm.start(sc)) {
            for (int s = 0; s < STAGES - ON_PARTITION_ZERO; s++) SparkHcommTest.assertAllReduceChecked(driverStore, 100 + s);
            assertThat(listeningInodes()).as("the driver's store listens while its handle is open").hasSize(listening.size() + 1);
        }
        try (SparkHcomm partitionZero = SparkHcomm.builder(sc).storeOnPartitionZero().start()) {
            for (int s = 0; s < ON_PARTITION_ZERO; s++) SparkHcommTest.assertAllReduceChecked(partitionZero, 200 + s);
        }
        System.out.printf("%d barrier stages of 4 ranks in %.1f s%n", STAGES, (System.nanoTime() - start) / 1e9);
        awaitNoHcommThreads();
        assertThat(listeningInodes()).as("listening sockets of this process").isEqualTo(listening);
        java.util.Map<String, Long> now = threadKinds();
        now.forEach((kind, n) -> assertThat(n).as("threads '%s' (all now: %s; before: %s)", kind, now, threads)
                .isLessThanOrEqualTo(threads.getOrDefault(kind, 0L)));
        assertThat(fds()).as("descriptors of this process").isLessThanOrEqualTo(fds + 2);
        assertThat(sharedMemoryFiles()).as("shared-memory files of this process").isEmpty();
    }

    /**
     * Platform threads by name with the numbers taken out, counted; without Spark's cached pools, which grow with the
     * shuffles and broadcasts its context cleaner removes and shrink only after a minute idle.
     */
    private static java.util.Map<String, Long> threadKinds() {
        java.util.Map<String, Long> kinds = new java.util.TreeMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            String kind = t.getName().replaceAll("[0-9]+", "#");
            if (SPARK_POOLS.stream().noneMatch(kind::startsWith)) kinds.merge(kind, 1L, Long::sum);
        }
        return kinds;
    }

    static void awaitNoHcommThreads() throws InterruptedException {
        awaitNoHcommThreads("");
    }

    /** Waits (10 s at most) until no HComm4J thread is alive but those whose names start with {@code except}. */
    static void awaitNoHcommThreads(String except) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        List<String> left;
        while (!(left = others(except)).isEmpty() && System.nanoTime() < deadline) Thread.sleep(20);
        assertThat(left).as("HComm4J threads alive after the sessions closed").isEmpty();
    }

    private static List<String> others(String except) {
        return hcommThreads().stream().filter(n -> except.isEmpty() || !n.startsWith(except)).toList();
    }

    /**
     * HComm4J's threads (all named hcomm-...), virtual ones too, from the JDK's thread containers: getAllStackTraces
     * lists platform threads only, and a JSON thread dump (HotSpotDiagnosticMXBean.dumpThreads) crashed JDK 25.0.3 here
     * under load when a virtual thread exited while being snapshotted (JDK-8392031). Needs
     * --add-exports=java.base/jdk.internal.vm=ALL-UNNAMED, which the build's test flags carry.
     */
    private static List<String> hcommThreads() {
        List<String> out = new ArrayList<>();
        try {
            Class<?> container = Class.forName("jdk.internal.vm.ThreadContainer");
            java.lang.reflect.Method children = container.getMethod("children");
            java.lang.reflect.Method threads = container.getMethod("threads");
            List<Object> todo = new ArrayList<>(List.of(Class.forName("jdk.internal.vm.ThreadContainers").getMethod("root").invoke(null)));
            while (!todo.isEmpty()) {
                Object c = todo.removeLast();
                try (Stream<?> s = (Stream<?>) threads.invoke(c)) {
                    s.map(t -> ((Thread) t).getName()).filter(n -> n.startsWith("hcomm")).forEach(out::add);
                }
                try (Stream<?> s = (Stream<?>) children.invoke(c)) {
                    s.forEach(todo::add);
                }
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot list threads: run with --add-exports=java.base/jdk.internal.vm=ALL-UNNAMED", e);
        }
        return out;
    }

    /** Inodes of the TCP sockets in LISTEN state that this process holds. */
    private static Set<Long> listeningInodes() throws IOException {
        Set<Long> mine = new HashSet<>();
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            for (Path p : s.toList()) {
                try {
                    String target = Files.readSymbolicLink(p).toString();
                    if (target.startsWith("socket:[")) mine.add(Long.parseLong(target.substring(8, target.length() - 1)));
                } catch (IOException e) {
                    // a descriptor closed while listed
                }
            }
        }
        Set<Long> out = new TreeSet<>();
        for (String table : new String[] {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
            List<String> lines = Files.readAllLines(Path.of(table));
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                long inode = Long.parseLong(f[9]);
                if (f[3].equals("0A") && mine.contains(inode)) out.add(inode);
            }
        }
        return out;
    }

    private static int fds() {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return (int) s.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The memory pool's and the rings' files are named hcomm4j-{pid namespace}-{pid}-...; these are this process's. */
    private static List<String> sharedMemoryFiles() throws IOException {
        String pid = "-" + ProcessHandle.current().pid() + "-";
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("hcomm4j-") && n.contains(pid)).toList();
        }
    }
}
