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
 * @param debug       what a rank prints about itself (HCOMM_DEBUG): {@link Debug#WARN} nothing (the default),
 *                    {@link Debug#VERSION} the library's version once, {@link Debug#INFO} at init the version, the
 *                    topology, the transport to each peer, the tuner's choices and the settings in effect, and a line
 *                    per communicator made later (as NCCL_DEBUG=INFO)
 * @param debugFile   where that goes (HCOMM_DEBUG_FILE): null for standard error, else a file name in which {@code %r}
 *                    becomes the rank, {@code %p} the process id and {@code %h} the host name
 */
public record MonitorConfig(int traceBuffer, Path traceDir, Debug debug, String debugFile) {
    /** The defaults. */
    public static final MonitorConfig DEFAULT = new MonitorConfig(2048, Path.of(System.getProperty("java.io.tmpdir"), "hcomm-trace"),
            Debug.WARN, null);

    /** HCOMM_DEBUG's levels. */
    public enum Debug {
        /** Nothing beyond the library's log (SLF4J). */
        WARN,
        /** The version, once per rank. */
        VERSION,
        /** The version, topology, transports, tuner choices and settings at init; a line per new communicator. */
        INFO
    }

    /** @throws IllegalArgumentException naming the setting if traceBuffer is out of range; NullPointerException if traceDir is null */
    public MonitorConfig {
        if (traceBuffer < 0 || traceBuffer > 1 << 24) {
            throw new IllegalArgumentException("traceBuffer (HCOMM_TRACE_BUFFER) must be in [0, 16777216], was " + traceBuffer);
        }
        Objects.requireNonNull(traceDir, "traceDir (HCOMM_TRACE_DIR)");
        Objects.requireNonNull(debug, "debug (HCOMM_DEBUG)");
        if (debugFile != null && debugFile.isBlank()) debugFile = null;
    }

    /** This with {@code traceBuffer} ops kept per communicator. */
    public MonitorConfig withTraceBuffer(int traceBuffer) {
        return new MonitorConfig(traceBuffer, traceDir, debug, debugFile);
    }

    /** This with the flight records written to {@code traceDir}. */
    public MonitorConfig withTraceDir(Path traceDir) {
        return new MonitorConfig(traceBuffer, traceDir, debug, debugFile);
    }

    /** This with HCOMM_DEBUG at {@code debug}. */
    public MonitorConfig withDebug(Debug debug) {
        return new MonitorConfig(traceBuffer, traceDir, debug, debugFile);
    }

    /** This with the debug output going to {@code debugFile} (null: standard error). */
    public MonitorConfig withDebugFile(String debugFile) {
        return new MonitorConfig(traceBuffer, traceDir, debug, debugFile);
    }
}
