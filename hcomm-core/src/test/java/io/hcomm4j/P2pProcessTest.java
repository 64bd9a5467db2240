package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.P2pWorker;
import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Point-to-point between separate JVM processes, over shared memory (the default between ranks of one host) and over
 * TCP ({@code HCOMM_TRANSPORT=tcp}); each rank checks every element itself.
 */
class P2pProcessTest {
    static final String[] ALL = {"sizes", "types", "tags", "anysource", "stream", "self", "errors", "probe"};

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void twoRanksEveryScenario(String transport) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(2, P2pWorker.class, Map.of("HCOMM_TRANSPORT", transport), Duration.ofMinutes(3), ALL);
        for (Ranks.Outcome o : out) {
            for (String s : ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + s);
        }
        Ranks.assertTransports(out, transport);
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void fourRanksEveryScenario(String transport) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(4, P2pWorker.class, Map.of("HCOMM_TRANSPORT", transport), Duration.ofMinutes(4), ALL);
        for (Ranks.Outcome o : out) {
            for (String s : ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + s);
        }
        Ranks.assertTransports(out, transport);
    }
}
