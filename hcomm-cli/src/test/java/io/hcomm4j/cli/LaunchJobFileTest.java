package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
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
 * {@code hcomm launch} says how to reach its job and leaves a job file (issue 17), and {@code hcomm status} finds the
 * job from it with no arguments: a real launched job of two rank JVMs; the file is 0600 in a 0700 directory, holds the
 * secret the terminal never shows, and is gone when the job ends (also after SIGTERM to the launcher); files of
 * launchers that are gone are ignored and removed; several jobs are listed and {@code --job} picks one; a directory
 * open to others is not used.
 */
@Timeout(120)
class LaunchJobFileTest {
    private static final Pattern STORE = Pattern.compile("hcomm launch: job (\\d+), 2 ranks, store at 127\\.0\\.0\\.1:(\\d+)");

    @TempDir
    Path runtime;

    private Map<String, String> env() {
        return Map.of("XDG_RUNTIME_DIR", runtime.toString());
    }

    private Path jobs() {
        return runtime.resolve("hcomm");
    }

    @Test
    void statusFindsTheLaunchedJobByItself() throws Exception {
        // a file left by a launcher that is gone (SIGKILL): ignored and removed
        Files.createDirectory(jobs(), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        Path stale = writeJobFile(gone.pid(), Instant.now(), "127.0.0.1:1");

        Path go = runtime.resolve("go"); // the last rank stays away from the second all-reduce until it exists
        List<String> args = new ArrayList<>(List.of("launch", "-n", "2", "--grace-period", "2s", "--"));
        args.addAll(LocalLauncher.javaCommand(StuckRank.class.getName(), List.of(go.toString())));
        Captured launch = new Captured();
        CompletableFuture<Integer> job = CompletableFuture.supplyAsync(
                () -> HcommCli.execute(args.toArray(String[]::new), launch.out, launch.err, env()));
        try {
            await(() -> launch.out().contains("[rank 0] FIRST DONE") && launch.out().contains("[rank 1] FIRST DONE"), launch);

            Matcher m = STORE.matcher(launch.err());
            assertThat(m.find()).as(launch.toString()).isTrue();
            long pid = Long.parseLong(m.group(1));
            assertThat(pid).isEqualTo(ProcessHandle.current().pid());
            Path file = jobs().resolve("job-" + pid + ".properties");
            assertThat(launch.err()).contains("the store's address and the job's secret are in " + file);
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(jobs()))).isEqualTo("rwx------");
            String text = Files.readString(file);
            assertThat(text).contains("store=127.0.0.1:" + m.group(2), "pid=" + pid, "ranks=2", "StuckRank");
            String secret = text.lines().filter(l -> l.startsWith("secret=")).findFirst().orElseThrow().substring(7);
            assertThat(secret).isNotBlank();
            assertThat(launch.toString()).as("the terminal never shows the secret").doesNotContain(secret);

            Captured status = new Captured();
            int code = HcommCli.execute(new String[] {"status"}, status.out, status.err, env());
            assertThat(code).as(status.toString()).isZero();
            System.out.println("LaunchJobFileTest: hcomm launch said:\n" + launch.err() + "hcomm status printed:\n" + status);
            assertThat(status.out()).contains("session hcomm/1/: 2 ranks");
            assertThat(status.err()).contains("hcomm status: job " + pid + " of hcomm launch, store at 127.0.0.1:" + m.group(2));
            assertThat(stale).doesNotExist();

            Files.writeString(go, "go");
            assertThat(job.get(60, TimeUnit.SECONDS)).as(launch.toString()).isZero();
            assertThat(file).as("the job file once the job ended").doesNotExist();
        } finally {
            Files.writeString(go, "go");
            job.get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void severalJobsAreListedAndJobPicksOne() throws Exception {
        Files.createDirectory(jobs(), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        List<Process> launchers = List.of(new ProcessBuilder("sleep", "60").start(), new ProcessBuilder("sleep", "60").start(),
                new ProcessBuilder("sleep", "60").start());
        try {
            int port = ThreadRanks.freePort(); // nothing listens there
            for (Process p : launchers.subList(0, 2)) writeJobFile(p.pid(), p.info().startInstant().orElseThrow(), "127.0.0.1:" + port);
            // a live pid whose process started after the file says: the pid was reused, the launcher is gone
            Process reused = launchers.get(2);
            Path stale = writeJobFile(reused.pid(), reused.info().startInstant().orElseThrow().minusSeconds(3600), "127.0.0.1:" + port);

            Captured several = new Captured();
            assertThat(HcommCli.execute(new String[] {"status"}, several.out, several.err, env())).as(several.toString()).isEqualTo(2);
            assertThat(several.err()).contains("2 jobs of hcomm launch run on this machine; choose one with --job PID",
                    "--job " + launchers.get(0).pid() + ": store 127.0.0.1:" + port + ", 2 ranks",
                    "--job " + launchers.get(1).pid() + ": store 127.0.0.1:" + port);
            assertThat(several.err()).doesNotContain("--job " + reused.pid());
            assertThat(stale).doesNotExist();

            Captured one = new Captured();
            int code = HcommCli.execute(new String[] {"status", "--job", Long.toString(launchers.get(1).pid()), "--timeout", "1s"},
                    one.out, one.err, env());
            assertThat(code).as(one.toString()).isEqualTo(1); // the store of a fake job does not answer
            assertThat(one.err()).contains("hcomm status: job " + launchers.get(1).pid() + " of hcomm launch, store at 127.0.0.1:" + port);

            Captured unknown = new Captured();
            assertThat(HcommCli.execute(new String[] {"status", "--job", "1"}, unknown.out, unknown.err, env())).isEqualTo(2);
            assertThat(unknown.err()).contains("--job 1: no job of hcomm launch with that launcher pid runs on this machine");
        } finally {
            launchers.forEach(Process::destroyForcibly);
        }
    }

    @Test
    void aDirectoryOpenToOthersIsNotUsed() throws Exception {
        Files.createDirectory(jobs(), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        Captured launch = new Captured();
        int code = HcommCli.execute(new String[] {"launch", "-n", "1", "--", "true"}, launch.out, launch.err, env());
        assertThat(code).as(launch.toString()).isZero();
        assertThat(launch.err()).contains("hcomm launch: no job file (" + jobs() + " is open to other users (mode rwxr-xr-x",
                "hcomm status --init-method tcp://127.0.0.1:", "HCOMM_SECRET (a new one, in the ranks' environment only)");
        try (var files = Files.list(jobs())) {
            assertThat(files).isEmpty();
        }
        Captured status = new Captured();
        assertThat(HcommCli.execute(new String[] {"status"}, status.out, status.err, env())).isEqualTo(2);
        assertThat(status.err()).contains("no job of hcomm launch runs on this machine for this user (" + jobs() + " is open to other users");
    }

    /** SIGTERM to a launcher's JVM: its shutdown hook removes the job file along with the ranks. */
    @Test
    void sigtermToTheLauncherRemovesTheJobFile() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(LocalLauncher.javaCommand(HcommCli.class.getName(),
                List.of("launch", "-n", "1", "--grace-period", "1s", "--", "sleep", "600")));
        pb.environment().put("XDG_RUNTIME_DIR", runtime.toString());
        Process launcher = pb.redirectErrorStream(true).redirectOutput(runtime.resolve("launcher.log").toFile()).start();
        try {
            Path file = jobs().resolve("job-" + launcher.pid() + ".properties");
            await(() -> Files.exists(file), null);
            launcher.toHandle().destroy();
            assertThat(launcher.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(file).as(Files.readString(runtime.resolve("launcher.log"))).doesNotExist();
        } finally {
            launcher.descendants().forEach(ProcessHandle::destroyForcibly);
            launcher.destroyForcibly();
        }
    }

    /** A job file as hcomm launch writes it, for a launcher {@code pid} that started at {@code processStart}. */
    private Path writeJobFile(long pid, Instant processStart, String store) throws IOException {
        Path file = jobs().resolve("job-" + pid + ".properties");
        Files.writeString(file, "pid=" + pid + "\nprocess_start=" + processStart + "\nstarted=" + Instant.now() + "\nstore="
                + store + "\nsecret=not-a-real-one-at-all\nranks=2\ncommand=sleep 60\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        return file;
    }

    private static void await(java.util.function.BooleanSupplier condition, Captured io) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("waited 60 s in vain" + (io == null ? "" : ":\n" + io));
            Thread.sleep(50);
        }
    }
}
