package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.TcpStore;
import io.hcomm4j.testing.FloodWorker;
import io.hcomm4j.testing.Ranks;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Thousands of idle and garbage connections against a running job's store and a rank's data port (issue 18): the
 * store is a process of its own with only 256 descriptors (so the flood drives its accept loop into EMFILE), the job is
 * three rank processes that run the seeded collective sequences (every element checked) while the flood holds.
 * Afterwards: every rank passed; the store process never spun (its CPU while the idle flood held) and still serves;
 * rank 0's descriptors stayed within its accept gate's cap; the logs name the refusals in a few lines, not thousands;
 * once the flood goes, the store's descriptors come back.
 */
@Timeout(300)
class FloodJobTest {
    private static final int IDLE_PER_TARGET = 1500;
    private static final int GARBAGE_PER_TARGET = 300;
    private static final String SECRET = "test-job-secret-0001";
    /** Place of the flood's sources: 127.0.0.2 .. 127.0.0.9, not the ranks' 127.0.0.1. */
    private static final int SOURCES = 8;

    @TempDir
    Path dir;

    @Test
    void aJobFinishesExactWhileThousandsOfConnectionsFloodItsStoreAndDataPort() throws Exception {
        int port = Ranks.freePort();
        Path storeLog = dir.resolve("store.log");
        List<String> cmd = new ArrayList<>(List.of("bash", "-c", "ulimit -n 256 && exec \"$@\"", "store"));
        cmd.addAll(Ranks.javaCommand(io.hcomm4j.testing.StoreServerMain.class, "127.0.0.1", String.valueOf(port), SECRET));
        Process store = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(storeLog.toFile()).start();
        List<SocketChannel> flood = new ArrayList<>();
        Path go = dir.resolve("go");
        Map<String, String> env = new HashMap<>();
        env.put("MASTER_PORT", String.valueOf(port));
        env.put("HCOMM_STORE_HOSTED", "1");
        env.put("HCOMM_TRANSPORT", "tcp");
        try {
            awaitLine(storeLog, "ready");
            try (Ranks.Job job = Ranks.start(3, FloodWorker.class, env, go.toString(), "1818")) {
                job.awaitAll(3, "UP");
                long storePid = store.pid();
                long rank0Pid = job.processes.get(0).pid();
                int dataPort = listeningPorts(rank0Pid).stream().findFirst().orElseThrow();
                long storeFdsBefore = descriptors(storePid);
                long rank0FdsBefore = descriptors(rank0Pid);
                InetSocketAddress storeAddr = new InetSocketAddress("127.0.0.1", port);
                InetSocketAddress dataAddr = new InetSocketAddress("127.0.0.1", dataPort);

                Random rnd = new Random(18);
                for (int i = 0; i < IDLE_PER_TARGET; i++) {
                    flood.add(idle(storeAddr, i));
                    flood.add(idle(dataAddr, i));
                }
                flood.addAll(garbage(storeAddr, rnd));
                flood.addAll(garbage(dataAddr, rnd));
                // the flood holds: the store's CPU over 3 s, descriptors sampled
                long[] max = {0, 0};
                long cpu0 = cpuTicks(storePid);
                long t0 = System.nanoTime();
                sample(storePid, rank0Pid, max, 3_000);
                double storeCores = (cpuTicks(storePid) - cpu0) / 100.0 / ((System.nanoTime() - t0) / 1e9);

                Files.writeString(go, "go");
                long deadline = System.nanoTime() + 180_000_000_000L;
                while (job.processes.stream().anyMatch(Process::isAlive) && System.nanoTime() < deadline) {
                    sample(storePid, rank0Pid, max, 200);
                }
                List<Ranks.Outcome> out = job.await(Duration.ofSeconds(30));
                for (Ranks.Outcome o : out) {
                    assertThat(o.exitCode()).as("rank %d:\n%s", o.rank(), o.output()).isZero();
                    assertThat(o.output()).contains("rank " + o.rank() + " PASS reductions", "rank " + o.rank() + " PASS data movement");
                }
                System.out.printf("FloodJobTest: %d connections held against the store and rank 0's data port; store CPU while "
                        + "the idle flood held %.3f cores; descriptors: store %d -> max %d (limit 256), rank 0 %d -> max %d%n",
                        flood.size(), storeCores, storeFdsBefore, max[0], rank0FdsBefore, max[1]);
                assertThat(storeCores).as("the store's CPU while the flood held (a spinning accept loop takes a core)").isLessThan(0.25);
                assertThat(max[1]).as("rank 0's descriptors (its data listener lets at most 256 handshakes in)")
                        .isLessThanOrEqualTo(rank0FdsBefore + 256 + 32);

                String log = Files.readString(storeLog);
                long lines = log.lines().filter(l -> l.contains("refused") || l.contains("accept failed")).count();
                System.out.println("FloodJobTest: the store's log lines about the flood: " + lines);
                log.lines().filter(l -> l.contains("refused") || l.contains("accept failed")).limit(6).forEach(l -> System.out.println("  " + l));
                assertThat(lines).as("the store's log stays readable").isLessThanOrEqualTo(20);
                for (Ranks.Outcome o : out) {
                    long rankLines = o.output().lines().filter(l -> l.contains("refused") || l.contains("accept failed")).count();
                    assertThat(rankLines).as("rank %d's log lines about the flood", o.rank()).isLessThanOrEqualTo(20);
                }
            }
            for (SocketChannel c : flood) c.close();
            flood.clear();
            assertThat(store.isAlive()).as("the store process").isTrue();
            try (TcpStore check = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), SECRET, Duration.ofSeconds(30))) {
                check.set("after-the-flood", "yes".getBytes(StandardCharsets.UTF_8));
                assertThat(new String(check.get("after-the-flood", Duration.ofSeconds(5)), StandardCharsets.UTF_8)).isEqualTo("yes");
            }
        } finally {
            for (SocketChannel c : flood) c.close();
            store.destroyForcibly();
            store.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** A connection that says nothing, from 127.0.0.(2 + i mod 8); not waited for (the listener's backlog may be full). */
    private static SocketChannel idle(InetSocketAddress to, int i) throws IOException {
        SocketChannel ch = SocketChannel.open();
        ch.bind(new InetSocketAddress("127.0.0." + (2 + i % SOURCES), 0));
        ch.configureBlocking(false);
        ch.connect(to);
        return ch;
    }

    /** Connections that send 1-200 random bytes, from the flood's addresses, 16 at a time. */
    private static List<SocketChannel> garbage(InetSocketAddress to, Random rnd) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            List<Future<SocketChannel>> fs = new ArrayList<>();
            for (int i = 0; i < GARBAGE_PER_TARGET; i++) {
                byte[] junk = new byte[1 + rnd.nextInt(200)];
                rnd.nextBytes(junk);
                int source = 2 + i % SOURCES;
                fs.add(pool.submit(() -> {
                    SocketChannel ch = SocketChannel.open();
                    try {
                        ch.bind(new InetSocketAddress("127.0.0." + source, 0));
                        ch.socket().connect(to, 1000);
                        ch.write(ByteBuffer.wrap(junk));
                    } catch (IOException backlogFullOrClosed) {
                        // the listener's backlog is full, or it closed at once: both are the point
                    }
                    return ch;
                }));
            }
            List<SocketChannel> chs = new ArrayList<>();
            for (Future<SocketChannel> f : fs) chs.add(f.get(60, TimeUnit.SECONDS));
            return chs;
        } finally {
            pool.shutdownNow();
        }
    }

    private static void sample(long storePid, long rank0Pid, long[] max, long millis) throws Exception {
        long end = System.nanoTime() + millis * 1_000_000;
        while (System.nanoTime() < end) {
            max[0] = Math.max(max[0], descriptors(storePid));
            max[1] = Math.max(max[1], descriptors(rank0Pid));
            Thread.sleep(50);
        }
    }

    private static long descriptors(long pid) {
        try (Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            return fds.count();
        } catch (IOException gone) {
            return 0;
        }
    }

    /** utime + stime of a process, in clock ticks (1/100 s). */
    private static long cpuTicks(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** TCP ports process {@code pid} listens on (its socket inodes matched in /proc/net/tcp and tcp6). */
    private static Set<Integer> listeningPorts(long pid) throws IOException {
        Set<String> inodes = new HashSet<>();
        try (Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) inodes.add(target.substring(8, target.length() - 1));
                } catch (IOException closedMeanwhile) {
                    // gone
                }
            }
        }
        Set<Integer> ports = new HashSet<>();
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            List<String> lines = Files.readAllLines(Path.of(table)); // once: other tests' sockets come and go meanwhile
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                if (f[3].equals("0A") && inodes.contains(f[9])) ports.add(Integer.parseInt(f[1].substring(f[1].indexOf(':') + 1), 16));
            }
        }
        return ports;
    }

    private static void awaitLine(Path log, String word) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!Files.exists(log) || !Files.readString(log).contains(word)) {
            if (System.nanoTime() > deadline) throw new AssertionError("the store did not start:\n" + (Files.exists(log) ? Files.readString(log) : ""));
            Thread.sleep(20);
        }
    }
}
