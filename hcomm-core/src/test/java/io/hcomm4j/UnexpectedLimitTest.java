package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A sender far ahead of its receiver: unexpected eager messages fill the per-peer bound, reading pauses
 * (TCP holds the sender), and resumes as receives take messages; nothing is lost or reordered.
 */
class UnexpectedLimitTest {
    @Test
    void senderAheadOfReceiverPausesAndResumes() throws Exception {
        int port = Ranks.freePort();
        int messages = 400, size = 60_000;
        List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<Thread> ranks = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            int rank = r;
            ranks.add(Thread.ofPlatform().start(() -> {
                CommConfig cfg = Ranks.threadConfig(rank, 2, port).unexpectedLimit(1 << 20).build();
                try (Hcomm h = Hcomm.init(cfg)) {
                    Communicator c = h.world();
                    if (rank == 0) {
                        List<CommFuture<Void>> sends = new ArrayList<>();
                        for (int m = 0; m < messages; m++) {
                            int[] data = new int[size / 4];
                            for (int i = 0; i < data.length; i++) data[i] = m * 100_003 + i;
                            sends.add(c.sendAsync(data, 1, m % 2));
                        }
                        for (CommFuture<Void> s : sends) s.await();
                        c.recv(new byte[1], 1, 9);
                    } else {
                        Thread.sleep(300); // let 24 MB pile up against a 1 MB bound
                        int[] in = new int[size / 4];
                        for (int parity = 1; parity >= 0; parity--) {
                            for (int m = parity; m < messages; m += 2) {
                                Status st = c.recv(in, 0, parity);
                                assertThat(st.bytes()).isEqualTo(size);
                                for (int i = 0; i < in.length; i++) {
                                    if (in[i] != m * 100_003 + i) throw new AssertionError("message " + m + " element " + i + " is " + in[i]);
                                }
                            }
                        }
                        c.send(new byte[1], 0, 9);
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        for (Thread t : ranks) t.join(Duration.ofMinutes(2));
        assertThat(errors).isEmpty();
    }
}
