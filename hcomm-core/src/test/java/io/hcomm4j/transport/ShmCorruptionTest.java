package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.PeerFailedException;
import io.hcomm4j.Status;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A peer of this host that writes garbage into the pair's shared mapping fails only its own link (issue 18): three
 * transports in this JVM over real shared-memory rings, rank 1 playing the hostile peer (the test writes its ring's
 * tail index: beyond the ring, or backwards), rank 0 the victim. Rank 0's receive from rank 1 fails with
 * {@link PeerFailedException} naming rank 1 and the corrupted mapping (not an index error deep in a reader, not a
 * hang), and rank 0 and rank 2 go on exchanging checked messages. Rank 1 talks to rank 0 only, so its own view (rank 0
 * dropped it) reaches nobody else.
 */
class ShmCorruptionTest {
    @ParameterizedTest
    @ValueSource(strings = {"beyond the ring", "backwards"})
    void garbageInTheRingFailsOnlyThatLink(String garbage) throws Exception {
        PeerTransport[] ts = TransportSmokeTest.job(3, Path.of("/dev/shm"));
        try (Arena arena = Arena.ofShared()) {
            exchange(ts, 1, 0, arena, 1, 5000); // both links exist, over shared memory
            exchange(ts, 2, 0, arena, 2, 5000);
            assertThat(ts[0].links()[1].ch.kind()).isEqualTo("shm");
            var pending = ts[0].recv(0, 1, 3, arena.allocate(64));
            ShmConduit hostile = (ShmConduit) ts[1].links()[0].ch;
            MemorySegment ctrl = hostile.txRing().control(); // the ring rank 1 writes, rank 0 reads
            long tail = ctrl.get(ValueLayout.JAVA_LONG, ShmRing.TAIL_OFFSET);
            long bad = garbage.equals("backwards") ? tail - 16 : tail + 3L * hostile.txRing().capacity();
            ctrl.set(ValueLayout.JAVA_LONG, ShmRing.TAIL_OFFSET, bad);
            hostile.ringShared(); // the doorbell: rank 0's poller looks even if it sleeps

            assertThatThrownBy(() -> pending.await(Duration.ofSeconds(30)))
                    .isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining("rank 1 corrupted the shared-memory mapping")
                    .hasMessageContaining("tail");
            assertThat(ts[0].links()[1].state).isEqualTo(PeerLink.State.FAILED);
            for (int round = 0; round < 5; round++) {
                exchange(ts, 2, 0, arena, 10 + round, 100 + round * 70_000); // eager and larger than the eager limit
                exchange(ts, 0, 2, arena, 20 + round, 100 + round * 70_000);
            }
            assertThat(ts[0].links()[2].state).isEqualTo(PeerLink.State.CONNECTED);
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    /** Rank {@code from} sends rank {@code to} {@code size} patterned bytes; {@code to} checks every byte. */
    private static void exchange(PeerTransport[] ts, int from, int to, Arena arena, int tag, int size) {
        MemorySegment out = arena.allocate(size);
        for (int i = 0; i < size; i++) out.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 131 + tag));
        MemorySegment in = arena.allocate(size);
        var r = ts[to].recv(0, from, tag, in);
        ts[from].send(0, to, tag, out).await(Duration.ofSeconds(30));
        Status st = r.await(Duration.ofSeconds(30));
        assertThat(st.bytes()).isEqualTo(size);
        assertThat(in.mismatch(out)).isEqualTo(-1);
    }
}
