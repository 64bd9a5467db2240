package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.HcommException;
import io.hcomm4j.Status;
import io.hcomm4j.memory.Buffer;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.security.Auth;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Large messages from registered buffers between two transports over shared memory: the receiver reads them in place
 * (DATA_REF, one copy); other buffers stream through the ring. Every byte is checked.
 */
class ShmOneCopyTest {
    private Path dir;
    private MemoryPool[] pools;
    private PeerTransport[] ts;

    @BeforeEach
    void start() throws Exception {
        dir = Files.createDirectory(Path.of("/dev/shm", "hcomm-onecopy-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime()));
        pools = new MemoryPool[2];
        ts = new PeerTransport[2];
        InetSocketAddress[] book = new InetSocketAddress[2];
        var opts = new TransportOptions(Duration.ofSeconds(20), Duration.ofSeconds(10), Duration.ofNanos(50_000), 64 * 1024, 64 << 20);
        for (int i = 0; i < 2; i++) {
            pools[i] = MemoryPool.open(new MemoryPool.Options(dir, 1L << 30, false));
            ts[i] = PeerTransport.open(i, 2, InetAddress.getLoopbackAddress(), Auth.of("transport-test-secret"), 42, opts);
            book[i] = ts[i].listenAddress();
        }
        for (int i = 0; i < 2; i++) {
            ts[i].enableShm(new ShmOptions(dir, 64 * 1024, p -> true, pools[i]));
            ts[i].start(p -> book[p]);
        }
    }

    @AfterEach
    void stop() throws Exception {
        for (PeerTransport t : ts) t.close();
        for (MemoryPool p : pools) p.close();
        try (Stream<Path> s = Files.list(dir)) {
            assertThat(s.toList()).as("files left in the shm dir").isEmpty();
        }
        Files.delete(dir);
    }

    static void fill(MemorySegment s, long seed) {
        for (long i = 0; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 131 + seed));
    }

    static void check(MemorySegment s, long n, long seed) {
        for (long i = 0; i < n; i++) {
            byte b = s.get(ValueLayout.JAVA_BYTE, i);
            if (b != (byte) (i * 131 + seed)) throw new AssertionError("byte " + i + " of " + n + " is " + b);
        }
    }

    @Test
    void registeredBuffersAreReadInPlace() throws Exception {
        long[] sizes = {(64 << 10) + 1, (1 << 20) + 7, 16L << 20};
        try (Arena arena = Arena.ofShared()) {
            for (long size : sizes) {
                for (boolean heapDest : new boolean[] {false, true}) {
                    try (Buffer buf = pools[0].allocate(size + 100)) {
                        // a slice at an odd offset of a registered buffer is registered too
                        MemorySegment src = buf.segment().asSlice(3, size);
                        fill(src, size);
                        MemorySegment dst = heapDest ? MemorySegment.ofArray(new byte[(int) size + 5]) : arena.allocate(size + 5);
                        long before = ts[0].rendezvous.oneCopySends.get();
                        var r = ts[1].recv(0, 0, 7, dst);
                        ts[0].send(0, 1, 7, src).await();
                        Status st = r.await();
                        assertThat(st.bytes()).isEqualTo(size);
                        check(dst, size, size);
                        assertThat(ts[0].rendezvous.oneCopySends.get()).as("sent in place").isEqualTo(before + 1);
                    }
                }
            }
            // unregistered off-heap and heap buffers stream through the 64 KiB ring (many wrap-arounds)
            for (MemorySegment src : new MemorySegment[] {arena.allocate((3 << 20) + 11), MemorySegment.ofArray(new byte[(3 << 20) + 13])}) {
                fill(src, 5);
                MemorySegment dst = arena.allocate(src.byteSize());
                long before = ts[0].rendezvous.oneCopySends.get();
                var r = ts[1].recv(0, 0, 8, dst);
                ts[0].send(0, 1, 8, src).await();
                assertThat(r.await().bytes()).isEqualTo(src.byteSize());
                check(dst, src.byteSize(), 5);
                assertThat(ts[0].rendezvous.oneCopySends.get()).isEqualTo(before);
            }
        }
        assertThat(ts[0].transportTo(1)).isEqualTo("shm");
    }

    @Test
    void registeredMessageToATooSmallBufferIsRefused() throws Exception {
        try (Buffer buf = pools[0].allocate(1 << 20)) {
            var r = ts[1].recv(0, 0, 3, MemorySegment.ofArray(new byte[1000]));
            var s = ts[0].send(0, 1, 3, buf.segment());
            assertThatThrownBy(r::await).isInstanceOf(io.hcomm4j.MessageTruncatedException.class).hasMessageContaining("smaller than the message");
            s.await();
            // the link still works: the same buffer goes in place afterwards
            fill(buf.segment(), 9);
            MemorySegment dst = MemorySegment.ofArray(new byte[1 << 20]);
            var r2 = ts[1].recv(0, 0, 4, dst);
            ts[0].send(0, 1, 4, buf.segment()).await();
            r2.await();
            check(dst, 1 << 20, 9);
        }
    }

    @Test
    void aFileThePeerCannotMapFailsBothSides() throws Exception {
        try (Buffer buf = pools[0].allocate(1 << 20)) {
            Files.delete(pools[0].lookup(buf.segment()).orElseThrow().file()); // the mapping stays, the name is gone
            var r = ts[1].recv(0, 0, 3, MemorySegment.ofArray(new byte[1 << 20]));
            var s = ts[0].send(0, 1, 3, buf.segment());
            assertThatThrownBy(s::await).isInstanceOf(HcommException.class).hasMessageContaining("could not map this buffer");
            assertThatThrownBy(r::await).isInstanceOf(HcommException.class).hasMessageContaining("cannot map the buffer of rank 0");
            // the link goes on
            var r2 = ts[1].recv(0, 0, 4, MemorySegment.ofArray(new byte[8]));
            ts[0].send(0, 1, 4, MemorySegment.ofArray(new byte[8])).await();
            assertThat(r2.await().bytes()).isEqualTo(8);
        }
    }
}
