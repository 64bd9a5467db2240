package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.TcpStoreServer;
import io.hcomm4j.testing.Engines;
import io.hcomm4j.testing.ShmDir;
import io.hcomm4j.testing.TransferWorker;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Transfer engines in separate JVMs ({@link TransferWorker}), on a store this test serves, over shared memory
 * ({@code auto}: one host) and TCP ({@code HCOMM_TRANSPORT=tcp}): seeded random batches checked byte for byte with
 * notifications once each and in order, then, in the same JVMs, an engine that joins late and one that leaves while the
 * others go on; a target killed (SIGKILL) during batches, whose batches end FAILED within the detection time of
 * docs/reliability.md while the batches to another engine go on; then that other engine stopped (SIGSTOP), whose
 * batches end TIMEOUT and which serves again after SIGCONT. For the last two the origin engine is this JVM's.
 */
class TransferEngineProcessTest {
    /** A killed process is noticed "at once" (docs/reliability.md: tens of ms); a loaded 2-core machine gets some slack. */
    private static final long DETECT_NANOS = 3_000_000_000L;
    private static final Duration T = Duration.ofSeconds(60);
    @RegisterExtension
    final ShmDir shm = new ShmDir("hcomm-xfer-proc-");
    private TcpStoreServer store;
    private Path logs;
    private final List<Process> procs = new ArrayList<>();
    private final List<TransferEngine> engines = new ArrayList<>();
    private final Arena arena = Arena.ofShared();

