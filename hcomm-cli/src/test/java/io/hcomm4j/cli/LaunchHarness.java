package io.hcomm4j.cli;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * A launcher in a JVM of its own, for tests that signal it: runs {@code args[0]} ranks of
 * {@code sh -c args[1]}, serving the store as {@code hcomm launch} does, and exits with the launcher's exit code.
 */
public final class LaunchHarness {
    private LaunchHarness() {
    }

    /** {@code args}: number of ranks, shell script. */
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        List<String> command = List.of("sh", "-c", String.join(" ", Arrays.asList(args).subList(1, args.length)));
        int code = new LocalLauncher("hcomm launch", System.out, System.err)
                .gracePeriod(Duration.ofSeconds(2))
                .run(LocalLauncher.Job.local(n, "launch-test-secret-1"), command);
        System.exit(code);
    }
}
