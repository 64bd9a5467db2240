package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.Status;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * A flood against a rank's data port while two ranks talk (issue 18, "limits that hold"): 300 idle connections and 60
 * that send garbage. At most {@link AcceptGate#PENDING} are ever in their handshake at once (the rest wait in the
 * kernel's backlog), the ranks' messages keep arriving byte for byte, every connection of the flood is refused (the
 * idle ones once they close), the refusals are logged once per 10 s (not 360 times), and once the flood closes no
 * handshake is left pending.
 */
class AcceptFloodTest {
    @Test
    void idleAndGarbageConnectionsAreBoundedAndTheRanksGoOn() throws Exception {
        PeerTransport[] ts = TransportSmokeTest.job(2, null);
        AcceptGate gate = ts[0].connections.gate;
        List<Socket> flood = new ArrayList<>();
        SplittableRandom rnd = new SplittableRandom(18);
        try (Arena arena = Arena.ofShared()) {
            exchange(ts, arena, 0, rnd); // the link exists before the flood
            long t0 = System.nanoTime();
            for (int i = 0; i < 300; i++) {
                Socket s = new Socket();
                s.connect(ts[0].listenAddress(), 5000);
                flood.add(s);
            }
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> gate.pending() == AcceptGate.PENDING);
            for (int round = 1; round <= 20; round++) {
                exchange(ts, arena, round, rnd);
                assertThat(gate.pending()).as("handshakes pending").isLessThanOrEqualTo(AcceptGate.PENDING);
            }
            for (Socket s : flood) s.close(); // idle ones end: places free for the garbage ones
            flood.clear();
            for (int i = 0; i < 60; i++) {
                Socket s = new Socket();
                s.connect(ts[0].listenAddress(), 5000);
                byte[] junk = new byte[1 + rnd.nextInt(200)];
                rnd.nextBytes(junk);
                OutputStream o = s.getOutputStream();
                o.write(junk);
                o.flush();
                flood.add(s);
            }
            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> gate.refusals() >= 60);
            // once per 10 s: however slow this machine, far fewer lines than refusals
            long windows = 1 + (System.nanoTime() - t0) / AcceptGate.LOG_EVERY_NANOS;
            assertThat(gate.refusalsLogged()).as("refusals logged of %d", gate.refusals()).isBetween(1L, windows);
            exchange(ts, arena, 21, rnd);
            for (Socket s : flood) s.close();
            Awaitility.await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(gate.pending()).as("pending handshakes, refused %d", gate.refusals()).isZero());
        } finally {
            for (Socket s : flood) s.close();
            for (PeerTransport t : ts) t.close();
        }
    }

    /** Rank 0 sends rank 1 a seeded message of up to 200 KiB; rank 1 checks every byte. */
    private static void exchange(PeerTransport[] ts, Arena arena, int tag, SplittableRandom rnd) {
        int size = rnd.nextInt(200 * 1024);
        MemorySegment out = arena.allocate(Math.max(1, size)).asSlice(0, size);
        for (int i = 0; i < size; i++) out.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 131 + tag));
        MemorySegment in = arena.allocate(Math.max(1, size));
        var r = ts[1].recv(0, 0, tag, in);
        ts[0].send(0, 1, tag, out).await(Duration.ofSeconds(30));
        Status st = r.await(Duration.ofSeconds(30));
        assertThat(st.bytes()).as("message %d", tag).isEqualTo(size);
        assertThat(in.asSlice(0, size).mismatch(out)).as("message %d", tag).isEqualTo(-1);
    }
}
