package io.hcomm4j;

import java.time.Duration;
import java.util.Locale;

/**
 * How every message, report and status of HComm4J writes a duration and a size, so that a user reads one format
 * everywhere: "250 ms", "3.0 s", "5 min"; "512 B", "4.0 KiB", "64.0 MiB".
 */
public final class Units {
    private Units() {
    }

    /** {@code nanos} as "250 ms" (under a second), "5 min" (whole minutes) or "3.0 s". */
    public static String duration(long nanos) {
        if (nanos < 1_000_000_000L) return nanos / 1_000_000 + " ms";
        if (nanos % 60_000_000_000L == 0) return nanos / 60_000_000_000L + " min";
        return String.format(Locale.ROOT, "%.1f s", nanos / 1e9);
    }

    /** {@code d} as {@link #duration(long)} does (durations past 292 years read as that). */
    public static String duration(Duration d) {
        return duration(d.compareTo(Duration.ofNanos(Long.MAX_VALUE)) >= 0 ? Long.MAX_VALUE : d.toNanos());
    }

    /** {@code bytes} as "512 B", "4.0 KiB", "64.0 MiB" or "2.0 GiB". */
    public static String bytes(long bytes) {
        if (bytes < 1024) return bytes + " B";
        if (bytes < 1 << 20) return String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
        if (bytes < 1L << 30) return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1 << 20));
        return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
    }
}
