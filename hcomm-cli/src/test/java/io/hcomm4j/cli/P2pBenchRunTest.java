package io.hcomm4j.cli;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.Status;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The measurement loops of {@link P2pBench} on real sessions: ranks are threads of this JVM, each with its own
 * {@code Hcomm.init}, talking over TCP ({@link ThreadRanks}). Every send meets a receive (no hang, and the fence
 * after each run finds no message left over), the check finds the data intact, and a peer that corrupts bytes
 * is caught. Times are only required to be positive, never fast.
 */
@Timeout(60)
class P2pBenchRunTest {
    @Test
    void pingpongEchoesAndChecks() throws Exception {
        List<P2pBench.Result> results = ThreadRanks.run(2, r -> comm -> P2pBench.pingpong(comm, 4096, 50, 5, true));

        assertThat(results).allSatisfy(res -> {
            assertThat(res.bytes()).isEqualTo(4096);
            assertThat(res.iterations()).isEqualTo(50);
            assertThat(res.wrong()).as("wrong bytes").isZero();
        });
        assertThat(results.getFirst().timeUs()).as("one-way latency on rank 0").isPositive();
        assertThat(results.getFirst().algbwGBs()).isPositive();
    }

    @Test
    void pingpongAboveTheEagerLimit() throws Exception {
        // 1 MiB + 3 bytes: larger than the eager limit (64 KiB), so every message goes rendezvous; an odd size
        long bytes = (1 << 20) + 3;
        List<P2pBench.Result> results = ThreadRanks.run(2, r -> comm -> P2pBench.pingpong(comm, bytes, 5, 1, true));

        assertThat(results).allSatisfy(res -> {
            assertThat(res.bytes()).isEqualTo(bytes);
            assertThat(res.wrong()).as("wrong bytes").isZero();
        });
        assertThat(results.getFirst().timeUs()).isPositive();
    }

    @Test
    void streamSendsWindowsAndAcks() throws Exception {
        List<P2pBench.Result> results = ThreadRanks.run(2, r -> comm -> P2pBench.stream(comm, 65536, 4, 6, 2, true));

        assertThat(results).allSatisfy(res -> {
            assertThat(res.bytes()).isEqualTo(65536);
            assertThat(res.iterations()).isEqualTo(6);
            assertThat(res.wrong()).as("wrong bytes").isZero();
            assertThat(res.timeUs()).isPositive();
            assertThat(res.algbwGBs()).isPositive();
        });
    }

    @Test
    void streamOfRendezvousMessages() throws Exception {
        // a window of 3 messages of 4 MiB posted at once on both sides
        List<P2pBench.Result> results = ThreadRanks.run(2, r -> comm -> P2pBench.stream(comm, 4 << 20, 3, 2, 1, true));

        assertThat(results).allSatisfy(res -> {
            assertThat(res.wrong()).as("wrong bytes").isZero();
            assertThat(res.timeUs()).isPositive();
        });
    }

    @Test
    void uncheckedResultsSayNotChecked() throws Exception {
        List<P2pBench.Result> results = ThreadRanks.run(2, r -> comm -> P2pBench.pingpong(comm, 8, 10, 1, false));

        assertThat(results).allSatisfy(res -> assertThat(res.wrong()).isEqualTo(-1));
        assertThat(results.getFirst().timeUs()).isPositive();
    }

    @Test
    void ringExchangesWithBothNeighbours() throws Exception {
        List<P2pBench.Result> results = ThreadRanks.run(4, r -> comm -> P2pBench.ring(comm, 1 << 16, 10, 2, true));

        assertThat(results).allSatisfy(res -> {
            assertThat(res.bytes()).isEqualTo(1 << 16);
            assertThat(res.iterations()).isEqualTo(10);
            assertThat(res.wrong()).as("wrong bytes").isZero();
            assertThat(res.timeUs()).isPositive();
        });
    }

    @Test
    void pointToPointMeasurementsRefuseRanksAboveOne() throws Exception {
        List<String> errors = ThreadRanks.run(3, r -> comm -> {
            if (r < 2) return "";
            try {
                P2pBench.pingpong(comm, 8, 1, 0, false);
                return "no error";
            } catch (IllegalStateException e) {
                return e.getMessage();
            }
        });

        assertThat(errors.get(2)).contains("ranks 0 and 1", "not on rank 2 of 3");
    }

