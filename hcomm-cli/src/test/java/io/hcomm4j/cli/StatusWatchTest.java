package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.MonitorConfig;
import io.hcomm4j.ReduceOp;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hcomm status --watch --json} and {@code --dump} against a live job of three ranks (threads over sockets) in
 * which rank 2 stays away from the second all-reduce: the watch asks every rank to publish, so all three appear (rank 2
 * with no op, ranks 0 and 1 in allReduce #2), as JSON; the dump makes every rank write its flight record into the folder
 * given, and {@code hcomm trace} on it names rank 2 behind at collective #2.
 */
class StatusWatchTest {
    private static final String SECRET = "status-watch-secret-1";

    @TempDir
    Path dir;

    @Test
    void watchShowsEveryRankAndDumpFeedsTrace() throws Exception {
        int n = 3;
        int port = ThreadRanks.freePort();
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(n);
        List<Future<?>> ranks = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                int rank = r;
                ranks.add(pool.submit(() -> {
                    CommConfig config = CommConfig.builder().initMethod("tcp://127.0.0.1:" + port).rank(rank).worldSize(n).secret(SECRET)
                            .timeout(Duration.ofSeconds(90)).stuckReport(Duration.ofSeconds(30))
                            .monitor(MonitorConfig.DEFAULT.withTraceDir(dir.resolve("own"))).build();
                    try (Hcomm h = Hcomm.init(config)) {
                        Communicator c = h.world();
                        int[] v = {1, 2, 3};
                        c.allReduce(v, ReduceOp.SUM);
                        if (rank == n - 1) go.await(90, TimeUnit.SECONDS);
                        c.allReduce(v, ReduceOp.SUM);
                        assertThat(v[0]).isEqualTo(9);
                    }
                    return null;
                }));
            }
            String[] watch = {"status", "--init-method", "tcp://127.0.0.1:" + port, "--watch", "1s", "--count", "1", "--json"};
            Map<String, String> env = Map.of("HCOMM_SECRET", SECRET);
            Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ZERO).untilAsserted(() -> {
                Captured io = new Captured();
                assertThat(HcommCli.execute(watch, io.out, io.err, env)).as(io.toString()).isZero();
                String json = io.out();
                assertThat(json).contains("\"session\": \"hcomm/1/\"", "\"world_size\": 3").doesNotContain("null,", "null\n");
                for (int r = 0; r < 2; r++) {
                    assertThat(json).containsPattern("(?s)\"rank\": " + r + ",.*?\"ops\": \\[\\s*\\{\\s*\"communicator\": \"0\",\\s*\"op\": \"allReduce\","
                            + "\\s*\"collective\": true,\\s*\"seq\": 2,");
                }
                assertThat(json).containsPattern("(?s)\"rank\": 2,.*?\"health\": \"READY\".*?\"ops\": \\[\\]");
            });

            Path dumps = dir.resolve("dumps");
            Captured d = new Captured();
            assertThat(HcommCli.execute(new String[] {"status", "--init-method", "tcp://127.0.0.1:" + port, "--dump", dumps.toString(),
                    "--timeout", "30s"}, d.out, d.err, env)).as(d.toString()).isZero();
            assertThat(d.out()).contains("3 of 3 ranks wrote their flight records to " + dumps + "; read them with hcomm trace " + dumps);
            assertThat(d.err()).contains("asked the 3 ranks of session hcomm/1/ to write their flight records to " + dumps);

            Captured t = new Captured();
            assertThat(HcommCli.execute(new String[] {"trace", dumps.toString()}, t.out, t.err, Map.of())).as(t.toString()).isEqualTo(1);
            assertThat(t.out()).contains(": requested: hcomm status --dump;")
                    .contains("communicator 0 (3 ranks): rank 2 never called collective #2 (allReduce (count 3 INT32 SUM, 12 B)); ranks 0, 1 called it")
                    .contains("first divergence: communicator 0, collective #2 (behind, ranks [2])");

            Captured bad = new Captured();
            assertThat(HcommCli.execute(new String[] {"status", "--init-method", "tcp://127.0.0.1:" + port, "--count", "2"}, bad.out, bad.err, env))
                    .isEqualTo(2);
            assertThat(bad.err()).contains("--count goes with --watch");
        } finally {
            go.countDown();
            for (Future<?> f : ranks) f.get(120, TimeUnit.SECONDS);
            pool.shutdownNow();
        }
    }
}
