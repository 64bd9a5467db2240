package io.hcomm4j;

import io.hcomm4j.testing.ClosedClean;
import io.hcomm4j.testing.ShmDir;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.TcpStore;
import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.StoreRestartWorker;
import io.hcomm4j.testing.StoreServerMain;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;

/**
 * The job's store is a process of its own ({@link StoreServerMain}, as {@code hcomm store} or a launcher runs it; the
 * ranks have {@code HCOMM_STORE_HOSTED=1}), and the test SIGKILLs it while ranks are in {@link Hcomm#init()}: started
 * again on the same port, every rank completes init and an all-reduce (every element checked) and the other collectives
 * of {@code ShrinkWorker.checkCollectives}; not started again, every rank's init fails within
 * {@code HCOMM_STORE_RECONNECT} with an exception naming the store's address. Either way no rank hangs, and after close
 * no {@code hcomm-*} thread (virtual ones included) and no extra descriptor is left. Times are printed
 * (docs/reliability.md quotes them).
 */
@Timeout(60)
class StoreRestartTest {
    private static final Pattern INIT = Pattern.compile("INIT rank=(\\d+) at=(\\d+) took=(\\d+)");
    private static final Pattern FAILED = Pattern.compile("INIT FAILED at=(\\d+) type=(\\S+) msg=(.*)");
    private static final Pattern RECONNECTED = Pattern.compile("reconnected to the store after (\\d+) ms \\((\\d+) attempt");

    @RegisterExtension
    final ShmDir shm = new ShmDir("hcomm-store-restart-test-");
    private Process store;

    @AfterEach
    void cleanUp() throws Exception {
        if (store != null) {
            store.destroyForcibly();
            store.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private Map<String, String> env(int port, String reconnect) {
        Map<String, String> env = new HashMap<>();
        env.put("MASTER_PORT", String.valueOf(port));
        env.put("HCOMM_STORE_HOSTED", "1");
        env.put("HCOMM_STORE_RECONNECT", reconnect);
        env.put("HCOMM_INIT_TIMEOUT", "45s");
        env.put("HCOMM_SHM_DIR", shm.path().toString());
        return env;
    }

    /** Starts the store process on {@code port} and waits until it serves. */
    private static Process startStore(int port) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(Ranks.javaCommand(StoreServerMain.class, "127.0.0.1", String.valueOf(port), "test-job-secret-0001"));
        pb.redirectErrorStream(true);
        Process p = pb.start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null) {
            if (line.startsWith("ready")) {
                // keep draining, so the store never blocks on a full pipe
                Thread.ofVirtual().start(() -> {
                    try {
                        while (out.readLine() != null) {
                            // discard
                        }
                    } catch (IOException ignored) {
                        // the store was killed
                    }
                });
                return p;
            }
        }
        throw new AssertionError("the store process ended before it served (exit " + p.waitFor() + ")");
    }

