package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The settings the UCX transport gives UCX over the environment's ({@link UcxEngine#settings}). */
class UcxSettingsTest {
    private static Map<String, String> settings(String... env) {
        Map<String, String> m = new java.util.HashMap<>();
        for (int i = 0; i < env.length; i += 2) m.put(env[i], env[i + 1]);
        return UcxEngine.settings(m::get);
    }

    @Test
    void noRendezvousOverUcxsTcpAloneAndLargerTcpReadsUnlessTheUserSaysOtherwise() {
        assertThat(settings("UCX_TLS", "tcp")).isEqualTo(Map.of("RNDV_THRESH", "inf", "RX_SEG_SIZE", "256K"));
        assertThat(settings("UCX_TLS", " tcp , self")).containsEntry("RNDV_THRESH", "inf");
        assertThat(settings("UCX_TLS", "tcp", "UCX_RNDV_THRESH", "64K")).as("the user's threshold stands").doesNotContainKey("RNDV_THRESH");
        assertThat(settings("UCX_TLS", "tcp", "UCX_TCP_RX_SEG_SIZE", "64K")).as("the user's segment stands").doesNotContainKey("RX_SEG_SIZE");
        assertThat(settings()).as("UCX chooses its transports (verbs where there are)").isEqualTo(Map.of("RX_SEG_SIZE", "256K"));
        assertThat(settings("UCX_TLS", "posix,cma")).as("no TCP: nothing would take the segment size").isEmpty();
        assertThat(settings("UCX_TLS", "^tcp")).isEmpty();
        assertThat(settings("UCX_TLS", "^rc")).isEqualTo(Map.of("RX_SEG_SIZE", "256K"));
        assertThat(settings("UCX_TLS", "all")).isEqualTo(Map.of("RX_SEG_SIZE", "256K"));
        assertThat(settings("UCX_TLS", "rc,sm,self")).doesNotContainKey("RNDV_THRESH");
        assertThat(settings("UCX_TLS", "tcp,posix,cma")).as("shared memory keeps its zero-copy rendezvous").doesNotContainKey("RNDV_THRESH");
    }
}
