package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.CollectiveWorker;
import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Seeded random collective sequences between separate JVM processes, over shared memory and over TCP; every rank checks
 * every element.
 */
class CollectiveProcessTest {
    @ParameterizedTest
    @CsvSource({"2, shm", "4, shm", "2, tcp", "4, tcp"})
    void randomSequencesAcrossProcesses(int n, String transport) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(n, CollectiveWorker.class, Map.of("HCOMM_TRANSPORT", transport), Duration.ofMinutes(4),
                String.valueOf(4242 + n));
        for (Ranks.Outcome o : out) {
            assertThat(o.output()).contains("rank " + o.rank() + " PASS reductions").contains("rank " + o.rank() + " PASS data movement");
        }
        Ranks.assertTransports(out, transport);
    }
}
