package io.hcomm4j.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** stdout and stderr of a launcher or command run in a test. */
final class Captured {
    private final ByteArrayOutputStream outBytes = new ByteArrayOutputStream();
    private final ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
    final PrintStream out = new PrintStream(outBytes, true, StandardCharsets.UTF_8);
    final PrintStream err = new PrintStream(errBytes, true, StandardCharsets.UTF_8);

    String out() {
        return outBytes.toString(StandardCharsets.UTF_8);
    }

    String err() {
        return errBytes.toString(StandardCharsets.UTF_8);
    }

    List<String> outLines() {
        return out().lines().toList();
    }

    List<String> errLines() {
        return err().lines().toList();
    }

    /**
     * Runs {@code hcomm perf} with each of {@code bad}'s argument lists and asserts a usage error (exit code 2) whose
     * stderr contains the matching entry of {@code says}.
     */
    static void assertPerfUsageErrors(String[][] bad, String[] says) {
        for (int i = 0; i < bad.length; i++) {
            Captured io = new Captured();
            String[] args = new String[bad[i].length + 1];
            args[0] = "perf";
            System.arraycopy(bad[i], 0, args, 1, bad[i].length);
            org.assertj.core.api.Assertions.assertThat(HcommCli.execute(args, io.out, io.err, java.util.Map.of()))
                    .as(String.join(" ", args)).isEqualTo(2);
            org.assertj.core.api.Assertions.assertThat(io.err()).as(String.join(" ", args)).contains(says[i]);
        }
    }

    @Override
    public String toString() {
        return "stdout:\n" + out() + "\nstderr:\n" + err();
    }
}
