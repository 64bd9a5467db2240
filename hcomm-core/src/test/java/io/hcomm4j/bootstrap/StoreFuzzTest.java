package io.hcomm4j.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.management.UnixOperatingSystemMXBean;
import io.hcomm4j.security.Auth;
import io.hcomm4j.security.Wire;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A seeded fuzzer against a live {@link TcpStoreServer} (issue 18): two good clients count, set and read back their own
 * keys, every result checked, while the fuzzer connects as a stranger (random bytes, broken proofs) and as a holder of
 * the secret that sends requests made valid and then mutated (op codes, key and value lengths, counts, wait times,
 * truncations), closing at random points, also in the middle of a wait. Afterwards the clients' results were exact,
 * the server still serves, its connection threads and descriptors came back to where they were.
 *
 * <p>{@value #CI_SECONDS} s in CI; {@code -Dhcomm.fuzz.seconds=N} and {@code -Dhcomm.fuzz.seed=S} as for
 * {@link io.hcomm4j.transport.ProtocolFuzzTest}.
 */
class StoreFuzzTest {
    static final int CI_SECONDS = 5;
    private static final String SECRET = "store-fuzz-test-secret-0123456789";
    private static final long[] EDGES = {0, 1, -1, 4096, 4097, 65536, 64L << 20, (64L << 20) + 1, Integer.MAX_VALUE,
        Integer.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE};

    @Test
    void aLiveStoreSurvivesMutatedRequests() throws Exception {
        long seed = Long.getLong("hcomm.fuzz.seed", System.nanoTime());
        long seconds = Long.getLong("hcomm.fuzz.seconds", CI_SECONDS);
        System.out.println("StoreFuzzTest: seed " + seed + " (-Dhcomm.fuzz.seed), " + seconds + " s");
        Random rnd = new Random(seed);
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress(TestPorts.LOOPBACK, 0), SECRET, Duration.ofMillis(500))) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong goodOps = new AtomicLong();
            List<Throwable> errors = new ArrayList<>();
            List<Thread> good = new ArrayList<>();
            for (int c = 0; c < 2; c++) {
                int id = c;
                good.add(Thread.ofPlatform().name("good-" + c).start(() -> {
                    try (TcpStore s = TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(10))) {
                        long mine = 0;
                        while (!stop.get()) {
                            s.add("count", 1);
                            assertThat(s.add("own-count-" + id, 1)).isEqualTo(++mine);
                            byte[] v = ("client " + id + " value " + mine).getBytes(UTF_8);
                            s.set("own-" + id, v);
                            assertThat(s.get("own-" + id, Duration.ofSeconds(10))).isEqualTo(v);
                            goodOps.addAndGet(1);
                        }
                    } catch (Throwable e) {
                        synchronized (errors) {
                            errors.add(e);
                        }
                    }
                }));
            }
            while (goodOps.get() == 0 && errors.isEmpty()) Thread.sleep(10);
            long fdsBefore = openDescriptors();
            int threadsBefore = server.liveThreads();
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            int strangers = 0;
            int members = 0;
            while (System.nanoTime() < end && errors.isEmpty()) {
                if (rnd.nextInt(4) == 0) {
                    stranger(server.address(), rnd);
                    strangers++;
                } else {
                    member(server.address(), rnd);
                    members++;
                }
            }
            stop.set(true);
            for (Thread t : good) t.join(30_000);
            synchronized (errors) {
                if (!errors.isEmpty()) throw new AssertionError("a good client failed while the fuzzer ran (seed " + seed + ")", errors.getFirst());
            }
            try (TcpStore check = TcpStore.connect(server.address(), SECRET, Duration.ofSeconds(10))) {
                long count = check.add("count", 0);
                long own0 = check.add("own-count-0", 0);
                long own1 = check.add("own-count-1", 0);
                assertThat(count).as("every add of the good clients counted once (seed %d)", seed).isEqualTo(own0 + own1);
            }
            System.out.printf("StoreFuzzTest: %d stranger and %d member connections; the good clients made %d rounds; %d refused%n",
                    strangers, members, goodOps.get(), server.rejectedConnections());
            long deadline = System.nanoTime() + 30_000_000_000L;
            while ((server.liveThreads() > threadsBefore || openDescriptors() > fdsBefore + 8) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertThat(server.liveThreads()).as("connection threads (before: %d; seed %d)", threadsBefore, seed).isLessThanOrEqualTo(threadsBefore);
            assertThat(openDescriptors()).as("descriptors (before: %d; seed %d)", fdsBefore, seed).isLessThanOrEqualTo(fdsBefore + 8);
        }
    }

    private static void stranger(InetSocketAddress at, Random rnd) {
        try (SocketChannel ch = SocketChannel.open(at)) {
            ch.socket().setSoTimeout(100);
            byte[] b = new byte[rnd.nextInt(120)];
            rnd.nextBytes(b);
            if (b.length >= 4 && rnd.nextBoolean()) ByteBuffer.wrap(b).putInt(0x48434D41); // "HCMA", then wrong
            ch.write(ByteBuffer.wrap(b));
            drain(ch.socket().getInputStream());
        } catch (IOException refused) {
            // expected
        }
    }

    /** A holder of the secret: a HELLO or not, then 1-8 requests made valid and mutated, maybe cut short. */
    private static void member(InetSocketAddress at, Random rnd) {
        try (SocketChannel ch = SocketChannel.open(at)) {
            Wire w = Auth.of(SECRET).connect(ch, Auth.STORE, Duration.ofSeconds(5));
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            if (rnd.nextBoolean()) out.writeByte(StoreProtocol.OP_HELLO);
            if (bytes.size() > 0) {
                out.writeLong(rnd.nextLong());
                out.writeLong(rnd.nextInt(3));
            }
            int n = 1 + rnd.nextInt(8);
            for (int i = 0; i < n; i++) request(out, rnd);
            byte[] b = bytes.toByteArray();
            int len = rnd.nextInt(4) == 0 ? rnd.nextInt(b.length + 1) : b.length;
            w.readTimeout(50 + rnd.nextInt(100));
            w.write(ByteBuffer.wrap(b, 0, len));
            drain(w.in());
        } catch (IOException closedByTheServer) {
            // expected for most
        }
    }

    private static void request(DataOutputStream out, Random rnd) throws IOException {
        // fuzz keys live apart from the good clients' (a member could overwrite them: it is a member)
        String key = "fuzz-" + rnd.nextInt(16);
        byte op = (byte) (1 + rnd.nextInt(8));
        if (rnd.nextInt(8) == 0) op = (byte) rnd.nextInt(256);
        long keyLen = key.length();
        if (rnd.nextInt(6) == 0) keyLen = EDGES[rnd.nextInt(EDGES.length)];
        long valueLen = rnd.nextInt(64);
        if (rnd.nextInt(6) == 0) valueLen = EDGES[rnd.nextInt(EDGES.length)];
        long wait = rnd.nextInt(200);
        if (rnd.nextInt(6) == 0) wait = EDGES[rnd.nextInt(EDGES.length)];
        out.writeByte(op);
        switch (op) {
            case StoreProtocol.OP_SET -> {
                key(out, key, keyLen);
                value(out, rnd, valueLen);
            }
            case StoreProtocol.OP_GET -> {
                out.writeLong(wait);
                key(out, key, keyLen);
            }
            case StoreProtocol.OP_TRY_GET, StoreProtocol.OP_DELETE -> key(out, key, keyLen);
            case StoreProtocol.OP_WAIT -> {
                out.writeLong(wait);
                int count = rnd.nextInt(6) == 0 ? (int) EDGES[rnd.nextInt(EDGES.length)] : 1 + rnd.nextInt(3);
                out.writeInt(count);
                for (int k = 0; k < Math.min(Math.max(count, 0), 3); k++) key(out, key + k, keyLen);
            }
            case StoreProtocol.OP_ADD -> {
                key(out, key, keyLen);
                out.writeLong(rnd.nextInt(6) == 0 ? EDGES[rnd.nextInt(EDGES.length)] : rnd.nextInt(10));
            }
            case StoreProtocol.OP_CAS -> {
                key(out, key, keyLen);
                boolean present = rnd.nextBoolean();
                out.writeByte(rnd.nextInt(6) == 0 ? rnd.nextInt(256) : present ? 1 : 0);
                if (present) value(out, rnd, valueLen);
                value(out, rnd, rnd.nextInt(64));
            }
            case StoreProtocol.OP_HELLO -> {
                out.writeLong(rnd.nextLong());
                out.writeLong(rnd.nextInt(6) == 0 ? EDGES[rnd.nextInt(EDGES.length)] : 0);
            }
            default -> {
                byte[] junk = new byte[rnd.nextInt(32)];
                rnd.nextBytes(junk);
                out.write(junk);
            }
        }
    }

    /** A key as the protocol writes it, with the length {@code len} announced (the bytes are the key's, at most). */
    private static void key(DataOutputStream out, String key, long len) throws IOException {
        out.writeInt((int) len);
        byte[] b = key.getBytes(UTF_8);
        if (len > 0) out.write(b, 0, (int) Math.min(len, b.length));
    }

    private static void value(DataOutputStream out, Random rnd, long len) throws IOException {
        out.writeInt((int) len);
        byte[] b = new byte[(int) Math.min(Math.max(len, 0), 256)];
        rnd.nextBytes(b);
        out.write(b);
    }

    private static void drain(InputStream in) {
        byte[] sink = new byte[4096];
        try {
            while (in.read(sink) >= 0) {
                // until the server closes or goes quiet for the timeout
            }
        } catch (IOException quietOrClosed) {
            // enough
        }
    }

    private static long openDescriptors() {
        return ((UnixOperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getOpenFileDescriptorCount();
    }
}
