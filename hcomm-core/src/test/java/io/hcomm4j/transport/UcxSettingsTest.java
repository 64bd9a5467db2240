package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The settings the UCX transport gives UCX over the environment's ({@link UcxEngine#settings}). */
class UcxSettingsTest {
    @Test
    void noRendezvousOverUcxsTcpAloneUnlessTheUserSaysOtherwise() {
        assertThat(UcxEngine.settings("tcp", null)).isEqualTo(Map.of("RNDV_THRESH", "inf"));
        assertThat(UcxEngine.settings(" tcp , self", null)).isEqualTo(Map.of("RNDV_THRESH", "inf"));
        assertThat(UcxEngine.settings("tcp", "64K")).as("the user's threshold stands").isEmpty();
        assertThat(UcxEngine.settings(null, null)).as("UCX chooses (verbs where there are)").isEmpty();
        assertThat(UcxEngine.settings("posix,cma", null)).isEmpty();
        assertThat(UcxEngine.settings("rc,sm,self", null)).isEmpty();
        assertThat(UcxEngine.settings("tcp,posix,cma", null)).as("shared memory keeps its zero-copy rendezvous").isEmpty();
        assertThat(UcxEngine.settings("^rc", null)).isEmpty();
    }
}
