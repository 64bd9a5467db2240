package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.P2pWorker;
import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Point-to-point between separate JVM processes over real sockets; each rank checks every element itself. */
class P2pProcessTest {
    static final String[] ALL = {"sizes", "types", "tags", "anysource", "stream", "self", "errors", "probe"};

    @Test
    void twoRanksEveryScenario() throws Exception {
        List<Ranks.Outcome> out = Ranks.run(2, P2pWorker.class, Duration.ofMinutes(3), ALL);
        for (Ranks.Outcome o : out) {
            for (String s : ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + s);
        }
    }

    @Test
    void fourRanksEveryScenario() throws Exception {
        List<Ranks.Outcome> out = Ranks.run(4, P2pWorker.class, Duration.ofMinutes(4), ALL);
        for (Ranks.Outcome o : out) {
            for (String s : ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + s);
        }
    }
}
