package io.hcomm4j.testing;

import io.hcomm4j.CommAbortedException;
import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.HcommException;
import io.hcomm4j.Health;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.ReduceOp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A rank of the fault-injection jobs ({@code FaultInjectionTest}); the arguments are its scenarios, run in turn (the
 * next only if one ended well: {@code busy allreduce}). Lines it prints
 * for the test to read (times are epoch milliseconds, so the test can subtract the moment it injected the fault):
 * <ul>
 *   <li>{@code READY}: initialized, the connection to the next rank made (the failure-notice ring);</li>
 *   <li>{@code SCENARIO <name>}: a scenario begins;</li>
 *   <li>{@code RUNNING}: in the middle of its loop of all-reduces (scenario {@code allreduce});</li>
 *   <li>{@code CAUGHT <Exception> at=<ms> ranks=<failed ranks> msg=<message>}: the op that failed;</li>
 *   <li>{@code HEALTH <state> <failed ranks> at=<ms> thread=<name>}: a health listener call;</li>
 *   <li>{@code SURVIVORS OK}: the ranks left still exchange point-to-point messages;</li>
 *   <li>{@code CLOSED threads=<hcomm threads alive> fds=<open fds after close minus before init>}.</li>
 * </ul>
 * Scenarios: {@code allreduce} (every rank loops over 1 MiB all-reduces until one fails; the test kills or stops the
 * last rank), {@code isolated} (rank 1 never talks to the last rank, which the test kills; rank 1 learns from its health
 * listener), {@code busy} (rank 1 computes for 1.5 times the heartbeat timeout, 3 s at least, with two more threads
 * burning CPU, while the others wait in a barrier longer than the heartbeat timeout: nobody may be declared failed).
 */
public final class FaultWorker {
    private FaultWorker() {
    }

    public static void main(String[] args) throws Exception {
        warmUpJdk();
        java.util.Set<String> fdsAtStart = fdTargets();
        long fdsBefore = fdsAtStart.size();
        int code = 0;
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            comm.addHealthListener(h -> System.out.printf("HEALTH %s %s at=%d thread=%s reason=%s%n", h.state(), h.failedRanks(),
                    System.currentTimeMillis(), Thread.currentThread().getName(), h.reason()));
            awaitNeighbour(hcomm);
            System.out.println("READY");
            System.out.flush();
            for (String scenario : args) {
                System.out.println("SCENARIO " + scenario);
                code = switch (scenario) {
                    case "allreduce" -> allReduceUntilFailure(hcomm);
                    case "isolated" -> isolated(hcomm);
                    case "busy" -> busy(hcomm);
                    default -> throw new IllegalArgumentException(scenario);
                };
                System.out.flush();
                if (code != 0) break;
            }
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (hcommThreads() > 0 && System.nanoTime() < deadline) Thread.sleep(10);
        java.util.Set<String> extra = fdTargets();
        System.out.printf("CLOSED threads=%d fds=%d%n", hcommThreads(), extra.size() - fdsBefore);
        extra.removeAll(fdsAtStart);
        if (!extra.isEmpty()) System.out.println("FDS OPENED SINCE START: " + extra);
        for (String f : extra) {
            int at = f.indexOf("socket:[");
            if (at < 0) continue;
            String inode = f.substring(at + 8, f.length() - 1);
            for (String table : new String[] {"/proc/self/net/tcp", "/proc/self/net/tcp6", "/proc/self/net/unix"}) {
                for (String l : Files.readAllLines(Path.of(table))) if (l.contains(" " + inode + " ")) System.out.println("SOCKET " + table + ": " + l.trim());
            }
        }
        System.out.flush();
        System.exit(code);
    }

    /** Waits until the connection to the next rank (opened at init when heartbeats are on) is there. */
    private static void awaitNeighbour(Hcomm h) throws InterruptedException {
        int n = h.world().size(), next = (h.world().rank() + 1) % n;
        if (n < 2 || (n == 2 && h.world().rank() == 1)) next = 1 - h.world().rank();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (h.transportTo(next).equals("none") && System.nanoTime() < deadline) Thread.sleep(5);
    }

