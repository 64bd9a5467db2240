package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code barrierAsync().await(1 s)} while rank 2 is late: the message blames the caller's own timeout (not
 * HCOMM_TIMEOUT), names the collective and the late rank, and the future still completes once rank 2 comes; over
 * shared memory and TCP. A stream op that failed and was never synchronized surfaces from {@code close()}.
 */
class AsyncTimeoutMessageTest {
    @ParameterizedTest
    @EnumSource(value = CommConfig.Transport.class, names = {"AUTO", "TCP"})
    void anAwaitThatTimesOutNamesTheLateRank(CommConfig.Transport transport) throws Exception {
        Map<Integer, String> messages = new ConcurrentHashMap<>();
        Ranks.runThreads(3, Duration.ofMinutes(2), b -> b.transport(transport), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            c.barrier();
            if (rank == 2) {
                try {
                    Thread.sleep(3_000); // busy in its own code
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }
            CommFuture<Void> f = c.barrierAsync();
            if (rank < 2) {
                Throwable t = catchThrowable(() -> f.await(Duration.ofSeconds(1)));
                assertThat(t).isInstanceOf(CommTimeoutException.class);
                messages.put(rank, t.getMessage());
            }
            f.await(); // rank 2 comes: the barrier completes
            try (Stream s = c.newStream()) {
                s.recv(new byte[2], (rank + 1) % 3, 4);
                c.send(new byte[8], (rank + 2) % 3, 4); // larger than the stream's buffer: its receive fails
                Throwable closed = catchThrowable(s::close);
                assertThat(closed).as("rank %d: close reports the failure nobody synchronized", rank)
                        .isInstanceOf(MessageTruncatedException.class);
            }
        });
        String where = transport == CommConfig.Transport.AUTO ? " (shared memory)" : "";
        for (int r = 0; r < 2; r++) {
            assertThat(messages.get(r)).as("rank %d", r).matches("rank " + r + ": barrier #2 did not complete within 1\\.\\d s "
                    + "\\(the timeout given to await\\): it still waits for rank 2" + java.util.regex.Pattern.quote(where));
        }
    }
}
