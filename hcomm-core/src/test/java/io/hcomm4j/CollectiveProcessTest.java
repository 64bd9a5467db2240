package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.CollectiveWorker;
import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Seeded random collective sequences between separate JVM processes over TCP; every rank checks every element. */
class CollectiveProcessTest {
    @ParameterizedTest
    @ValueSource(ints = {2, 4})
    void randomSequencesAcrossProcesses(int n) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(n, CollectiveWorker.class, Duration.ofMinutes(4), String.valueOf(4242 + n));
        for (Ranks.Outcome o : out) {
            assertThat(o.output()).contains("rank " + o.rank() + " PASS reductions").contains("rank " + o.rank() + " PASS data movement");
        }
    }
}