    private static int allReduceUntilFailure(Hcomm hcomm) throws InterruptedException {
        Communicator comm = hcomm.world();
        int rank = comm.rank(), n = comm.size(), victim = n - 1;
        float[] data = new float[256 * 1024];
        long i = 0;
        try {
            while (true) {
                java.util.Arrays.fill(data, 1f);
                comm.allReduce(data, ReduceOp.SUM);
                if (data[0] != n) throw new AssertionError("iteration " + i + ": " + data[0]);
                if (++i == 20) {
                    System.out.println("RUNNING");
                    System.out.flush();
                }
            }
        } catch (HcommException e) {
            caught(e);
        }
        Health h = comm.health();
        System.out.printf("FINAL %s %s%n", h.state(), h.failedRanks());
        if (rank == victim) return 3; // it was stopped and continued: left out by the others
        // a later collective fails at once; the survivors still talk point to point
        try {
            comm.barrier();
            System.out.println("BARRIER PASSED");
        } catch (PeerFailedException e) {
            System.out.println("LATER COLLECTIVE " + e.failedRanks());
        }
        survivorsExchange(comm, n - 1);
        survivorsMeet(comm, n - 1);
        return 0;
    }

    /**
     * Returns once every survivor (ranks 0 .. live-1) got here: none closes its session (which its peers would see, and
     * report in their health) before every one has printed what it saw.
     */
    private static void survivorsMeet(Communicator comm, int live) {
        int rank = comm.rank();
        java.util.List<CommFuture<Status>> rs = new java.util.ArrayList<>();
        for (int p = 0; p < live; p++) if (p != rank) rs.add(comm.recvAsync(new byte[1], p, 78));
        for (int p = 0; p < live; p++) if (p != rank) comm.send(new byte[1], p, 78);
        for (CommFuture<Status> r : rs) r.await();
    }

    private static void caught(HcommException e) {
        String ranks = e instanceof PeerFailedException p ? p.failedRanks().toString() : "-";
        // one write, so that no log line of another thread lands in its middle
        System.out.println(String.format("CAUGHT %s at=%d ranks=%s msg=%s", e.getClass().getSimpleName(), System.currentTimeMillis(), ranks,
                e.getMessage().replace('\n', ' ')));
        System.out.flush();
    }

    private static void survivorsExchange(Communicator comm, int live) {
        int rank = comm.rank();
        if (live < 2) {
            System.out.println("SURVIVORS OK");
            return;
        }
        int next = (rank + 1) % live, prev = (rank - 1 + live) % live;
        byte[] in = new byte[4];
        var r = comm.recvAsync(in, prev, 77);
        comm.send(new byte[] {(byte) rank, 1, 2, 3}, next, 77);
        r.await();
        if (in[0] != (byte) prev) throw new AssertionError("survivor exchange broken");
        System.out.println("SURVIVORS OK");
    }

    /** Rank 1 never talks to the victim (the last rank); it learns of its death from the others. */
    private static int isolated(Hcomm hcomm) throws InterruptedException {
        Communicator comm = hcomm.world();
        int rank = comm.rank(), victim = comm.size() - 1;
        if (rank == victim) {
            Thread.sleep(600_000);
            return 0;
        }
        CountDownLatch learned = new CountDownLatch(1);
        comm.addHealthListener(h -> {
            if (h.state() != Health.State.READY) learned.countDown();
        });
        if (!learned.await(60, TimeUnit.SECONDS)) {
            System.out.println("NOT LEARNED");
            return 2;
        }
        System.out.printf("LEARNED at=%d failed=%s transport to victim: %s%n", System.currentTimeMillis(),
                comm.health().failedRanks(), hcomm.transportTo(victim));
        survivorsMeet(comm, comm.size() - 1); // every survivor learned it before any goes on (and, later, closes)
        try {
            comm.allReduce(new int[4], ReduceOp.SUM);
            System.out.println("COLLECTIVE PASSED");
        } catch (PeerFailedException e) {
            caught(e);
        }
        survivorsExchange(comm, comm.size() - 1);
        survivorsMeet(comm, comm.size() - 1);
        return 0;
    }

