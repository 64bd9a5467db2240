package io.hcomm4j.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks the {@code CLOSED threads=<n> fds=<n>} line a test worker prints after closing its session: no hcomm thread
 * alive, and at most {@code maxExtraFds} more descriptors open than before init.
 */
public final class ClosedClean {
    private static final Pattern CLOSED = Pattern.compile("CLOSED threads=(\\d+) fds=(-?\\d+)");

    private ClosedClean() {
    }

    /** Asserts the line in {@code out} (a rank's output; {@code who} names it in failures). */
    public static void assertIn(String out, String who, int maxExtraFds) {
        Matcher c = CLOSED.matcher(out);
        assertThat(c.find()).as("%s: no CLOSED line in its output:\n%s", who, out).isTrue();
        assertThat(Integer.parseInt(c.group(1))).as("%s: hcomm threads alive after close:\n%s", who, out).isZero();
        assertThat(Integer.parseInt(c.group(2))).as("%s: descriptors left open after close:\n%s", who, out)
                .isLessThanOrEqualTo(maxExtraFds);
    }
}
