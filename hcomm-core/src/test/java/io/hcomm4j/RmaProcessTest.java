package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.RmaWorker;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * One-sided communication between separate JVM processes: windows from the pool over shared memory (direct loads,
 * stores and atomics), windows over the caller's memory (through the target's progress engine, over the rings), and
 * over TCP; each rank checks every element itself. Over shared memory one job runs every scenario with the one kind
 * of window, then with the other ({@code alloc+create}): the same checks as two jobs, without a second start of 4 JVMs.
 */
class RmaProcessTest {
    static final String[] ALL = {"errors", "types", "counter", "spinlock", "fence", "locks", "floatsum", "signal", "sleeper", "large"};

    @ParameterizedTest
    @CsvSource({"alloc+create, shm", "alloc, tcp"})
    void fourRanksEveryScenario(String windows, String transport) throws Exception {
        String[] args = new String[ALL.length + 1];
        args[0] = windows;
        System.arraycopy(ALL, 0, args, 1, ALL.length);
        List<Ranks.Outcome> out = Ranks.run(4, RmaWorker.class, Map.of("HCOMM_TRANSPORT", transport), Duration.ofMinutes(6), args);
        for (Ranks.Outcome o : out) {
            for (String kind : windows.split("\\+")) {
                for (String s : ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + kind + " " + s + " (");
            }
        }
        Ranks.assertTransports(out, transport);
        out.getFirst().output().lines().filter(l -> l.contains(" PASS "))
                .forEach(l -> System.out.println("RmaProcessTest " + windows + " " + transport + ": " + l));
    }
}
