package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.Status;
import io.hcomm4j.security.Auth;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class TransportSmokeTest {
    static PeerTransport[] job(int n) throws Exception {
        return job(n, null);
    }

    /** {@code shmDir} non-null: every pair talks through shared-memory rings in it. */
    static PeerTransport[] job(int n, java.nio.file.Path shmDir) throws Exception {
        return job(n, shmDir, new TransportOptions(Duration.ofSeconds(20), Duration.ofSeconds(10), Duration.ofNanos(50_000), 64 * 1024, 64 << 20));
    }

    /** As {@link #job(int, java.nio.file.Path)} with the given options. */
    static PeerTransport[] job(int n, java.nio.file.Path shmDir, TransportOptions opts) throws Exception {
        PeerTransport[] ts = new PeerTransport[n];
        InetSocketAddress[] book = new InetSocketAddress[n];
        for (int i = 0; i < n; i++) {
            ts[i] = PeerTransport.open(i, n, InetAddress.getLoopbackAddress(), Auth.of("transport-test-secret"), 42, opts);
            book[i] = ts[i].listenAddress();
        }
        for (PeerTransport t : ts) {
            if (shmDir != null) t.enableShm(new ShmOptions(shmDir, 1 << 20, p -> true, null));
            t.start(p -> book[p]);
        }
        return ts;
    }

    @Test
    void pingPongAndLarge() throws Exception {
        pingPongAndLarge(job(2), "tcp");
    }

    @Test
    void pingPongAndLargeOverSharedMemory() throws Exception {
        pingPongAndLarge(job(2, java.nio.file.Path.of("/dev/shm")), "shm");
    }

    private static void pingPongAndLarge(PeerTransport[] ts, String kind) throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = null, dst = null;
            for (long size : new long[] {0, 1, 4095, 4096, 65536, 65537, (1 << 20) + 7, 64L << 20}) {
                src = arena.allocate(Math.max(1, size));
                dst = arena.allocate(Math.max(1, size));
                for (long i = 0; i < size; i++) src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + size));
                MemorySegment s = src.asSlice(0, size);
                var r = ts[1].recv(0, 0, 5, dst);
                var w = ts[0].send(0, 1, 5, s);
                w.await();
                Status st = r.await();
                assertThat(st.bytes()).isEqualTo(size);
                assertThat(st.source()).isEqualTo(0);
                assertThat(dst.asSlice(0, size).mismatch(s)).isEqualTo(-1);
                assertThat(ts[0].transportTo(1)).isEqualTo(kind);
                assertThat(ts[1].transportTo(0)).isEqualTo(kind);
            }
            // latency
            MemorySegment a = arena.allocate(8), b = arena.allocate(8);
            Thread echo = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 20000; i++) {
                    ts[1].recv(0, 0, 1, b).await();
                    ts[1].send(0, 0, 1, b).await();
                }
            });
            long t0 = 0;
            for (int i = 0; i < 20000; i++) {
                if (i == 10000) t0 = System.nanoTime();
                ts[0].send(0, 1, 1, a).await();
                ts[0].recv(0, 1, 1, a).await();
            }
            long t1 = System.nanoTime();
            echo.join();
            System.out.printf(kind + " pingpong 8B half-rtt %.2f us%n", (t1 - t0) / 10000.0 / 2 / 1000);
            // the last size's buffers, 64 MiB each: fresh ones cost page faults, tens of µs a page on these VMs
            MemorySegment big = src, big2 = dst;
            for (int rep = 0; rep < 6; rep++) {
                long s0 = System.nanoTime();
                var rr = ts[1].recv(0, 0, 9, big2);
                ts[0].send(0, 1, 9, big).await();
                rr.await();
                System.out.printf(kind + " 64MiB one-way %.2f GB/s%n", (64 << 20) / ((System.nanoTime() - s0) / 1e9) / 1e9);
            }
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }
}
