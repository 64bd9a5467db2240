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

    @Override
    public String toString() {
        return "stdout:\n" + out() + "\nstderr:\n" + err();
    }
}
