package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.TcpStore;
import io.hcomm4j.security.Auth;
import io.hcomm4j.testing.Ranks;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Strangers at a rank's data port while a job runs: no secret, a wrong secret, random bytes, the right
 * secret with a foreign hello. Each is refused and closed; the job's results stay exactly right.
 */
class DataPortSecurityTest {
    @Test
    void foreignClientsAreRefusedAndTheJobStaysCorrect() throws Exception {
        int port = Ranks.freePort();
        int n = 2;
        CountDownLatch running = new CountDownLatch(n);
        CountDownLatch attacked = new CountDownLatch(1);
        AtomicInteger rounds = new AtomicInteger();
        List<Thread> ranks = new ArrayList<>();
        List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (int r = 0; r < n; r++) {
            int rank = r;
            ranks.add(Thread.ofPlatform().start(() -> {
                try (Hcomm h = Hcomm.init(Ranks.threadConfig(rank, n, port).build())) {
                    Communicator c = h.world();
                    running.countDown();
                    Random rnd = new Random(99); // same sizes on both ranks
                    int round = 0;
                    while (true) {
                        // both ranks decide together whether to go on, so neither closes while the other sends
                        int[] go = {attacked.getCount() > 0 || round < 50 ? 1 : 0};
                        c.allReduce(go, ReduceOp.MAX);
                        if (go[0] == 0) break;
                        int size = rnd.nextInt(3) == 0 ? 200_000 : 1000;
                        long[] out = new long[size / 8];
                        for (int i = 0; i < out.length; i++) out[i] = rank * 1_000_000_007L + round * 31L + i;
                        long[] in = new long[out.length];
                        CommFuture<Status> rf = c.recvAsync(in, 1 - rank, round % 3);
                        c.send(out, 1 - rank, round % 3);
                        rf.await();
                        for (int i = 0; i < in.length; i++) {
                            long want = (1 - rank) * 1_000_000_007L + round * 31L + i;
                            if (in[i] != want) throw new AssertionError("round " + round + " element " + i);
                        }
                        round++;
                    }
                    rounds.addAndGet(round);
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        running.await();
        InetSocketAddress data;
        try (TcpStore store = TcpStore.connect(new InetSocketAddress("127.0.0.1", port), "thread-job-secret-01", Duration.ofSeconds(10))) {
            String[] hp = new String(store.get("hcomm/1/addr/0", Duration.ofSeconds(10)), StandardCharsets.UTF_8).split(" ");
            data = new InetSocketAddress(hp[0], Integer.parseInt(hp[1]));
        }
        try {
            // (a) connects and says nothing while (b) to (e) are refused and the job goes on: a silent stranger holds
            // up neither the other handshakes nor the job
            SocketChannel silent = SocketChannel.open(data);
            // (b) no secret and (c) a wrong secret: the handshake fails
            for (Auth stranger : new Auth[] {Auth.loopbackOnly(), Auth.unauthenticated(), Auth.of("wrong-job-secret-0001")}) {
                try (SocketChannel ch = SocketChannel.open(data)) {
                    try {
                        stranger.connect(ch, Auth.DATA, Duration.ofSeconds(5));
                        throw new AssertionError("handshake of a stranger (secret: " + stranger.hasSecret() + ") succeeded");
                    } catch (Auth.AuthException expected) {
                        // the rank did not prove itself to us either
                    }
                }
            }
            // (d) random bytes instead of the handshake
            try (SocketChannel ch = SocketChannel.open(data)) {
                byte[] junk = new byte[4096];
                new Random(7).nextBytes(junk);
                ch.write(ByteBuffer.wrap(junk));
                assertClosedByPeer(ch);
            }
            // (e) the right secret but a hello from another job: a whole hello (fixed part, no ring offer, resume part:
            // flags 0, a new connection, resume 0, as MalformedFrameTest writes one) whose job token is not this job's,
            // so the rank refuses it on the token, not on a read timeout of a hello cut short
            try (SocketChannel ch = SocketChannel.open(data)) {
                Auth.of("thread-job-secret-01").connect(ch, Auth.DATA, Duration.ofSeconds(5));
                ByteBuffer hello = ByteBuffer.allocate(58).putInt(0x4843484C).putInt(1).putInt(0).putInt(2).putLong(12345)
                        .putLong(1 << 20).putInt(0).putShort((short) 0).putInt(0).putLong(0).putLong(0).flip();
                while (hello.hasRemaining()) ch.write(hello);
                assertClosedByPeer(ch);
            }
            silent.close();
        } finally {
            attacked.countDown();
        }
        for (Thread t : ranks) t.join(120_000);
        assertThat(errors).isEmpty();
        assertThat(rounds.get()).isGreaterThanOrEqualTo(100);
    }

    private static void assertClosedByPeer(SocketChannel ch) throws IOException {
        ch.socket().setSoTimeout(15_000);
        var in = ch.socket().getInputStream();
        int total = 0;
        while (true) {
            int r;
            try {
                r = in.read(new byte[256]);
            } catch (IOException reset) {
                return; // reset by the rank: closed too
            }
            if (r < 0) return;
            total += r;
            if (total > 1024) throw new AssertionError("the rank keeps talking to a stranger");
        }
    }
}