    @BeforeEach
    void setUp() throws Exception {
        store = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "test-job-secret-0001");
        logs = Files.createTempDirectory("hcomm-xfer-logs");
    }

    @AfterEach
    void tearDown() throws Exception {
        for (Process p : procs) p.destroyForcibly();
        for (Process p : procs) p.waitFor(10, TimeUnit.SECONDS);
        for (TransferEngine e : engines) e.close(); // its pool's close also removes what the killed processes left
        store.close();
        arena.close();
        shm.assertEmpty();
    }

    private Process start(String name, String transport, String... args) throws Exception {
        Process p = Engines.startWorker(logs, name, store.address().getPort(), transport, shm.path().toString(), args);
        procs.add(p);
        return p;
    }

    private String log(String name) throws Exception {
        return Files.readString(logs.resolve(name + ".log"));
    }

    private void awaitLine(String name, String word) throws Exception {
        awaitLine(name, word, T);
    }

    private void awaitLine(String name, String word, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!log(name).contains(word)) {
            if (System.nanoTime() > deadline) throw new AssertionError(name + " never said " + word + ":\n" + log(name));
            Thread.sleep(20);
        }
    }

    private void awaitExit(String name, Process p, Duration timeout) throws Exception {
        if (!p.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError(name + " did not finish within " + timeout + ":\n" + log(name));
        }
        assertThat(p.exitValue()).as("exit code of %s:\n%s", name, log(name)).isZero();
    }

    private TransferEngine engine(String name, String transport) {
        TransferEngine e = TransferEngine.start(Engines.config(name, store.address().getPort(), transport, shm.path().toString()));
        engines.add(e);
        return e;
    }

    /**
     * Three JVMs, each running two engines one after the other: first {@code r0..r2}, 20 seeded random batches each
     * (40 before: the same kinds of op, twice as often; together the three engines' batches draw every kind of op,
     * asserted), then {@code steady}, {@code leaver} and {@code late}: steady and leaver transfer to each other, late's
     * engine starts at our word after their tenth batch and joins them, and leaver leaves while the others go on. (Two
     * tests with three JVMs each before.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"auto", "tcp"})
    void seededRandomBatchesThenAnEngineJoinsLateAndOneLeavesWhileTheOthersGoOn(String transport) throws Exception {
        int n = 3;
        String[] then = {"steady", "leaver", "late"};
        List<Process> ps = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            List<String> args = new ArrayList<>(List.of("random", String.valueOf(i), String.valueOf(n), "20", "then", then[i]));
            if (i == 2) args.add("on-stdin");
            ps.add(start("r" + i, transport, args.toArray(String[]::new)));
        }
        // the late engine starts at our word after the others' tenth batch: they do not go on for a JVM's start or a
        // random scenario's end
        awaitLine("r0", "BATCHES 10", Duration.ofMinutes(4));
        awaitLine("r1", "BATCHES 10", Duration.ofMinutes(4));
        ps.get(2).getOutputStream().write('\n');
        ps.get(2).getOutputStream().flush();
        for (int i = 0; i < n; i++) awaitExit("r" + i, ps.get(i), Duration.ofMinutes(5));
        String kind = transport.equals("tcp") ? "tcp" : "shm";
        java.util.Set<String> kinds = new java.util.TreeSet<>();
        for (int i = 0; i < n; i++) {
            assertThat(log("r" + i)).contains("PASS random r" + i).contains("CLOSED");
            for (int j = 0; j < n; j++) if (j != i) assertThat(log("r" + i)).contains("transport to r" + j + ": " + kind);
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("KINDS \\[(.*)]").matcher(log("r" + i));
            assertThat(m.find()).as(log("r" + i)).isTrue();
            kinds.addAll(List.of(m.group(1).split(", ")));
        }
        assertThat(kinds).containsExactlyInAnyOrder("read", "write", "heap", "pool", "plain", "in-pool", "in-plain", "out-pool",
                "out-plain", "0 B", "16 MiB", "sync", "async");
        assertThat(log("r1")).contains("LEFT");
        assertThat(log("r0")).contains("leaver gone").contains("PASS churn steady");
        assertThat(log("r2")).contains("leaver gone").contains("PASS churn late");
    }

    /** What one batch to the victim did, as the origin saw it. */
    private record Outcome(long issued, long ended, TransferStatus status, String error) {
    }

    /**
     * One origin (this JVM's engine) and two targets: the victim is killed during batches, whose batches end FAILED
     * within the detection time while the batches to the bystander go on; then the bystander is stopped, and its
     * batches end TIMEOUT, until it is continued and serves again. (Two tests before, each with targets of its own:
     * the stopped target of the second is the first one's bystander, one JVM and one origin engine fewer.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"auto", "tcp"})
    void aKilledTargetFailsItsBatchesInTheDetectionTimeAStoppedOneTimesOutAndServesOnceContinued(String transport) throws Exception {
        Process victim = start("victim", transport, "serve", "1", "1");
        Process bystander = start("bystander", transport, "serve", "2", "1");
        awaitLine("victim", "READY");
        awaitLine("bystander", "READY");
        TransferEngine o = engine("origin", transport);
        RemoteEngine rv = o.connect("victim", T);
        RemoteEngine rb = o.connect("bystander", T);
        aKilledTargetFailsItsBatchesWithinTheDetectionTimeAndTheOthersGoOn(transport, o, victim, rv, rb);
        aStoppedTargetTimesOutAndServesAgainOnceContinued(transport, o, bystander, rb, 2);
    }

    private void aKilledTargetFailsItsBatchesWithinTheDetectionTimeAndTheOthersGoOn(String transport, TransferEngine o, Process victim,
                                                                                  RemoteEngine rv, RemoteEngine rb) throws Exception {
        long big = 16L << 20;
        MemorySegment w = o.memory().allocate(big).segment();
        Engines.fill(w, 0, big, 77, 0);
        MemorySegment r = arena.allocate(big + (1 << 20), 4096);
        MemorySegment rb4 = arena.allocate(8L << 20, 4096);
        List<Outcome> outcomes = new CopyOnWriteArrayList<>();
        long[] killAt = {0};
        int[] afterKill = {0};
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        Thread loop = Thread.ofPlatform().start(() -> {
            try {
                TransferBatch pending = null;
                while (afterKill[0] < 8) {
                    if (pending == null || pending.status().isFinal()) {
                        // frames (plain segments) and, on one host, copies into the mapping (pool segments)
                        long issued = System.nanoTime();
                        pending = o.transferAsync(rv, List.of(TransferOp.write(w, 0, "in-plain", 0, big),
                                TransferOp.read(r, 0, "out-plain", 0, big), TransferOp.read(r, big, "out-pool", 100, 1 << 20)), T);
                        // the end as it happens (on whichever thread ends it), not when this loop looks
                        pending.future().thenAccept(x -> outcomes.add(new Outcome(issued, System.nanoTime(), x.status(), String.valueOf(x.error()))));
                        if (killAt[0] != 0) afterKill[0]++;
                    }
                    // the bystander keeps serving, checked byte for byte
                    TransferBatch b = o.transfer(rb, List.of(TransferOp.read(rb4, 0, "out-plain", 3, 4 << 20),
                            TransferOp.read(rb4, 4 << 20, "out-pool", 5, 4 << 20), TransferOp.write(w, 0, "in-pool", 0, 4 << 20)));
                    assertThat(b.status()).as("bystander batch: %s", b.error()).isEqualTo(TransferStatus.COMPLETED);
                    assertThat(Engines.mismatch(rb4, 0, 4 << 20, TransferWorker.outSeed(2, 1), 3)).isEqualTo(-1);
                    assertThat(Engines.mismatch(rb4, 4 << 20, 4 << 20, TransferWorker.outSeed(2, 0), 5)).isEqualTo(-1);
                }
                pending.await();
            } catch (Throwable t) {
                errors.add(t);
            }
        });
        while (outcomes.stream().filter(x -> x.status() == TransferStatus.COMPLETED).count() < 3 && loop.isAlive()) Thread.sleep(5);
        assertThat(errors).isEmpty();
        // kill it while a batch to it is in flight
        killAt[0] = System.nanoTime();
        victim.destroyForcibly(); // SIGKILL
        victim.waitFor();
        loop.join(Duration.ofMinutes(2));
        assertThat(loop.isAlive()).as("the origin's loop hangs").isFalse();
        assertThat(errors).isEmpty();
        long firstFailed = Long.MAX_VALUE;
        for (Outcome x : outcomes) {
            assertThat(x.status()).as("%s", x).isIn(TransferStatus.COMPLETED, TransferStatus.FAILED);
            if (x.issued() >= killAt[0]) assertThat(x.status()).as("a batch issued after the kill").isEqualTo(TransferStatus.FAILED);
            if (x.ended() >= killAt[0]) {
                assertThat(x.ended() - Math.max(killAt[0], x.issued())).as("%s ended late", x).isLessThan(DETECT_NANOS);
            }
            if (x.status() == TransferStatus.FAILED) {
                assertThat(x.error()).contains("victim");
                firstFailed = Math.min(firstFailed, x.ended());
            }
        }
        assertThat(firstFailed - killAt[0]).as("time from the kill to the first FAILED batch").isLessThan(DETECT_NANOS);
        System.out.printf("%s: first FAILED batch %.1f ms after the kill; %d batches to the victim%n", transport,
                (firstFailed - killAt[0]) / 1e6, outcomes.size());
        assertThat(o.transfer(rb, List.of(TransferOp.read(rb4, 0, "out-plain", 0, 1000))).status()).isEqualTo(TransferStatus.COMPLETED);
    }

    /** {@code sleeper} (the target {@code rv} of engine index {@code index}) is stopped, times out, is continued and serves. */
    private void aStoppedTargetTimesOutAndServesAgainOnceContinued(String transport, TransferEngine o, Process sleeper, RemoteEngine rv,
                                                                   int index) throws Exception {
        MemorySegment r = arena.allocate(16L << 20, 4096);
        assertThat(o.transfer(rv, List.of(TransferOp.read(r, 0, "out-plain", 0, 4 << 20))).status()).isEqualTo(TransferStatus.COMPLETED);
        signal("STOP", sleeper);
        try {
            long t0 = System.nanoTime();
            TransferBatch b = o.transfer(rv, List.of(TransferOp.read(r, 0, "out-plain", 0, 4 << 20)), Duration.ofMillis(800));
            long took = System.nanoTime() - t0;
            assertThat(b.status()).isEqualTo(TransferStatus.TIMEOUT);
            assertThat(b.error().orElseThrow()).isInstanceOf(CommTimeoutException.class).hasMessageContaining("within 800 ms");
            assertThat(took).isBetween(790_000_000L, 3_000_000_000L);
            // an async batch nobody waits for turns TIMEOUT too (the watchdog's tick)
            t0 = System.nanoTime();
            TransferBatch a = o.transferAsync(rv, List.of(TransferOp.write(r, 0, "in-plain", 0, 16L << 20)), Duration.ofMillis(800));
            while (!a.status().isFinal() && System.nanoTime() - t0 < 10_000_000_000L) Thread.sleep(10);
            assertThat(a.status()).isEqualTo(TransferStatus.TIMEOUT);
            long asyncTook = System.nanoTime() - t0;
            assertThat(asyncTook).isBetween(790_000_000L, 3_000_000_000L);
            System.out.printf("%s: TIMEOUT after %.0f ms (blocking), %.0f ms (async, seen by polling every 10 ms)%n", transport,
                    took / 1e6, asyncTook / 1e6);
            assertThat(a.future().isDone()).isTrue();
            if (!transport.equals("tcp")) {
                // a segment in its pool is mapped here: copied in place, no message, so its stopped process does not matter
                TransferBatch d = o.transfer(rv, List.of(TransferOp.read(r, 0, "out-pool", 17, 4 << 20)), Duration.ofSeconds(5));
                assertThat(d.status()).isEqualTo(TransferStatus.COMPLETED);
                assertThat(Engines.mismatch(r, 0, 4 << 20, TransferWorker.outSeed(index, 0), 17)).isEqualTo(-1);
            }
        } finally {
            signal("CONT", sleeper);
        }
        Engines.fill(r, 0, 1 << 20, 55, 0);
        TransferBatch again = o.transfer(rv, List.of(TransferOp.write(r, 0, "in-plain", 123, 1 << 20),
                TransferOp.read(r, 2 << 20, "out-plain", 9, 1 << 20)), T);
        assertThat(again.status()).as("%s", again.error()).isEqualTo(TransferStatus.COMPLETED);
        assertThat(Engines.mismatch(r, 2 << 20, 1 << 20, TransferWorker.outSeed(index, 1), 9)).isEqualTo(-1);
        TransferBatch back = o.transfer(rv, List.of(TransferOp.read(r, 4 << 20, "in-plain", 123, 1 << 20)), T);
        assertThat(back.status()).isEqualTo(TransferStatus.COMPLETED);
        assertThat(Engines.mismatch(r, 4 << 20, 1 << 20, 55, 0)).isEqualTo(-1);
    }

    private static void signal(String sig, Process p) throws Exception {
        Process k = new ProcessBuilder("kill", "-" + sig, String.valueOf(p.pid())).inheritIO().start();
        assertThat(k.waitFor()).isZero();
        if (sig.equals("STOP")) awaitStopped(p);
    }

    /**
     * Waits until every thread of {@code p} is stopped: {@code kill} returns once the signal is sent, and on a loaded
     * machine a thread of the target may still run for a while (it once served a whole read after the kill returned).
     */
    private static void awaitStopped(Process p) throws Exception {
        Path tasks = Path.of("/proc", String.valueOf(p.pid()), "task");
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            boolean all = true;
            try (var ts = Files.list(tasks)) {
                for (Path t : ts.toList()) {
                    String stat;
                    try {
                        stat = Files.readString(t.resolve("stat"));
                    } catch (java.io.IOException gone) {
                        continue; // the thread ended meanwhile
                    }
                    char state = stat.charAt(stat.lastIndexOf(')') + 2); // after "pid (comm) "
                    if (state != 'T' && state != 't') all = false;
                }
            }
            if (all) return;
            assertThat(System.nanoTime()).as("process %d stopped within 10 s", p.pid()).isLessThan(deadline);
            Thread.sleep(1);
        }
    }
}
