package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.management.UnixOperatingSystemMXBean;
import io.hcomm4j.security.Auth;
import io.hcomm4j.security.Wire;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A seeded fuzzer against the data port of a live job (issue 18): ranks 0 and 1 exchange seeded messages, every byte
 * checked, while the fuzzer connects to their listeners again and again as a stranger (garbage, broken handshakes), as
 * a holder of the secret with broken hellos (lengths, ranks, sizes, tokens, flags, ring names, truncations), and as a
 * member (a valid hello for one of the job's spare ranks) that then sends mutated frames (types, flags, sequence
 * numbers, acknowledgements, lengths, counts, message ids, truncations). Afterwards: the job's messages were exact
 * all along, the link between the real ranks never went, no thread of the library died of an uncaught exception, and
 * descriptors and heap came back near where they were.
 *
 * <p>In CI it runs {@value #CI_SECONDS} s; {@code -Dhcomm.fuzz.seconds=N} runs longer and {@code -Dhcomm.fuzz.seed=S}
 * repeats a run (the seed is printed).
 */
class ProtocolFuzzTest {
    static final int CI_SECONDS = 6;
    private static final String SECRET = "protocol-fuzz-test-secret-0123456789";
    private static final long TOKEN = 42;
    /**
     * World ranks 2 .. 2+SPARE-1 are spare slots the fuzzer plays, one per member session (a slot whose link failed
     * stays failed); the broken hellos claim ranks above those (one of them may come through: its slot is used then).
     */
    private static final int SPARE = 400;
    private static final byte[] FRAME_TYPES = {Frame.EAGER, Frame.RTS, Frame.CTS, Frame.DATA, Frame.ACK, Frame.BYE,
        Frame.CREDIT, Frame.DATA_REF, Frame.DATA_DONE, Frame.HEARTBEAT, Frame.FAILED, Frame.ABORT, Frame.STATUS_REQUEST,
        Frame.RMA, Frame.DATA_PART, Frame.ECHO};
    private static final long[] EDGES = {0, 1, -1, 7, 56, 255, 4095, 65536, 1L << 20, 64L << 20, Integer.MAX_VALUE,
        Integer.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 40};

    @TempDir
    static java.nio.file.Path keysDir;

    /** Plain TCP, and under TLS (the frames then go through the TLS records; strangers meet the TLS handshake). */
    @ParameterizedTest(name = "tls={0}")
    @ValueSource(booleans = {false, true})
    void aLiveJobSurvivesMutatedHandshakesHellosAndFrames(boolean tls) throws Exception {
        long seed = Long.getLong("hcomm.fuzz.seed", System.nanoTime());
        long seconds = Long.getLong("hcomm.fuzz.seconds", tls ? CI_SECONDS / 2 : CI_SECONDS);
        System.out.println("ProtocolFuzzTest: seed " + seed + " (-Dhcomm.fuzz.seed), " + seconds + " s, tls " + tls);
        Random rnd = new Random(seed);
        ConcurrentLinkedQueue<Throwable> uncaught = new ConcurrentLinkedQueue<>();
        Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
            if (t.getName().startsWith("hcomm")) uncaught.add(e);
        });
        int size = 2 + 2 * SPARE;
        var opts = new TransportOptions(Duration.ofSeconds(60), Duration.ofSeconds(2), Duration.ofNanos(50_000), 64 * 1024, 1 << 20);
        PeerTransport[] ts = new PeerTransport[2];
        Auth auth = tls ? Auth.of(SECRET).withTls(io.hcomm4j.security.TlsContext.of(
                io.hcomm4j.security.JobKeys.create(keysDir.resolve("keys")))) : Auth.of(SECRET);
        InetSocketAddress nowhere = new InetSocketAddress(InetAddress.getLoopbackAddress(), 1); // spare ranks listen nowhere
        InetSocketAddress[] book = new InetSocketAddress[2];
        for (int i = 0; i < 2; i++) {
            ts[i] = PeerTransport.open(i, size, InetAddress.getLoopbackAddress(), auth, TOKEN, opts);
            book[i] = ts[i].listenAddress();
        }
        for (PeerTransport t : ts) t.start(p -> p < 2 ? book[p] : nowhere);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong exchanged = new AtomicLong();
        List<Throwable> jobErrors = new ArrayList<>();
        Thread job = Thread.ofPlatform().name("fuzz-job").start(() -> {
            try {
                exchangeUntil(ts, stop, exchanged, new Random(seed ^ 0x5DEECE66DL));
            } catch (Throwable e) {
                synchronized (jobErrors) {
                    jobErrors.add(e);
                }
            }
        });
        try {
            // the job's own connection is up before the baseline is taken
            while (exchanged.get() == 0 && jobErrors.isEmpty()) Thread.sleep(10);
            long fdsBefore = openDescriptors();
            long heapBefore = usedHeapAfterGc();
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            int[] counts = new int[4];
            int slot = 2;
            while (System.nanoTime() < end && jobErrors.isEmpty()) {
                InetSocketAddress target = book[rnd.nextInt(2)];
                int dst = target == book[0] ? 0 : 1;
                int what = rnd.nextInt(10);
                if (what < 3) {
                    stranger(target, rnd);
                    counts[0]++;
                } else if (what < 6 || slot >= 2 + SPARE) {
                    brokenHello(target, dst, size, auth, rnd);
                    counts[1]++;
                } else {
                    if (member(target, slot++, dst, size, auth, rnd)) counts[2]++;
                    else counts[3]++;
                }
            }
            stop.set(true);
            job.join(60_000);
            synchronized (jobErrors) {
                if (!jobErrors.isEmpty()) throw new AssertionError("the job's exchange failed while the fuzzer ran (seed " + seed + ")", jobErrors.getFirst());
            }
            System.out.printf("ProtocolFuzzTest: %d stranger, %d broken-hello and %d member connections (%d slots taken by a "
                    + "broken hello); the job exchanged %d messages%n", counts[0], counts[1], counts[2], counts[3], exchanged.get());
            assertThat(exchanged.get()).isGreaterThan(0);
            assertThat(counts[2]).as("member sessions the ranks accepted (seed %d)", seed).isGreaterThan(counts[3]);
            assertThat(ts[0].transportTo(1)).as("the real ranks' link (seed %d)", seed).isEqualTo(tls ? "tls" : "tcp");
            assertThat(ts[1].transportTo(0)).as("the real ranks' link (seed %d)", seed).isEqualTo(tls ? "tls" : "tcp");
            assertThat(uncaught).as("uncaught exceptions in library threads (seed %d)", seed).isEmpty();
            // every connection the fuzzer opened is closed on both sides once the handshake deadlines passed
            long deadline = System.nanoTime() + 30_000_000_000L;
            long fds = openDescriptors();
            while (fds > fdsBefore + 16 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                fds = openDescriptors();
            }
            assertThat(fds).as("open descriptors after the fuzzing (before: %d; seed %d)", fdsBefore, seed).isLessThanOrEqualTo(fdsBefore + 16);
            long heap = usedHeapAfterGc();
            System.out.printf("ProtocolFuzzTest: descriptors %d -> %d, heap %d -> %d MiB%n", fdsBefore, fds, heapBefore >> 20, heap >> 20);
            assertThat(heap).as("heap after the fuzzing (before: %d MiB; seed %d)", heapBefore >> 20, seed).isLessThan(heapBefore + (256L << 20));
        } finally {
            stop.set(true);
            job.join(60_000);
            for (PeerTransport t : ts) t.close();
            Thread.setDefaultUncaughtExceptionHandler(before);
        }
    }

    /** Ranks 0 and 1 send each other seeded messages of several sizes, each checked byte by byte, until {@code stop}. */
    private static void exchangeUntil(PeerTransport[] ts, AtomicBoolean stop, AtomicLong exchanged, Random rnd) throws Exception {
        long[] sizes = {0, 8, 4096, 70_000, 1 << 20};
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] out = new MemorySegment[2];
            MemorySegment[] in = new MemorySegment[2];
            for (int i = 0; i < 2; i++) {
                out[i] = arena.allocate(1 << 20);
                in[i] = arena.allocate(1 << 20);
            }
            int round = 0;
            while (!stop.get()) {
                long n = sizes[round++ % sizes.length];
                for (int i = 0; i < 2; i++) {
                    byte[] b = new byte[(int) n];
                    rnd.nextBytes(b);
                    MemorySegment.copy(MemorySegment.ofArray(b), 0, out[i], 0, n);
                }
                var r0 = ts[0].recv(0, 1, 9, in[0].asSlice(0, n));
                var r1 = ts[1].recv(0, 0, 9, in[1].asSlice(0, n));
                ts[0].send(0, 1, 9, out[0].asSlice(0, n)).await();
                ts[1].send(0, 0, 9, out[1].asSlice(0, n)).await();
                assertThat(r0.await().bytes()).isEqualTo(n);
                assertThat(r1.await().bytes()).isEqualTo(n);
                assertThat(in[0].asSlice(0, n).mismatch(out[1].asSlice(0, n))).isEqualTo(-1);
                assertThat(in[1].asSlice(0, n).mismatch(out[0].asSlice(0, n))).isEqualTo(-1);
                exchanged.addAndGet(2);
            }
        }
    }

    /** Someone without the secret: random bytes, or the start of a proof with random parts. */
    private static void stranger(InetSocketAddress target, Random rnd) throws IOException {
        try (SocketChannel ch = SocketChannel.open(target)) {
            ch.socket().setSoTimeout(100);
            byte[] b;
            if (rnd.nextBoolean()) {
                b = new byte[rnd.nextInt(200)];
                rnd.nextBytes(b);
                // a TLS record header (handshake, TLS 1.2 on the wire) with a random length, then random bytes
                if (b.length >= 5 && rnd.nextBoolean()) ByteBuffer.wrap(b).put((byte) 22).put((byte) 3).put((byte) 3).putShort((short) rnd.nextInt(1 << 16));
            } else {
                // "HCMA", a nonce and a MAC of the right sizes, wrong content; sometimes cut short
                ByteBuffer r = ByteBuffer.allocate(4 + 32 + 32).putInt(0x48434D41);
                byte[] rest = new byte[64];
                rnd.nextBytes(rest);
                r.put(rest);
                b = java.util.Arrays.copyOf(r.array(), rnd.nextInt(3) == 0 ? rnd.nextInt(68) : 68);
            }
            if (rnd.nextBoolean()) drain(ch.socket().getInputStream(), 38); // read the acceptor's challenge first, or not
            ch.write(ByteBuffer.wrap(b));
            drain(ch.socket().getInputStream(), 4096);
        } catch (IOException expected) {
            // refused: what a stranger gets
        }
    }

    /** A holder of the secret whose hello is broken: fields set to edge values, bytes flipped, cut short. */
    private static void brokenHello(InetSocketAddress target, int dst, int size, Auth auth, Random rnd) throws IOException {
        try (SocketChannel ch = SocketChannel.open(target)) {
            Wire w = auth.connect(ch, Auth.DATA, Duration.ofSeconds(5));
            ByteBuffer h = hello(2 + SPARE + rnd.nextInt(SPARE), dst, size, rnd.nextInt(4) == 0 ? "hcomm-x-ring" : "");
            int mutations = 1 + rnd.nextInt(3);
            for (int i = 0; i < mutations && h.limit() > 0; i++) {
                int at = rnd.nextInt(h.limit());
                switch (rnd.nextInt(4)) {
                    case 0 -> h.put(at, (byte) rnd.nextInt(256));
                    case 1 -> { if (at + 4 <= h.limit()) h.putInt(at, (int) EDGES[rnd.nextInt(EDGES.length)]); }
                    case 2 -> { if (at + 8 <= h.limit()) h.putLong(at, EDGES[rnd.nextInt(EDGES.length)]); }
                    default -> h.limit(at); // cut short
                }
            }
            w.readTimeout(100);
            w.write(h);
            drain(w.in(), 4096);
        } catch (IOException refusedOrClosed) {
            // what a broken hello gets
        }
    }

    /**
     * A member: the valid hello of spare rank {@code slot}, then a burst of frames that start valid and get mutated. Only
     * the claims a member may make about itself are left out (that another rank failed, that a communicator the real
     * ranks use was aborted: the job believes its members by design, docs/reliability.md "Security").
     */
    private static boolean member(InetSocketAddress target, int slot, int dst, int size, Auth auth, Random rnd) throws IOException {
        try (SocketChannel ch = SocketChannel.open(target)) {
            Wire w = auth.connect(ch, Auth.DATA, Duration.ofSeconds(5));
            w.write(hello(slot, dst, size, ""));
            w.readTimeout(2000);
            HelloDescriptor.Answer a = HelloDescriptor.readAnswer(w.in(), dst);
            // a broken hello whose mutated rank came out as this slot may have taken it: then this one is turned down
            if (a.code() != HelloDescriptor.ACCEPT) return false;
            ByteBuffer frames = frames(slot, rnd);
            w.write(frames);
            w.readTimeout(50 + rnd.nextInt(100));
            drain(w.in(), 1 << 20);
        } catch (IOException closedByTheRank) {
            // a rank that saw a broken frame closes the link: expected
        }
        return true;
    }

    private static ByteBuffer hello(int src, int dst, int size, String ring) {
        byte[] name = ring.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        ByteBuffer h = ByteBuffer.allocate(HelloDescriptor.FIXED_LENGTH + HelloDescriptor.OFFER_LENGTH + name.length
                + HelloDescriptor.RESUME_LENGTH);
        h.putInt(HelloDescriptor.MAGIC).putInt(src).putInt(dst).putInt(size).putLong(TOKEN).putLong(64 * 1024);
        h.putInt(name.length == 0 ? 0 : HelloDescriptor.RING_OFFERED).putShort((short) name.length).put(name);
        h.putInt(0).putLong(0).putLong(0);
        return h.flip();
    }

    /** 1-16 frames of spare rank {@code src}, each valid as made, then fields mutated to edge values; maybe cut short. */
    private static ByteBuffer frames(int src, Random rnd) {
        ByteBuffer b = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
        int n = 1 + rnd.nextInt(16);
        long seq = 1;
        for (int i = 0; i < n && b.remaining() > 128 * 1024; i++) {
            byte type = FRAME_TYPES[rnd.nextInt(FRAME_TYPES.length)];
            int flags = 0;
            long commId = rnd.nextInt(3);
            int tag = rnd.nextInt(4);
            int from = src;
            long length = switch (type) {
                case Frame.EAGER, Frame.RMA -> rnd.nextInt(2048);
                case Frame.RTS -> 1 + rnd.nextInt(4 << 20);
                case Frame.DATA, Frame.DATA_PART -> rnd.nextInt(4096);
                case Frame.ECHO -> Frame.ECHO_BYTES;
                case Frame.CREDIT -> rnd.nextInt(1 << 16);
                default -> 0;
            };
            long msgId = rnd.nextInt(8);
            long ack = 0;
            if (type == Frame.FAILED) tag = src; // only about itself
            if (type == Frame.ABORT) {
                tag = src;
                commId = 1000 + rnd.nextInt(1000); // a communicator the real ranks do not use
            }
            long s = seq++;
            int mutations = rnd.nextInt(3) == 0 ? 0 : 1 + rnd.nextInt(3);
            for (int m = 0; m < mutations; m++) {
                long edge = EDGES[rnd.nextInt(EDGES.length)];
                switch (rnd.nextInt(8)) {
                    case 0 -> type = (byte) rnd.nextInt(256);
                    case 1 -> flags = (int) edge;
                    case 2 -> s = edge;
                    case 3 -> ack = edge;
                    case 4 -> length = edge;
                    case 5 -> msgId = edge;
                    case 6 -> from = (int) edge;
                    default -> tag = (int) edge;
                }
            }
            if ((type == Frame.FAILED || type == Frame.ABORT) && tag != src) type = Frame.HEARTBEAT;
            if (type == Frame.ABORT && commId < 1000) commId = 1000;
            Frame.encode(b, type, flags, s, ack, commId, tag, from, length, msgId);
            int payload = (int) Math.min(Math.max(0, length), Math.min(64 * 1024, b.remaining() - 1024));
            if (rnd.nextInt(4) == 0) payload = rnd.nextInt(payload + 1); // less than announced
            byte[] p = new byte[payload];
            rnd.nextBytes(p);
            b.put(p);
        }
        b.flip();
        if (rnd.nextInt(4) == 0) b.limit(rnd.nextInt(b.limit() + 1));
        return b;
    }

    /** Reads what comes until the peer closes or is quiet for the socket's timeout (at most {@code max} bytes). */
    private static void drain(InputStream in, int max) {
        byte[] sink = new byte[4096];
        int got = 0;
        try {
            while (got < max) {
                int n = in.read(sink);
                if (n < 0) return;
                got += n;
            }
        } catch (IOException quietOrClosed) {
            // the timeout or a reset: enough
        }
    }

    private static long openDescriptors() {
        return ((UnixOperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getOpenFileDescriptorCount();
    }

    private static long usedHeapAfterGc() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
