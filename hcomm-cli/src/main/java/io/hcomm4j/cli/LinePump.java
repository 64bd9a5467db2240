package io.hcomm4j.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Predicate;

/** Copies a rank's output to the launcher's, a whole prefixed line at a time, so the ranks' lines never interleave. */
final class LinePump {
    /** Longest line piece copied at once; a longer line is split into several prefixed lines. */
    private static final int MAX_LINE = 64 * 1024;

    private LinePump() {
    }

    /**
     * Copies {@code in} to {@code to} line by line, each line written whole with one call and prefixed.
     * Bytes are copied as they are (no decoding); lines longer than {@link #MAX_LINE} are split.
     */
    static Thread start(InputStream in, PrintStream to, String prefix, Predicate<String> keep, String name) {
        byte[] prefixBytes = prefix.getBytes(StandardCharsets.UTF_8);
        return Thread.ofPlatform().name(name).daemon().start(() -> {
            LineBuffer line = new LineBuffer(prefixBytes);
            byte[] buf = new byte[8192];
            try (in) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    for (int i = 0; i < n; i++) {
                        byte b = buf[i];
                        if (b == '\n') {
                            line.emit(to, keep);
                        } else {
                            line.append(b);
                            if (line.length() >= MAX_LINE) line.emit(to, keep);
                        }
                    }
                }
            } catch (IOException e) {
                // the stream was closed: the rank is gone
            }
            if (line.length() > 0) line.emit(to, keep);
        });
    }

    /** One line being collected: prefix, bytes, newline. */
    private static final class LineBuffer {
        private final int start;
        private byte[] bytes;
        private int end;

        LineBuffer(byte[] prefix) {
            this.bytes = Arrays.copyOf(prefix, prefix.length + 256);
            this.start = prefix.length;
            this.end = start;
        }

        int length() {
            return end - start;
        }

        void append(byte b) {
            if (end + 1 >= bytes.length) bytes = Arrays.copyOf(bytes, bytes.length * 2);
            bytes[end++] = b;
        }

        void emit(PrintStream to, Predicate<String> keep) {
            int len = end - start;
            if (len > 0 && bytes[end - 1] == '\r') len--; // CRLF
            if (keep.test(new String(bytes, start, len, StandardCharsets.UTF_8))) {
                bytes[start + len] = '\n';
                to.write(bytes, 0, start + len + 1); // one call: whole line, never interleaved
                to.flush();
            }
            end = start;
        }
    }
}