    /** Waits until ranks {@code 0 .. n-1} have published their addresses in session 1 (they are then waiting in init). */
    private static void awaitPublished(int port, int n) {
        try (TcpStore viewer = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), "test-job-secret-0001", Duration.ofSeconds(30))) {
            List<String> keys = java.util.stream.IntStream.range(0, n).mapToObj(r -> "hcomm/1/addr/" + r).toList();
            viewer.await(keys, Duration.ofSeconds(40));
        }
    }

    @Test
    void storeKilledAndRestartedDuringInitEveryRankCompletesInitAndAllReduces() throws Exception {
        int n = 4;
        int port = Ranks.freePort();
        store = startStore(port);
        try (Ranks.Job job = Ranks.startSome(n, n - 1, StoreRestartWorker.class, env(port, "30s"))) {
            awaitPublished(port, n - 1); // ranks 0..2 wait in init for rank 3
            long killed = System.currentTimeMillis();
            store.destroyForcibly(); // SIGKILL: the store's data is gone
            assertThat(store.waitFor(10, TimeUnit.SECONDS)).isTrue();
            Thread.sleep(1000); // nothing listens for a while: the ranks' reconnect attempts are refused
            long restarted = System.currentTimeMillis();
            store = startStore(port);
            long serving = System.currentTimeMillis();
            job.startRank(n - 1, n, StoreRestartWorker.class, env(port, "30s"));

            List<Ranks.Outcome> outcomes = job.await(Duration.ofSeconds(45));
            long latest = 0;
            for (Ranks.Outcome o : outcomes) {
                String out = o.output();
                assertThat(o.exitCode()).as("rank %d:\n%s", o.rank(), out).isZero();
                Matcher m = INIT.matcher(out);
                assertThat(m.find()).as(out).isTrue();
                assertThat(m.group(1)).isEqualTo(String.valueOf(o.rank()));
                long initAt = Long.parseLong(m.group(2));
                latest = Math.max(latest, initAt);
                assertThat(out).contains("ALLREDUCE OK 65536", "CHECKED allReduce", "CHECKED all");
                ClosedClean.assertIn(out, "rank", 0);
                if (o.rank() < n - 1) {
                    Matcher r = RECONNECTED.matcher(out);
                    assertThat(r.find()).as("rank %d reconnected:\n%s", o.rank(), out).isTrue();
                    assertThat(out).as("rank %d saw the restart", o.rank()).contains("the store restarted");
                    System.out.printf("StoreRestartTest: rank %d reconnected %s ms after it lost the store (%s attempts), "
                                    + "%d ms after the new store served; init returned %d ms after the restart%n",
                            o.rank(), r.group(1), r.group(2), Long.parseLong(r.group(1)) - (serving - killed), initAt - restarted);
                } else {
                    System.out.printf("StoreRestartTest: rank %d (started after the restart) init took %s ms%n", o.rank(), m.group(3));
                }
            }
            System.out.printf("StoreRestartTest: SIGKILL -> restart %d ms, restart -> store serving %d ms, restart -> init done on all %d ranks %d ms%n",
                    restarted - killed, serving - restarted, n, latest - restarted);
        }
        shm.assertEmpty();
    }

    @Test
    void storeKilledAndRestartedWhileEveryRankIsSomewhereInInit() throws Exception {
        int n = 4;
        int port = Ranks.freePort();
        store = startStore(port);
        try (Ranks.Job job = Ranks.startSome(n, n, StoreRestartWorker.class, env(port, "30s"))) {
            // the moment rank 0 has written the session's token: the others are connecting, publishing or waiting
            try (TcpStore viewer = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), "test-job-secret-0001", Duration.ofSeconds(30))) {
                viewer.get("hcomm/1/token", Duration.ofSeconds(40));
            }
            long killed = System.currentTimeMillis();
            store.destroyForcibly();
            assertThat(store.waitFor(10, TimeUnit.SECONDS)).isTrue();
            Thread.sleep(200);
            long restarted = System.currentTimeMillis();
            store = startStore(port);
            List<Ranks.Outcome> outcomes = job.await(Duration.ofSeconds(45));
            long latest = 0;
            int sawRestart = 0;
            for (Ranks.Outcome o : outcomes) {
                String out = o.output();
                assertThat(o.exitCode()).as("rank %d:\n%s", o.rank(), out).isZero();
                Matcher m = INIT.matcher(out);
                assertThat(m.find()).as(out).isTrue();
                latest = Math.max(latest, Long.parseLong(m.group(2)));
                assertThat(out).contains("ALLREDUCE OK 65536", "CHECKED all");
                ClosedClean.assertIn(out, "rank", 0);
                if (out.contains("the store restarted")) sawRestart++;
            }
            // a rank still connecting when the store died never knew the old one; the others all did
            assertThat(sawRestart).as("ranks that found the store restarted").isGreaterThanOrEqualTo(1);
            System.out.printf("StoreRestartTest: killed once rank 0 wrote the token, restarted %d ms later: %d of %d ranks "
                    + "found it restarted, init done on all %d ms after the restart%n", restarted - killed, sawRestart, n, latest - restarted);
        }
        shm.assertEmpty();
    }

    @Test
    void storeKilledDuringInitAndGoneForGoodFailsInitClearlyWithinTheReconnectBudget() throws Exception {
        int n = 3;
        int port = Ranks.freePort();
        store = startStore(port);
        try (Ranks.Job job = Ranks.startSome(n, n - 1, StoreRestartWorker.class, env(port, "2s"))) {
            awaitPublished(port, n - 1);
            long killed = System.currentTimeMillis();
            store.destroyForcibly();
            List<Ranks.Outcome> outcomes = job.await(Duration.ofSeconds(30));
            for (Ranks.Outcome o : outcomes) {
                String out = o.output();
                assertThat(o.exitCode()).as("rank %d:\n%s", o.rank(), out).isEqualTo(3);
                Matcher m = FAILED.matcher(out);
                assertThat(m.find()).as(out).isTrue();
                assertThat(m.group(2)).isEqualTo(HcommException.class.getName());
                assertThat(m.group(3)).contains("lost connection to the store at 127.0.0.1:" + port, "(during ",
                        "could not reconnect within 2000 ms (HCOMM_STORE_RECONNECT)", "Connection refused");
                long after = Long.parseLong(m.group(1)) - killed;
                assertThat(after).as("rank %d failed %d ms after the SIGKILL", o.rank(), after).isBetween(1_500L, 10_000L);
                ClosedClean.assertIn(out, "rank", 0);
                System.out.printf("StoreRestartTest: store gone for good: rank %d's init failed %d ms after the SIGKILL: %s%n",
                        o.rank(), after, m.group(3));
            }
        }
        shm.assertEmpty();
    }
}