    /**
     * Rank 1 is busy (no library call) for 1.5 times the heartbeat timeout, 3 s at least (3 s with the tests' 2 s); the
     * others wait for it in a barrier. A rank whose heartbeats stopped while it computed would be declared failed at
     * the timeout, a second or more before the busy spell ends.
     */
    private static int busy(Hcomm hcomm) throws InterruptedException {
        Communicator comm = hcomm.world();
        long busyMs = Math.max(3_000, hcomm.config().heartbeatTimeout().toMillis() * 3 / 2);
        comm.barrier();
        long t0 = System.nanoTime();
        if (comm.rank() == 1) {
            Thread[] burners = new Thread[2];
            for (int i = 0; i < burners.length; i++) burners[i] = Thread.ofPlatform().start(() -> burn(busyMs));
            burn(busyMs);
            for (Thread t : burners) t.join();
        }
        try {
            comm.barrier();
            comm.allReduce(new int[] {1}, ReduceOp.SUM);
        } catch (HcommException e) {
            caught(e);
            return 4;
        }
        Health.State state = comm.health().state();
        System.out.printf("BUSY DONE after %d ms, health %s%n", (System.nanoTime() - t0) / 1_000_000, state);
        comm.barrier(); // nobody closes (which the others would see in their health) before every rank has looked
        return state == Health.State.READY ? 0 : 5;
    }

    /** Computes (and makes garbage, so the collector runs) for {@code ms}. */
    private static void burn(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        long x = 0;
        while (System.nanoTime() < end) {
            long[] junk = new long[1024];
            for (int i = 0; i < junk.length; i++) junk[i] = x += i * 31L;
            x ^= junk[(int) (x & 1023)];
        }
        if (x == 42) System.out.println("!");
    }

    static long hcommThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("hcomm-")).count();
    }

    /**
     * Opens what the JDK opens once per process and keeps (the class path's jars through the logger's service lookup,
     * the random devices, NIO's pre-close socket pair, the virtual-thread I/O pollers), so that the descriptor count
     * taken after this and the one after close differ only by what the session left open.
     */
    static void warmUpJdk() throws Exception {
        org.slf4j.LoggerFactory.getLogger(FaultWorker.class);
        new java.security.SecureRandom().nextLong();
        java.security.SecureRandom.getInstanceStrong();
        try (java.nio.channels.Selector sel = java.nio.channels.Selector.open()) {
            sel.selectNow();
        }
        try (java.nio.channels.ServerSocketChannel ss = java.nio.channels.ServerSocketChannel.open()) {
            ss.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0));
            Thread v = Thread.ofVirtual().start(() -> {
                try (java.nio.channels.SocketChannel c = java.nio.channels.SocketChannel.open(ss.getLocalAddress())) {
                    c.read(java.nio.ByteBuffer.allocate(1));
                } catch (IOException ignored) {
                    // closed by the other side: done
                }
            });
            try (java.nio.channels.SocketChannel a = ss.accept()) {
                Thread.sleep(20);
            }
            v.join();
        }
    }

    static java.util.Set<String> fdTargets() throws IOException {
        java.util.Set<String> out = new java.util.TreeSet<>();
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            for (Path p : s.toList()) {
                try {
                    String target = Files.readSymbolicLink(p).toString();
                    if (target.startsWith("/proc/")) continue; // this listing itself
                    out.add(p.getFileName() + "->" + target);
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        }
        return out;
    }

    static long openFds() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }
}
