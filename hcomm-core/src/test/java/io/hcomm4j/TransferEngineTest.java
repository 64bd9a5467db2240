package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.bootstrap.TcpStoreServer;
import io.hcomm4j.testing.Engines;
import io.hcomm4j.testing.ShmDir;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Transfer engines that are threads of this JVM (each its own engine: own transport, listener, pool), over real sockets
 * and shared memory, on a store this test serves: the paths (pool segments copied in place, other segments through the
 * remote's progress engine, TCP), descriptors handed over out of band, notifications, and every kind of bad input with
 * the exception that names it. The multi-process tests are in {@link TransferEngineProcessTest}.
 */
class TransferEngineTest {
    private static final Duration T = Duration.ofSeconds(30);
    @RegisterExtension
    final ShmDir shm = new ShmDir("hcomm-xfer-test-");
    private TcpStoreServer store;
    private final List<TransferEngine> engines = new ArrayList<>();
    private final Arena arena = Arena.ofShared();

    @BeforeEach
    void serveStore() {
        store = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "test-job-secret-0001");
    }

    @AfterEach
    void closeAll() {
        for (TransferEngine e : engines) e.close();
        store.close();
        arena.close();
        shm.assertEmpty();
    }

    private TransferEngine engine(String name, String transport) {
        TransferEngine e = TransferEngine.start(Engines.config(name, store.address().getPort(), transport, shm.path().toString()));
        engines.add(e);
        return e;
    }

    private MemorySegment filled(long bytes, long seed) {
        MemorySegment s = arena.allocate(Math.max(bytes, 1), 8).asSlice(0, bytes);
        Engines.fill(s, 0, bytes, seed, 0);
        return s;
    }

    /** Both ways, through a pool segment (mapped on shm) and a plain one (the remote's progress engine), 0 B to 9 MiB. */
    @ParameterizedTest
    @ValueSource(strings = {"auto", "tcp"})
    void writesAndReadsEveryPathByteForByte(String transport) {
        TransferEngine a = engine("a", transport);
        TransferEngine b = engine("b", transport);
        long size = 10 << 20;
        RegisteredBuffer pooled = b.memory().allocate(size);
        MemorySegment plain = arena.allocate(size, 4096);
        Engines.fill(pooled.segment(), 0, size, 11, 0);
        Engines.fill(plain, 0, size, 12, 0);
        SegmentDescriptor dp = b.register(pooled.segment(), "pooled");
        SegmentDescriptor dq = b.register(plain, "plain");
        if (transport.equals("tcp")) assertThat(dp.fileSequence()).isEqualTo(-1);
        else assertThat(dp.fileSequence()).isGreaterThanOrEqualTo(0);
        assertThat(dq.fileSequence()).isEqualTo(-1);
        RemoteEngine rb = a.connect("b", T);
        assertThat(rb).isEqualTo(new RemoteEngine("b", b.id()));
        assertThat(a.transportTo(rb)).isEqualTo(transport.equals("tcp") ? "tcp" : "shm");
        for (long len : new long[] {0, 1, 7, 4096, 65537, 4 << 20, (4 << 20) + 3, 9 << 20}) {
            for (String seg : new String[] {"pooled", "plain"}) {
                long seed = seg.equals("pooled") ? 11 : 12;
                long off = (len * 31) % (size - len + 1);
                MemorySegment into = arena.allocate(Math.max(len, 1)).asSlice(0, len);
                TransferBatch r = a.transfer(rb, List.of(TransferOp.read(into, 0, seg, off, len)));
                assertThat(r.status()).as("%s read %d", seg, len).isEqualTo(TransferStatus.COMPLETED);
                assertThat(r.bytesTransferred()).isEqualTo(len);
                assertThat(Engines.mismatch(into, 0, len, seed, off)).as("%s read %d", seg, len).isEqualTo(-1);
                MemorySegment from = filled(len, 100 + len);
                TransferBatch w = a.transfer(rb, List.of(TransferOp.write(from, 0, seg, off, len)));
                assertThat(w.status()).as("%s write %d", seg, len).isEqualTo(TransferStatus.COMPLETED);
                MemorySegment target = seg.equals("pooled") ? pooled.segment() : plain;
                assertThat(Engines.mismatch(target, off, len, 100 + len, 0)).as("%s write %d", seg, len).isEqualTo(-1);
                Engines.fill(target, off, len, seed, off); // as before, for the next reads
            }
        }
        pooled.close();
    }

    /** A descriptor handed over as text is all the other engine needs; heap memory works on the origin's side. */
    @Test
    void aDescriptorHandedOverOutOfBandIsEnough() {
        TransferEngine a = engine("a", "auto");
        TransferEngine b = engine("b", "auto");
        MemorySegment seg = arena.allocate(1 << 20, 8);
        String text = b.register(seg, "kv").toText();
        SegmentDescriptor d = SegmentDescriptor.fromText(text);
        assertThat(SegmentDescriptor.fromBytes(d.toBytes())).isEqualTo(d);
        RemoteEngine rb = a.connect(d, T);
        byte[] heap = new byte[5000];
        for (int i = 0; i < heap.length; i++) heap[i] = (byte) (i * 7);
        assertThat(a.transfer(rb, List.of(TransferOp.write(MemorySegment.ofArray(heap), 0, "kv", 100, heap.length))).status())
                .isEqualTo(TransferStatus.COMPLETED);
        for (int i = 0; i < heap.length; i++) assertThat(seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 100 + i)).isEqualTo(heap[i]);
        byte[] back = new byte[5000];
        assertThat(a.transfer(rb, List.of(TransferOp.read(MemorySegment.ofArray(back), 0, "kv", 100, back.length))).status())
                .isEqualTo(TransferStatus.COMPLETED);
        assertThat(back).isEqualTo(heap);
    }

    /** An engine transfers to its own segments too (plain copies, no connection), pool or not. */
    @Test
    void transfersToItselfAreCopies() {
        TransferEngine a = engine("a", "auto");
        MemorySegment plain = filled(1 << 20, 3);
        RegisteredBuffer pooled = a.memory().allocate(1 << 20);
        Engines.fill(pooled.segment(), 0, 1 << 20, 4, 0);
        a.register(plain, "plain");
        a.register(pooled.segment(), "pooled");
        RemoteEngine self = a.connect("a", T);
        assertThat(self.id()).isEqualTo(a.id());
        MemorySegment into = arena.allocate(2 << 20);
        TransferBatch b = a.transfer(self, List.of(TransferOp.read(into, 0, "plain", 10, 1000), TransferOp.read(into, 1 << 20, "pooled", 20, 1 << 19),
                TransferOp.write(into, 0, "pooled", 600_000, 1000)));
        assertThat(b.status()).isEqualTo(TransferStatus.COMPLETED);
        assertThat(b.bytesTransferred()).isEqualTo(2000 + (1 << 19));
        assertThat(Engines.mismatch(into, 0, 1000, 3, 10)).isEqualTo(-1);
        assertThat(Engines.mismatch(into, 1 << 20, 1 << 19, 4, 20)).isEqualTo(-1);
        assertThat(Engines.mismatch(pooled.segment(), 600_000, 1000, 3, 10)).isEqualTo(-1);
        pooled.close();
    }

    /** A descriptor of another job's engine (another address under an id the store knows) is refused, naming both. */
    @Test
    void aDescriptorOfAnotherJobIsRefused() {
        TransferEngine a = engine("a", "auto");
        TransferEngine b = engine("b", "auto");
        SegmentDescriptor d = b.register(arena.allocate(64), "s");
        SegmentDescriptor forged = new SegmentDescriptor("x", d.engineId(), "127.0.0.1", 1, d.hostId(), "s", 1, 64, -1, 0);
        assertThatThrownBy(() -> a.connect(forged, T)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("another job").hasMessageContaining("'b'");
        SegmentDescriptor beyond = new SegmentDescriptor("x", TransferConfig.DEFAULT_SLOTS, "127.0.0.1", 1, d.hostId(), "s", 1, 64, -1, 0);
        assertThatThrownBy(() -> a.connect(beyond, T)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("slots");
    }

    /**
     * The data connections authenticate like the communicators': an engine of a job with another secret (its own store)
     * that holds a descriptor is refused in the handshake; one with the secret but of another job (another store, so
     * another job token) is refused in the hello. The engine they tried still serves its own job.
     */
    @Test
    void enginesOfAnotherSecretOrJobCannotConnect() {
        TransferEngine a = engine("a", "auto");
        TransferEngine b = engine("b", "auto");
        MemorySegment seg = filled(4096, 9);
        SegmentDescriptor d = b.register(seg, "s");
        for (String secret : new String[] {"another-job-secret-1", "test-job-secret-0001"}) {
            try (TcpStoreServer other = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), secret)) {
                CommConfig c = CommConfig.builder().initMethod("tcp://127.0.0.1:" + other.address().getPort()).secret(secret)
                        .timeout(Duration.ofSeconds(5)).initTimeout(Duration.ofSeconds(3)).shmDir(shm.path().toString()).build();
                try (TransferEngine stranger = TransferEngine.start(c)) {
                    assertThat(stranger.id()).isZero(); // the first engine of its store: b's id is free there
                    assertThat(stranger.name()).isEqualTo("engine-0");
                    var thrown = assertThatThrownBy(() -> stranger.connect(d, Duration.ofSeconds(3))).isInstanceOf(HcommException.class);
                    if (secret.equals("another-job-secret-1")) thrown.hasMessageContaining("authentication");
                    else thrown.isInstanceOf(PeerFailedException.class);
                }
            }
        }
        RemoteEngine rb = a.connect("b", T);
        MemorySegment into = arena.allocate(4096);
        assertThat(a.transfer(rb, List.of(TransferOp.read(into, 0, "s", 0, 4096))).status()).isEqualTo(TransferStatus.COMPLETED);
        assertThat(Engines.mismatch(into, 0, 4096, 9, 0)).isEqualTo(-1);
    }

    /** Notifications arrive once each, in order per sender; to oneself too. */
    @Test
    void notificationsArriveOnceInOrder() throws Exception {
        TransferEngine a = engine("a", "auto");
        TransferEngine b = engine("b", "tcp");
        TransferEngine c = engine("c", "auto");
        RemoteEngine toC = a.connect("c", T);
        RemoteEngine fromB = b.connect("c", T);
        RemoteEngine self = c.connect("c", T);
        assertThat(c.transportTo(self)).isEqualTo("self");
        int n = 500;
        Thread tb = Thread.ofPlatform().start(() -> {
            for (int i = 0; i < n; i++) b.notify(fromB, "n", ("b" + i).getBytes(StandardCharsets.UTF_8));
        });
        for (int i = 0; i < n; i++) a.notify(toC, "n", ("a" + i).getBytes(StandardCharsets.UTF_8));
        c.notify(self, "me", new byte[0]);
        tb.join();
        List<Notification> got = new ArrayList<>();
        long deadline = System.nanoTime() + T.toNanos();
        while (got.size() < 2 * n + 1 && System.nanoTime() < deadline) {
            got.addAll(c.drainNotifies());
            Thread.sleep(5);
        }
        int ia = 0;
        int ib = 0;
        int self0 = 0;
        for (Notification x : got) {
            String s = new String(x.bytes(), StandardCharsets.UTF_8);
            switch (x.from()) {
                case "a" -> assertThat(s).isEqualTo("a" + ia++);
                case "b" -> assertThat(s).isEqualTo("b" + ib++);
                default -> {
                    assertThat(x.name()).isEqualTo("me");
                    self0++;
                }
            }
        }
        assertThat(ia).isEqualTo(n);
        assertThat(ib).isEqualTo(n);
        assertThat(self0).isEqualTo(1);
        assertThat(c.drainNotifies()).isEmpty();
    }

    @Test
    void badInputThrowsNamingTheArgument() {
        TransferEngine a = engine("a", "auto");
        TransferEngine b = engine("b", "auto");
        MemorySegment seg = arena.allocate(4096, 8);
        b.register(seg, "s");
        RemoteEngine rb = a.connect("b", T);
        MemorySegment local = arena.allocate(100, 8);
        assertThatThrownBy(() -> a.transfer(rb, List.of(TransferOp.read(local, 0, "nope", 0, 10))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ops[0]").hasMessageContaining("remoteSegment 'nope'");
        assertThatThrownBy(() -> a.transfer(rb, List.of(TransferOp.read(local, 0, "s", 0, 10), TransferOp.read(local, 0, "s", 4090, 10))))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("ops[1]").hasMessageContaining("remoteOffset 4090")
                .hasMessageContaining("4096 bytes");
        assertThatThrownBy(() -> a.transfer(rb, List.of(TransferOp.write(local, 95, "s", 0, 10))))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("ops[0]").hasMessageContaining("localOffset 95");
        assertThatThrownBy(() -> a.transfer(rb, List.of(TransferOp.write(local, 0, "s", -1, 10))))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("remoteOffset -1");
        assertThatThrownBy(() -> a.transfer(rb, List.of(TransferOp.write(local, 0, "s", 0, -1))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("length -1");
        assertThatThrownBy(() -> a.transfer(rb, List.of(TransferOp.read(local.asReadOnly(), 0, "s", 0, 10))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("read-only");
        try (Arena confined = Arena.ofConfined()) {
            MemorySegment mine = confined.allocate(16);
            assertThatThrownBy(() -> a.transfer(rb, List.of(TransferOp.write(mine, 0, "s", 0, 16))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("confined");
            assertThatThrownBy(() -> b.register(mine, "mine")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("confined");
        }
        assertThatThrownBy(() -> a.transfer(new RemoteEngine("b", 999), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not connected");
        assertThatThrownBy(() -> a.transfer(rb, List.of(), Duration.ZERO)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
        assertThatThrownBy(() -> b.register(seg, "s")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'s' is registered already");
        assertThatThrownBy(() -> b.register(seg, "a b")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name 'a b'");
        assertThatThrownBy(() -> b.register(seg.asReadOnly(), "ro")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("read-only");
        assertThatThrownBy(() -> b.unregister("nope")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name 'nope'");
        assertThatThrownBy(() -> a.notify(rb, "n", new byte[TransferEngine.MAX_NOTIFY_BYTES + 1]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bytes");
        assertThatThrownBy(() -> a.connect("nobody", Duration.ofMillis(300))).isInstanceOf(CommTimeoutException.class).hasMessageContaining("'nobody'");
        assertThatThrownBy(() -> SegmentDescriptor.fromText("hxfer1:AAAA")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SegmentDescriptor.fromText("garbage")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("hxfer1:");
        // the engine that got bad input still works
        assertThat(a.transfer(rb, List.of(TransferOp.read(local, 0, "s", 0, 100))).status()).isEqualTo(TransferStatus.COMPLETED);
        a.close();
        assertThatThrownBy(() -> a.transfer(rb, List.of())).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> a.register(seg, "x")).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> a.connect("b", T)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> a.notify(rb, "n", new byte[1])).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    /** A segment unregistered after the origin learnt it: the remote refuses, the batch FAILS naming it, the next lookup fails. */
    @ParameterizedTest
    @ValueSource(strings = {"auto", "tcp"})
    void anUnregisteredSegmentFailsTheBatch(String transport) {
        TransferEngine a = engine("a", transport);
        TransferEngine b = engine("b", transport);
        MemorySegment seg = arena.allocate(1 << 20, 8);
        b.register(seg, "s");
        RemoteEngine rb = a.connect("b", T);
        MemorySegment local = filled(1000, 5);
        assertThat(a.transfer(rb, List.of(TransferOp.write(local, 0, "s", 0, 1000))).status()).isEqualTo(TransferStatus.COMPLETED);
        for (TransferOp.Kind kind : TransferOp.Kind.values()) {
            String name = "s-" + kind;
            b.register(seg, name);
            TransferOp op = new TransferOp(kind, local, 0, name, 0, 1000);
            assertThat(a.transfer(rb, List.of(op)).status()).isEqualTo(TransferStatus.COMPLETED); // a learns the descriptor
            b.unregister(name);
            TransferBatch x = a.transfer(rb, List.of(op));
            assertThat(x.status()).as(kind.name()).isEqualTo(TransferStatus.FAILED);
            assertThat(x.error().orElseThrow()).hasMessageContaining("refused").hasMessageContaining("no such segment");
            // the stale descriptor is forgotten: the name is looked up again, and is not there
            assertThatThrownBy(() -> a.transfer(rb, List.of(op)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("remoteSegment '" + name + "'");
        }
    }
}
