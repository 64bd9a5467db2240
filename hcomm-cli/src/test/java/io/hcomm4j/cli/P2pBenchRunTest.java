package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The measurement patterns against in-memory communicators: they match every send with a receive (no hang),
 * move the expected amount of data, and the check finds correct data correct.
 */
@Timeout(30)
class P2pBenchRunTest {
    private static List<P2pBench.Result> onRanks(int n, IntFunction<Callable<P2pBench.Result>> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<P2pBench.Result>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) futures.add(pool.submit(body.apply(r)));
            List<P2pBench.Result> results = new ArrayList<>();
            for (Future<P2pBench.Result> f : futures) results.add(f.get());
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void pingpongEchoesAndChecks() throws Exception {
        InMemoryComms comms = new InMemoryComms(2);
        List<P2pBench.Result> results = onRanks(2, r -> () -> P2pBench.pingpong(comms.rank(r), 4096, 50, 5, true));

        P2pBench.Result r0 = results.getFirst();
        assertThat(r0.bytes()).isEqualTo(4096);
        assertThat(r0.iterations()).isEqualTo(50);
        assertThat(r0.timeUs()).isPositive();
        assertThat(r0.wrong()).isZero();
        // 55 round trips and the check's one: two messages each, plus rank 1's 8-byte count
        assertThat(comms.bytesSent()).isEqualTo(56L * 2 * 4096 + 8);
    }

    @Test
    void streamSendsWindowsAndAcks() throws Exception {
        InMemoryComms comms = new InMemoryComms(2);
        List<P2pBench.Result> results = onRanks(2, r -> () -> P2pBench.stream(comms.rank(r), 65536, 4, 6, 2, true));

        assertThat(results.getFirst().wrong()).isZero();
        assertThat(results.getFirst().algbwGBs()).isPositive();
        // 8 windows of 4 messages with an 8-byte ack each, then the check's message and count
        assertThat(comms.bytesSent()).isEqualTo(8L * (4 * 65536 + 8) + 65536 + 8);
    }

    @Test
    void uncheckedResultsSayNotChecked() throws Exception {
        InMemoryComms comms = new InMemoryComms(2);
        List<P2pBench.Result> results = onRanks(2, r -> () -> P2pBench.pingpong(comms.rank(r), 8, 10, 1, false));

        assertThat(results).allSatisfy(res -> assertThat(res.wrong()).isEqualTo(-1));
    }

    @Test
    void ringExchangesWithBothNeighbours() throws Exception {
        InMemoryComms comms = new InMemoryComms(4);
        List<P2pBench.Result> results = onRanks(4, r -> () -> P2pBench.ring(comms.rank(r), 1 << 16, 10, 2, true));

        assertThat(results).allSatisfy(res -> {
            assertThat(res.wrong()).isZero();
            assertThat(res.iterations()).isEqualTo(10);
        });
        assertThat(comms.bytesSent()).isEqualTo(4L * 13 * (1 << 16));
    }
}
