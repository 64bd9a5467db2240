package io.hcomm4j;

import io.hcomm4j.testing.ClosedClean;
import io.hcomm4j.testing.ShmDir;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.ReconnectWorker;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Transparent recovery in real rank processes over TCP (links over shared memory keep no resend log; the test hook breaks connections without a
 * BYE: RST, close, shutdown): a 64 MiB message cut off half way and a stream of 2000 tagged messages with a drop every
 * 5 ms (received with ANY_TAG: order and count checked), and all-reduces on 2 (in the same job, after those) and 4 ranks
 * whose connections break in the middle. Every op completes with the right result (the ranks check every byte and element), each rank re-established
 * connections, no frame came twice, and after close no hcomm thread, no extra descriptor and no shared-memory file is
 * left.
 */
class ReconnectTest {
    private static final Pattern COUNTERS = Pattern.compile("COUNTERS reconnects=(\\d+) resent=(\\d+) resentBytes=(\\d+) duplicates=(\\d+)");
    private static final Pattern RECOVERED = Pattern.compile("re-established the connection to rank \\d+ after (\\d+) ms \\((\\d+) attempt");

    @RegisterExtension
    final ShmDir shm = new ShmDir("hcomm-reconnect-test-");

    private Map<String, String> env(String transport) {
        return Map.of("HCOMM_TRANSPORT", transport, "HCOMM_SHM_DIR", shm.path().toString(), "HCOMM_TIMEOUT", "120s",
                "HCOMM_RETRY_MAX", "20", "HCOMM_RETRY_INTERVAL", "50ms");
    }

    /**
     * Two ranks: the point-to-point scenario, then (in the same JVMs: one start of them for both, which were two jobs)
     * the all-reduces; each scenario made every rank re-establish connections (its own reconnects counted between the
     * COUNTERS lines after it and before it).
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    void pointToPointThenAllReduceSurviveDrops(String transport) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(2, ReconnectWorker.class, env(transport), Duration.ofSeconds(240), "p2p", "allreduce", "7");
        check(out, "OK p2p", "OK allreduce");
        for (Ranks.Outcome o : out) {
            assertThat(o.output()).contains("STREAM OK");
            System.out.printf("ReconnectTest p2p, allreduce n=2 %s rank %d: %s | %s | %s%n", transport, o.rank(), line(o.output(), "STREAM OK"),
                    o.output().lines().filter(l -> l.startsWith("COUNTERS")).toList(), recoveries(o.output()));
        }
        assertThat(out.get(1).output()).contains("MESSAGE OK");
        shm.assertEmpty();
    }

    /** 7 all-reduces: a break in the 2nd, 4th and 6th (one of each way), each after and before one that breaks nothing. */
    @ParameterizedTest
    @CsvSource({"4, tcp"})
    void allReduceSurvivesDrops(int n, String transport) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(n, ReconnectWorker.class, env(transport), Duration.ofSeconds(240), "allreduce", "7");
        check(out, "OK allreduce");
        for (Ranks.Outcome o : out) {
            System.out.printf("ReconnectTest allreduce n=%d %s rank %d: %s | %s%n", n, transport, o.rank(), line(o.output(), "COUNTERS"),
                    recoveries(o.output()));
        }
        shm.assertEmpty();
    }

    /**
     * Every rank printed each of {@code oks} (its scenarios' OK lines, in order), re-established connections in each
     * scenario (the COUNTERS line after it counts more reconnects than the one before), saw no duplicate, and closed clean.
     */
    static void check(List<Ranks.Outcome> out, String... oks) {
        for (Ranks.Outcome o : out) {
            Matcher m = COUNTERS.matcher(o.output());
            long reconnects = 0;
            int from = 0;
            for (String ok : oks) {
                int at = o.output().indexOf(ok, from);
                assertThat(at).as("rank %d, %s:\n%s", o.rank(), ok, o.output()).isNotNegative();
                assertThat(m.find(at)).as("COUNTERS after %s:\n%s", ok, o.output()).isTrue();
                long now = Long.parseLong(m.group(1));
                assertThat(now).as("rank %d re-established connections in %s", o.rank(), ok).isGreaterThan(reconnects);
                assertThat(Long.parseLong(m.group(4))).as("rank %d: frames received twice", o.rank()).isZero();
                reconnects = now;
                from = m.end();
            }
            ClosedClean.assertIn(o.output(), "rank " + o.rank(), 3);
        }
    }

    /**
     * "reconnects made here: n, loss to new connection min/median/max ms, attempts max": from the INFO lines of the
     * connections this rank re-established itself (those the peer re-established are counted by the peer).
     */
    static String recoveries(String out) {
        List<Long> ms = new java.util.ArrayList<>();
        int attempts = 0;
        Matcher m = RECOVERED.matcher(out);
        while (m.find()) {
            ms.add(Long.parseLong(m.group(1)));
            attempts = Math.max(attempts, Integer.parseInt(m.group(2)));
        }
        if (ms.isEmpty()) return "reconnects made here: 0";
        java.util.Collections.sort(ms);
        return "reconnects made here: " + ms.size() + ", loss to new connection " + ms.get(0) + "/" + ms.get(ms.size() / 2) + "/"
                + ms.get(ms.size() - 1) + " ms (min/median/max), at most " + attempts + " attempts";
    }

    static String line(String out, String prefix) {
        return out.lines().filter(l -> l.startsWith(prefix)).findFirst().orElse("(none)");
    }
}