    // The check catches corruption: one side of each pair below is a hand-written peer that follows
    // P2pBench's protocol but alters bytes in the check round.

    @Test
    void pingpongCheckCountsBytesTheEchoAltered() throws Exception {
        int bytes = 4096;
        int iters = 10;
        int warmup = 2;
        List<Long> wrong = ThreadRanks.run(2, r -> comm -> {
            if (r == 0) return P2pBench.pingpong(comm, bytes, iters, warmup, true).wrong();
            try (Arena arena = Arena.ofShared()) {
                MemorySegment buf = arena.allocate(bytes);
                for (int i = 0; i < iters + warmup; i++) {
                    comm.recv(buf, 0, P2pBench.TAG_PINGPONG);
                    comm.send(buf, 0, P2pBench.TAG_PINGPONG);
                }
                // the check round: echo with 2 bytes altered, and report 3 wrong bytes of its own
                assertThat(comm.recv(buf, 0, P2pBench.TAG_CHECK).bytes()).isEqualTo(bytes);
                flip(buf, 0);
                flip(buf, bytes - 1);
                comm.send(buf, 0, P2pBench.TAG_CHECK);
                MemorySegment count = arena.allocate(JAVA_LONG);
                count.set(JAVA_LONG, 0, 3);
                comm.send(count, 0, P2pBench.TAG_RESULT);
                return -1L;
            }
        });

        assertThat(wrong.getFirst()).as("rank 0: 2 altered in the echo + 3 reported by rank 1").isEqualTo(5);
    }

    @Test
    void streamCheckCountsBytesTheSenderAltered() throws Exception {
        int bytes = 65536;
        int window = 4;
        int reps = 3;
        int warmup = 1;
        List<Long> wrong = ThreadRanks.run(2, r -> comm -> {
            if (r == 1) return P2pBench.stream(comm, bytes, window, reps, warmup, true).wrong();
            try (Arena arena = Arena.ofShared()) {
                MemorySegment send = arena.allocate(bytes);
                P2pBench.fill(send, 0);
                MemorySegment ack = arena.allocate(8);
                for (int i = 0; i < reps + warmup; i++) {
                    for (int w = 0; w < window; w++) comm.send(send, 1, P2pBench.TAG_STREAM);
                    comm.recv(ack, 1, P2pBench.TAG_ACK);
                }
                // the check round: 7 bytes altered, and the last 100 bytes missing
                for (int i = 0; i < 7; i++) flip(send, 1000L * i);
                comm.send(send.asSlice(0, bytes - 100), 1, P2pBench.TAG_CHECK);
                MemorySegment count = arena.allocate(JAVA_LONG);
                comm.recv(count, 1, P2pBench.TAG_RESULT);
                return count.get(JAVA_LONG, 0);
            }
        });

        assertThat(wrong.get(1)).as("rank 1's count").isEqualTo(107);
        assertThat(wrong.get(0)).as("what rank 1 reported to rank 0").isEqualTo(107);
    }

    @Test
    void ringCheckCountsBytesTheNeighbourAltered() throws Exception {
        int bytes = 8192;
        int iters = 4;
        int warmup = 1;
        List<Long> wrong = ThreadRanks.run(3, r -> comm -> {
            if (r != 1) return P2pBench.ring(comm, bytes, iters, warmup, true).wrong();
            try (Arena arena = Arena.ofShared()) {
                MemorySegment send = arena.allocate(bytes);
                MemorySegment recv = arena.allocate(bytes);
                P2pBench.fill(send, 1);
                for (int i = 0; i < iters + warmup + 1; i++) {
                    int tag = i < iters + warmup ? P2pBench.TAG_RING : P2pBench.TAG_CHECK;
                    if (tag == P2pBench.TAG_CHECK) {
                        for (int k = 0; k < 9; k++) flip(send, 900L * k + 1);
                    }
                    CommFuture<Status> rf = comm.recvAsync(recv, 0, tag);
                    comm.sendAsync(send, 2, tag).await();
                    rf.await();
                }
                return -1L;
            }
        });

        assertThat(wrong.get(0)).as("rank 0 receives from rank 2").isZero();
        assertThat(wrong.get(2)).as("rank 2 receives from rank 1, which altered 9 bytes").isEqualTo(9);
    }

    private static void flip(MemorySegment seg, long index) {
        seg.set(JAVA_BYTE, index, (byte) ~seg.get(JAVA_BYTE, index));
    }
}
