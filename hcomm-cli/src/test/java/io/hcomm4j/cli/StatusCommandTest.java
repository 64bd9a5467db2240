package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A job of 3 rank JVMs with HCOMM_STUCK_REPORT=1s in which rank 2 comes late to the second all-reduce (it waits for a
 * file the test creates once it has seen the status): ranks 0 and 1 log their stuck op (sequence number, type, size,
 * the ranks they wait for), and {@code hcomm status}, reading the job's store, shows them stuck in allReduce #2 and
 * names rank 2 as behind.
 */
@Timeout(120)
class StatusCommandTest {
    @Test
    void stuckOpsAreLoggedAndStatusNamesTheRankBehind() throws Exception {
        int n = 3;
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path dir = Files.createTempDirectory("hcomm-status-test");
        Path go = dir.resolve("go"); // rank 2 stays away from the second all-reduce until this file exists
        List<Process> ranks = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                ProcessBuilder pb = new ProcessBuilder(LocalLauncher.javaCommand(StuckRank.class.getName(), List.of(go.toString())));
                Map<String, String> env = pb.environment();
                env.keySet().removeIf(k -> k.startsWith("HCOMM_"));
                env.put("RANK", String.valueOf(r));
                env.put("WORLD_SIZE", String.valueOf(n));
                env.put("MASTER_ADDR", "127.0.0.1");
                env.put("MASTER_PORT", String.valueOf(port));
                env.put("HCOMM_SECRET", "status-test-secret-1");
                env.put("HCOMM_STUCK_REPORT", "1s");
                Path log = dir.resolve("rank" + r + ".log");
                logs.add(log);
                ranks.add(pb.redirectErrorStream(true).redirectOutput(log.toFile()).start());
            }
            waitFor(logs.get(0), "allReduce #2 on communicator 0 (16 bytes) has run for", 60);
            String status = "";
            long deadline = System.nanoTime() + 6_000_000_000L;
            while (System.nanoTime() < deadline) {
                Captured io = new Captured();
                int code = HcommCli.execute(new String[] {"status", "--init-method", "tcp://127.0.0.1:" + port}, io.out, io.err,
                        Map.of("HCOMM_SECRET", "status-test-secret-1"));
                assertThat(code).as(io.toString()).isZero();
                status = io.out();
                // ranks 0 and 1 publish once their op is stuck, rank 2 when asked: wait for all three, not only rank 2's
                if (status.contains("ranks 0, 1 wait in allReduce #2")) break;
                Thread.sleep(200);
            }
            System.out.println("StatusCommandTest: hcomm status printed:\n" + status);
            // found from the environment as init finds it: HCOMM_STORE_PORT in place of MASTER_PORT (torchrun's agent's)
            Captured byEnv = new Captured();
            assertThat(HcommCli.execute(new String[] {"status"}, byEnv.out, byEnv.err, Map.of("HCOMM_SECRET", "status-test-secret-1",
                    "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "1", "HCOMM_STORE_PORT", String.valueOf(port))))
                    .as(byEnv.toString()).isZero();
            assertThat(byEnv.out()).contains("session hcomm/1/: 3 ranks");
            assertThat(status).contains("session hcomm/1/: 3 ranks");
            assertThat(status).containsPattern("(?m)^0 +READY .*allReduce #2 16 B, (\\d+\\.\\d s|\\d+ ms|\\d+ min) STUCK");
            assertThat(status).containsPattern("(?m)^1 +READY .*allReduce #2 16 B, (\\d+\\.\\d s|\\d+ ms|\\d+ min) STUCK");
            assertThat(status).containsPattern("(?m)^2 +READY .* comm 0: 1 +idle");
            assertThat(status).contains("rank 2 is behind on communicator 0: it has called 1 collectives and runs no op"
                    + " (in its own code?); ranks 0, 1 wait in allReduce #2");
            String log0 = Files.readString(logs.get(0));
            assertThat(log0).containsPattern("WARN .*rank 0: allReduce #2 on communicator 0 \\(16 bytes\\) has run for \\d+\\.\\d s and still waits for rank");
            Files.writeString(go, "go"); // rank 2 comes to the second all-reduce now: every rank ends
            for (int r = 0; r < n; r++) {
                assertThat(ranks.get(r).waitFor(60, TimeUnit.SECONDS)).isTrue();
                String out = Files.readString(logs.get(r));
                assertThat(ranks.get(r).exitValue()).as(out).isZero();
                assertThat(out).contains("SECOND DONE 9");
            }
            // stuck ops are reported once each
            assertThat(log0.lines().filter(l -> l.contains("has run for")).count()).isEqualTo(1);
        } finally {
            for (Process p : ranks) p.destroyForcibly();
        }
    }

    private static void waitFor(Path log, String text, int seconds) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (!Files.readString(log).contains(text)) {
            if (System.nanoTime() > deadline) throw new AssertionError("no '" + text + "' in\n" + Files.readString(log));
            Thread.sleep(50);
        }
    }
}
