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
 * TCP ({@code HCOMM_TRANSPORT=tcp}); each rank checks every element itself. The same jobs then run the seeded random
 * collective sequences across processes (scenario {@code collectives}: {@link io.hcomm4j.testing.CollectiveWorker#sequences},
 * seed 4242 + the number of ranks, the reductions' then the data movement's, every element checked), so that the
 * collectives' process test, on 2 ranks over shared memory and 4 over shared memory and TCP like these, needs no start
 * of JVMs of its own.
 */
class P2pProcessTest {
    static final String[] ALL = {"sizes", "types", "tags", "anysource", "stream", "self", "errors", "probe", "collectives"};

    /** Over shared memory; TCP's pairs are the 4-rank job's (CI time). */
    @ParameterizedTest
    @ValueSource(strings = {"shm"})
    void twoRanksEveryScenario(String transport) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(2, P2pWorker.class, Map.of("HCOMM_TRANSPORT", transport), Duration.ofMinutes(5), ALL);
        check(out);
        Ranks.assertTransports(out, transport);
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void fourRanksEveryScenario(String transport) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(4, P2pWorker.class, Map.of("HCOMM_TRANSPORT", transport), Duration.ofMinutes(6), ALL);
        check(out);
        Ranks.assertTransports(out, transport);
    }

    /** Every rank passed every scenario, the collectives' two sequences included. */
    private static void check(List<Ranks.Outcome> out) {
        for (Ranks.Outcome o : out) {
            for (String s : ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + s);
            assertThat(o.output()).contains("rank " + o.rank() + " PASS reductions").contains("rank " + o.rank() + " PASS data movement");
        }
    }
}
