package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.TcpStore;
import io.hcomm4j.security.Auth;
import io.hcomm4j.testing.Ranks;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A job of three ranks where rank 2 is not HComm4J but this test speaking the protocol by hand: it joins through the
 * store, connects to rank 0 with the right secret and hello, sends one good message, then a malformed frame. Rank 0
 * closes that connection with a clear protocol error, rank 2 is declared failed on both real ranks (rank 1 learns it from
 * rank 0), and ranks 0 and 1 go on talking. Their health goes READY → DEGRADED [2] → FAILED [2] (rank 0 aborts at the
 * end), each change reported once to a listener.
 */
class MalformedFrameTest {
    private static final String SECRET = "thread-job-secret-01";

    @ParameterizedTest
    @ValueSource(strings = {"bad magic", "oversized eager", "wrong source", "unknown type"})
    void aPeerSendingMalformedFramesIsCutOffAndTheOthersGoOn(String fault) throws Exception {
        int port = Ranks.freePort();
        CountDownLatch rogueConnected = new CountDownLatch(1);
        // the rogue connects only once both real ranks listen: in a cold JVM its bad frame came before rank 0's listener
        // was added, and the DEGRADED change went unseen (1 run in 1 of this class alone)
        CountDownLatch listening = new CountDownLatch(2);
        CountDownLatch done = new CountDownLatch(1);
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        List<Thread> threads = new ArrayList<>();
        List<List<String>> transitions = List.of(new CopyOnWriteArrayList<>(), new CopyOnWriteArrayList<>());
        for (int r = 0; r < 2; r++) {
            int rank = r;
            threads.add(Thread.ofPlatform().start(() -> {
                try (Hcomm h = Hcomm.init(Ranks.threadConfig(rank, 3, port).heartbeatTimeout(Duration.ofSeconds(2)).build())) {
                    Communicator c = h.world();
                    c.addHealthListener(health -> transitions.get(rank).add(health.state() + " " + health.failedRanks()));
                    listening.countDown();
                    runRank(c, fault, rogueConnected);
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        Thread rogue = Thread.ofPlatform().start(() -> {
            try {
                rogue(port, fault, rogueConnected, listening);
            } catch (Throwable e) {
                errors.add(e);
            } finally {
                done.countDown();
            }
        });
        for (Thread t : threads) t.join(150_000);
        rogue.join(30_000);
        assertThat(errors).isEmpty();
        for (int r = 0; r < 2; r++) {
            assertThat(transitions.get(r)).as("rank %d health changes", r).containsExactly("DEGRADED [2]", "FAILED [2]");
        }
    }

    private static void runRank(Communicator c, String fault, CountDownLatch rogueConnected) throws Exception {
        int rank = c.rank();
        if (rank == 0) {
            assertThat(rogueConnected.await(30, TimeUnit.SECONDS)).isTrue();
            byte[] good = new byte[4];
            c.recv(good, 2, 5);
            assertThat(new String(good, StandardCharsets.US_ASCII)).isEqualTo("ok!!");
            try {
                c.recv(new byte[8], 2, 6);
                throw new AssertionError("a receive from the malformed peer completed");
            } catch (PeerFailedException e) {
                System.out.printf("MalformedFrameTest %s: rank 0: %s%n", fault, e.getMessage());
                assertThat(e.failedRanks()).containsExactly(2);
                assertThat(e.getMessage()).contains("rank 2 failed (protocol error: ");
            }
        }
        // both real ranks know rank 2 failed (rank 1 from rank 0's notice); rank 1 waits from the start, before the rogue
        // has even connected, so its wait is long (a loaded machine once took more than 10 s)
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (c.health().state() == Health.State.READY && System.nanoTime() < deadline) Thread.sleep(5);
        Health h = c.health();
        assertThat(h.state()).as("rank %d", rank).isEqualTo(Health.State.DEGRADED);
        assertThat(h.failedRanks()).containsExactly(2);
        assertThat(h.reason()).as("rank %d", rank).contains(rank == 0 ? "protocol error" : "rank 0 reports it failed: it broke the frame protocol");
        // ranks 0 and 1 go on
        for (int i = 0; i < 20; i++) {
            int[] in = new int[2];
            CommFuture<Status> r = c.recvAsync(in, 1 - rank, 9);
            c.send(new int[] {rank, i}, 1 - rank, 9);
            r.await();
            assertThat(in).containsExactly(1 - rank, i);
        }
        deadline = System.nanoTime() + 60_000_000_000L;
        if (rank == 0) {
            c.abort();
        } else {
            while (c.health().state() != Health.State.FAILED && System.nanoTime() < deadline) Thread.sleep(5);
        }
        assertThat(c.health().state()).isEqualTo(Health.State.FAILED);
        assertThat(c.health().failedRanks()).containsExactly(2);
        Thread.sleep(100); // let the listeners run before the session closes
    }

    /** Rank 2, by hand: join through the store, connect to rank 0, one good message, then {@code fault}. */
    private static void rogue(int port, String fault, CountDownLatch connected, CountDownLatch listening) throws Exception {
        try (TcpStore store = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), SECRET, Duration.ofSeconds(30));
             ServerSocket listener = new ServerSocket(0, 8, java.net.InetAddress.getLoopbackAddress())) {
            // whoever connects to "rank 2" is hung up on
            Thread.ofVirtual().start(() -> {
                while (!listener.isClosed()) {
                    try (Socket s = listener.accept()) {
                        s.close();
                    } catch (IOException e) {
                        return;
                    }
                }
            });
            long gen = store.add("hcomm/generation/2", 1);
            String ns = "hcomm/" + gen + "/";
            long token = ByteBuffer.wrap(store.get(ns + "token", Duration.ofSeconds(30))).getLong();
            store.set(ns + "addr/2", ("127.0.0.1 " + listener.getLocalPort() + " rogue-host").getBytes(StandardCharsets.UTF_8));
            store.add(ns + "joined", 1);
            // as Session.open does: every rank's address there
            store.await(java.util.List.of(ns + "addr/0", ns + "addr/1", ns + "addr/2"), Duration.ofSeconds(30));
            String[] hp = new String(store.get(ns + "addr/0", Duration.ofSeconds(10)), StandardCharsets.UTF_8).split(" ");
            store.add(ns + "started", 1);
            assertThat(listening.await(60, TimeUnit.SECONDS)).as("both ranks listen for health changes").isTrue();
            try (SocketChannel ch = SocketChannel.open(new InetSocketAddress(hp[0], Integer.parseInt(hp[1])))) {
                Auth.of(SECRET).connect(ch, Auth.DATA, Duration.ofSeconds(10));
                // fixed part, no ring offer, then: flags 0 (no resend log, so no reconnect), connection 0 (new), resume 0
                ByteBuffer hello = ByteBuffer.allocate(58).putInt(0x4843484C).putInt(2).putInt(0).putInt(3).putLong(token)
                        .putLong(64L << 20).putInt(0).putShort((short) 0).putInt(0).putLong(0).putLong(0).flip();
                while (hello.hasRemaining()) ch.write(hello);
                ch.socket().setSoTimeout(10_000);
                var in = ch.socket().getInputStream();
                assertThat(in.read()).as("ACCEPT").isEqualTo(1);
                assertThat(in.readNBytes(9)).hasSize(9); // eager limit, no shared memory
                assertThat(in.readNBytes(20)).hasSize(20); // flags, connection number, resume point
                connected.countDown();
                ByteBuffer good = frame((byte) 1, 1, 5, 2, 4).put("ok!!".getBytes(StandardCharsets.US_ASCII)).flip();
                while (good.hasRemaining()) ch.write(good);
                ByteBuffer bad = switch (fault) {
                    case "bad magic" -> frame((byte) 1, 2, 6, 2, 0).putShort(0, (short) 0x1234);
                    case "oversized eager" -> frame((byte) 1, 2, 6, 2, 1L << 40);
                    case "wrong source" -> frame((byte) 1, 2, 6, 1, 0);
                    case "unknown type" -> frame((byte) 99, 2, 6, 2, 0);
                    default -> throw new IllegalArgumentException(fault);
                };
                bad.flip();
                while (bad.hasRemaining()) ch.write(bad);
                // rank 0 hangs up
                int b;
                try {
                    b = in.read();
                    while (b >= 0) b = in.read();
                } catch (IOException reset) {
                    b = -1;
                }
                assertThat(b).isEqualTo(-1);
            }
        }
    }

    /** A 56-byte frame header (flags 0, ack 0, communicator 0, msgId 0), ready for a payload. */
    private static ByteBuffer frame(byte type, long seq, int tag, int src, long length) {
        return ByteBuffer.allocate(56 + 4).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 0x4843).put((byte) 1).put(type).putInt(0)
                .putLong(seq).putLong(0).putLong(0).putInt(tag).putInt(src).putLong(length).putLong(0);
    }
}
