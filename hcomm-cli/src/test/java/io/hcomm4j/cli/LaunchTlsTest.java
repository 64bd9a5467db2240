package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hcomm launch --tls} on one node: the launcher makes the job's key pair (0600 files in a 0700 folder), the
 * ranks' data links and the store run under TLS (the ranks see "tls" to each other and their all-reduces are exact),
 * {@code hcomm status} reaches the TLS store with the job's keys by itself while a client without TLS cannot, and the
 * keys are gone when the job ends.
 */
@Timeout(120)
class LaunchTlsTest {
    private static final Pattern STORE = Pattern.compile("hcomm launch: job (\\d+), 2 ranks, store at 127\\.0\\.0\\.1:(\\d+)");

    @TempDir
    Path runtime;

    @Test
    void launchTlsMakesTheKeysAndEveryConnectionUsesThem() throws Exception {
        Map<String, String> env = Map.of("XDG_RUNTIME_DIR", runtime.toString());
        Path go = runtime.resolve("go");
        List<String> rank = new ArrayList<>(LocalLauncher.javaCommand(StuckRank.class.getName(), List.of(go.toString())));
        rank.add(1, "-Dhcomm.transport=tcp"); // one host: without it the ranks would talk through shared memory
        List<String> args = new ArrayList<>(List.of("launch", "-n", "2", "--tls", "--grace-period", "2s", "--"));
        args.addAll(rank);
        Captured launch = new Captured();
        CompletableFuture<Integer> job = CompletableFuture.supplyAsync(
                () -> HcommCli.execute(args.toArray(String[]::new), launch.out, launch.err, env));
        try {
            await(() -> launch.out().contains("[rank 0] FIRST DONE") && launch.out().contains("[rank 1] FIRST DONE"), launch);
            await(() -> launch.out().contains("[rank 0] TRANSPORT") && launch.out().contains("[rank 1] TRANSPORT"), launch);
            assertThat(launch.out()).contains("[rank 0] TRANSPORT tls", "[rank 1] TRANSPORT tls");
            assertThat(launch.err()).contains("hcomm launch: TLS 1.3 on every TCP connection (the job's own key pair in");
            Matcher m = STORE.matcher(launch.err());
            assertThat(m.find()).as(launch.toString()).isTrue();
            Path keys = runtime.resolve("hcomm").resolve("tls-" + m.group(1));
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(keys))).isEqualTo("rwx------");
            try (var files = Files.list(keys)) {
                for (Path f : files.toList()) {
                    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(f))).as(f.toString()).isEqualTo("rw-------");
                }
            }

            Captured status = new Captured();
            assertThat(HcommCli.execute(new String[] {"status"}, status.out, status.err, env)).as(status.toString()).isZero();
            assertThat(status.out()).contains("session hcomm/1/: 2 ranks");

            // the job's secret without its keys does not get in
            String text = Files.readString(runtime.resolve("hcomm").resolve("job-" + m.group(1) + ".properties"));
            String secret = text.lines().filter(l -> l.startsWith("secret=")).findFirst().orElseThrow().substring(7);
            Captured plain = new Captured();
            int code = HcommCli.execute(new String[] {"status", "--init-method", "tcp://127.0.0.1:" + m.group(2), "--timeout", "2s"},
                    plain.out, plain.err, Map.of("XDG_RUNTIME_DIR", runtime.toString(), "HCOMM_SECRET", secret));
            assertThat(code).as(plain.toString()).isEqualTo(1);

            Files.writeString(go, "go");
            assertThat(job.get(60, TimeUnit.SECONDS)).as(launch.toString()).isZero();
            assertThat(launch.out()).contains("[rank 0] SECOND DONE 4", "[rank 1] SECOND DONE 4");
            assertThat(keys).as("the job's keys once the job ended").doesNotExist();
        } finally {
            Files.writeString(go, "go");
            job.get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void tlsOnSeveralNodesNeedsTheUsersKeyStore() {
        Captured launch = new Captured();
        int code = HcommCli.execute(new String[] {"launch", "--tls", "--nnodes", "2", "--node-rank", "0", "--master-addr",
                "127.0.0.1", "--master-port", "29999", "--secret", "several-nodes-secret-0123456789", "--", "true"},
                launch.out, launch.err, Map.of("XDG_RUNTIME_DIR", runtime.toString()));
        assertThat(code).as(launch.toString()).isEqualTo(2);
        assertThat(launch.err()).contains("--tls on several nodes needs the same trust on every node: set HCOMM_TLS_KEYSTORE");
    }

    private static void await(java.util.function.BooleanSupplier condition, Captured io) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("waited 60 s in vain:\n" + io);
            Thread.sleep(50);
        }
    }
}
