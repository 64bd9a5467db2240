package io.hcomm4j;

import java.nio.file.Path;
import java.util.Objects;

/**
 * What a rank records about its own ops for whoever looks later (docs/observability.md): the flight recorder.
 *
 * @param traceBuffer ops kept per communicator, 0 to 16777216 (rounded up to a power of two); 0 records nothing
 *                    (HCOMM_TRACE_BUFFER, default 2048)
 * @param traceDir    where a rank writes its flight record on a timeout, an abort or a request of {@code hcomm status
 *                    --dump} (HCOMM_TRACE_DIR; default {@code <java.io.tmpdir>/hcomm-trace}; {@code hcomm launch} sets
 *                    it to a folder beside its job file)
 */
public record MonitorConfig(int traceBuffer, Path traceDir) {
    /** The defaults. */
    public static final MonitorConfig DEFAULT = new MonitorConfig(2048, Path.of(System.getProperty("java.io.tmpdir"), "hcomm-trace"));

    /** @throws IllegalArgumentException naming the setting if traceBuffer is out of range; NullPointerException if traceDir is null */
    public MonitorConfig {
        if (traceBuffer < 0 || traceBuffer > 1 << 24) {
            throw new IllegalArgumentException("traceBuffer (HCOMM_TRACE_BUFFER) must be in [0, 16777216], was " + traceBuffer);
        }
        Objects.requireNonNull(traceDir, "traceDir (HCOMM_TRACE_DIR)");
    }

    /** This with {@code traceBuffer} ops kept per communicator. */
    public MonitorConfig withTraceBuffer(int traceBuffer) {
        return new MonitorConfig(traceBuffer, traceDir);
    }

    /** This with the flight records written to {@code traceDir}. */
    public MonitorConfig withTraceDir(Path traceDir) {
        return new MonitorConfig(traceBuffer, traceDir);
    }
}
