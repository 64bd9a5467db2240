package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** SIGTERM to the launcher's JVM: its shutdown hook stops every rank and the ranks' children. */
@Timeout(60)
class LaunchShutdownTest {
    @Test
    void sigtermToTheLauncherLeavesNoProcessBehind() throws Exception {
        List<String> cmd = LocalLauncher.javaCommand(LaunchHarness.class.getName(),
                List.of("2", "sleep 600 & echo \"shell pid=$$ sleep pid=$!\"; wait"));
        Process launcher = new ProcessBuilder(cmd).start();
        launcher.getOutputStream().close();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Thread outPump = copy(launcher.getInputStream(), out);
        Thread errPump = copy(launcher.getErrorStream(), err);
        try {
            List<Long> pids = Processes.awaitPids(() -> text(out), 4, 30_000);
            assertThat(pids).as("pids the ranks printed; stderr: %s", text(err)).hasSize(4);
            for (long pid : pids) assertThat(Processes.alive(pid)).as("process %d before the signal", pid).isTrue();

            // SIGTERM through the handle: Process.destroy() would also close the streams we read
            launcher.toHandle().destroy();
            assertThat(launcher.waitFor(20, TimeUnit.SECONDS)).as("the launcher exits").isTrue();
            outPump.join(5_000);
            errPump.join(5_000);

            for (long pid : pids) assertThat(Processes.alive(pid)).as("process %d after the signal", pid).isFalse();
            assertThat(text(err)).contains("hcomm launch: interrupted: stopping the ranks");
        } finally {
            launcher.descendants().forEach(ProcessHandle::destroyForcibly);
            launcher.destroyForcibly();
        }
    }

    private static String text(ByteArrayOutputStream bytes) {
        synchronized (bytes) {
            return bytes.toString(StandardCharsets.UTF_8);
        }
    }

    private static Thread copy(InputStream in, ByteArrayOutputStream to) {
        return Thread.ofPlatform().daemon().start(() -> {
            byte[] buf = new byte[4096];
            try (in) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    synchronized (to) {
                        to.write(buf, 0, n);
                    }
                }
            } catch (IOException ignored) {
                // the launcher is gone
            }
        });
    }
}
