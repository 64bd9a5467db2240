package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HCOMM_DEBUG and HCOMM_DEBUG_FILE (issue 19): INFO writes, once per rank at init, the version, the topology, the
 * transports, the tuner's algorithms and the settings, then a line per communicator made later, into a file per rank
 * ({@code %r}); VERSION writes the version line only; a bad level is refused naming the variable.
 */
class DebugOutputTest {
    @TempDir
    Path dir;

    @Test
    void infoWritesTheInitReportAndALinePerCommunicatorToAFilePerRank() throws Exception {
        String pattern = dir.resolve("debug-%r.log").toString();
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.monitor(MonitorConfig.DEFAULT.withDebug(MonitorConfig.Debug.INFO)
                .withDebugFile(pattern)), h -> {
            try (Communicator alone = h.world().split(h.world().rank(), 0)) {
                alone.barrier();
            }
        });
        for (int r = 0; r < 2; r++) {
            String text = Files.readString(dir.resolve("debug-" + r + ".log"));
            String p = "hcomm4j INFO rank " + r + ": ";
            assertThat(text).startsWith(p + "HComm4J ")
                    .contains("on JDK " + Runtime.version(), "pid " + ProcessHandle.current().pid(), "rank " + r + " of 2", "vector reductions ")
                    .contains(p + "topology: 1 host(s); this is host 0, local rank " + r + " of 2; ranks by host [0, 1]")
                    .contains(p + "transports: shm to the 1 other rank(s) of this host, tcp to the 0 rank(s) of other hosts")
                    .contains(p + "shared-memory collectives (zero copy): on, every rank on this host")
                    .containsPattern(p + "algorithm for allreduce over the transport: 8 B \\w+, 64\\.0 KiB \\w+, 1\\.0 MiB \\w+, 64\\.0 MiB \\w+")
                    .contains(p + "algorithm for alltoall over the transport: ")
                    .contains(p + "settings: CommConfig{", "rank=" + r)
                    .containsPattern(p + "communicator [0-9a-f]+: rank 0 of 1, world ranks \\[" + r + "\\], zero copy off");
            assertThat(text.lines().filter(l -> l.contains("HComm4J ")).count()).as("the init report once").isEqualTo(1);
        }
    }

    @Test
    void versionWritesOneLineAndABadLevelIsRefused() throws Exception {
        String pattern = dir.resolve("v-%r.log").toString();
        Ranks.runThreads(1, Duration.ofMinutes(1), b -> b.monitor(MonitorConfig.DEFAULT.withDebug(MonitorConfig.Debug.VERSION)
                .withDebugFile(pattern)), h -> h.world().barrier());
        assertThat(Files.readAllLines(dir.resolve("v-0.log"))).singleElement().asString().startsWith("hcomm4j INFO rank 0: HComm4J ");
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_DEBUG", "LOUD"), k -> null).build())
                .hasMessageContaining("HCOMM_DEBUG").hasMessageContaining("not one of WARN, VERSION, INFO");
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_DEBUG", "info", "HCOMM_DEBUG_FILE", "/tmp/x.%r", "HCOMM_TRACE_BUFFER", "64"),
                k -> null).build().monitor()).isEqualTo(MonitorConfig.DEFAULT.withDebug(MonitorConfig.Debug.INFO)
                .withDebugFile("/tmp/x.%r").withTraceBuffer(64));
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_TRACE_BUFFER", "-2"), k -> null).build())
                .hasMessageContaining("HCOMM_TRACE_BUFFER").hasMessageContaining("-2");
    }
}
