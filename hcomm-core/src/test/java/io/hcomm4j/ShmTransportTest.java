package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The shared-memory transport between ranks that are threads of this JVM (each its own session), with a 64 KiB ring so
 * that messages wrap around it at every offset and many are larger than it. Every byte is checked; afterwards the shm
 * directory must be empty.
 */
class ShmTransportTest {
    private static final Duration TIMEOUT = Duration.ofMinutes(2);
    private Path dir;

    @BeforeEach
    void makeDir() throws Exception {
        dir = Files.createDirectory(Path.of("/dev/shm", "hcomm-shm-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime()));
    }

    @AfterEach
    void dirIsEmpty() throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> left = s.toList();
            for (Path p : left) Files.deleteIfExists(p);
            assertThat(left).as("files left in the shm dir").isEmpty();
        } finally {
            Files.deleteIfExists(dir);
        }
    }

    private CommConfig.Builder shm(CommConfig.Builder b) {
        return b.transport(CommConfig.Transport.SHM).shmRingSize(64 * 1024).shmDir(dir.toString());
    }

    static byte pattern(long seed, long i) {
        long x = (i + 1) * 0x9E3779B97F4A7C15L ^ seed * 0xBF58476D1CE4E5B9L;
        return (byte) (x ^ (x >>> 31));
    }

    static void fill(MemorySegment s, long seed) {
        for (long i = 0; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, pattern(seed, i));
    }

    static void check(MemorySegment s, long n, long seed, String what) {
        for (long i = 0; i < n; i++) {
            byte b = s.get(ValueLayout.JAVA_BYTE, i);
            if (b != pattern(seed, i)) throw new AssertionError(what + ": byte " + i + " of " + n + " is " + b + ", expected " + pattern(seed, i));
        }
    }

    /** Every connection is shared memory; then a barrier, so no rank closes (its links) while another still looks. */
    static void allShm(Hcomm h) {
        for (int p = 0; p < h.world().size(); p++) {
            if (p != h.world().rank()) assertThat(h.transportTo(p)).as("rank %d to %d", h.world().rank(), p).isIn("shm", "none");
        }
        h.world().barrier();
    }

    /** Odd sizes both ways at once, eager and rendezvous, heap and off-heap: the 64 KiB ring wraps at every offset. */
    @Test
    void oddSizesWrapTheRingBothWaysAtOnce() throws Exception {
        long[] sizes = {0, 1, 7, 55, 57, 4095, 65_535, 65_536, 65_537, 131_073, 200_003, (1 << 20) + 3, 5_000_011};
        Ranks.runThreads(2, TIMEOUT, this::shm, h -> {
            Communicator c = h.world();
            int me = c.rank(), peer = 1 - me;
            try (Arena arena = Arena.ofShared()) {
                for (int round = 0; round < 3; round++) {
                    for (long size : sizes) {
                        for (boolean heap : new boolean[] {false, true}) {
                            long seedOut = size * 7 + me * 3 + round * 101 + (heap ? 1 : 0);
                            long seedIn = size * 7 + peer * 3 + round * 101 + (heap ? 1 : 0);
                            MemorySegment out = heap ? MemorySegment.ofArray(new byte[(int) size]) : arena.allocate(Math.max(1, size)).asSlice(0, size);
                            MemorySegment in = heap ? MemorySegment.ofArray(new byte[(int) size + 3]) : arena.allocate(size + 3);
                            fill(out, seedOut);
                            in.fill((byte) 0x5A);
                            int tag = (int) (size % 10_000);
                            CommFuture<Status> r = c.recvAsync(in, peer, tag);
                            CommFuture<Void> s = c.sendAsync(out, peer, tag);
                            Status st = r.await();
                            s.await();
                            assertThat(st.bytes()).isEqualTo(size);
                            assertThat(st.source()).isEqualTo(peer);
                            check(in, size, seedIn, "size " + size + (heap ? " heap" : " off-heap"));
                            for (long i = size; i < size + 3; i++) assertThat(in.get(ValueLayout.JAVA_BYTE, i)).isEqualTo((byte) 0x5A);
                        }
                    }
                }
            }
            assertThat(h.transportTo(peer)).isEqualTo("shm");
            allShm(h);
        });
    }

    /** Registered (pool) buffers: large ones are read in place by the receiver, small ones go through the ring. */
    @Test
    void registeredBuffersOfEverySize() throws Exception {
        long[] sizes = {1, 4096, 65_537, (1 << 20) + 1, 9_000_001};
        Ranks.runThreads(2, TIMEOUT, this::shm, h -> {
            Communicator c = h.world();
            int me = c.rank(), peer = 1 - me;
            for (long size : sizes) {
                try (RegisteredBuffer out = c.memory().allocate(size); RegisteredBuffer in = c.memory().allocate(size)) {
                    fill(out.segment(), size + me);
                    byte[] heapIn = new byte[(int) size];
                    // registered → registered, then registered → heap
                    CommFuture<Status> r = c.recvAsync(in.segment(), peer, 1);
                    c.send(out.segment(), peer, 1);
                    assertThat(r.await().bytes()).isEqualTo(size);
                    check(in.segment(), size, size + peer, "registered " + size);
                    CommFuture<Status> r2 = c.recvAsync(heapIn, peer, 2);
                    c.send(out.segment(), peer, 2);
                    assertThat(r2.await().bytes()).isEqualTo(size);
                    check(MemorySegment.ofArray(heapIn), size, size + peer, "registered to heap " + size);
                }
            }
            allShm(h);
        });
    }

    /** Messages that arrive before their receive (eager and rendezvous), 0-byte ones, taken with ANY_SOURCE. */
    @Test
    void unexpectedMessagesFromAnySourceIncludingEmptyOnes() throws Exception {
        int n = 4;
        long[] sizes = {0, 3, 65_535, 300_001};
        Ranks.runThreads(n, TIMEOUT, this::shm, h -> {
            Communicator c = h.world();
            int me = c.rank();
            if (me != 0) {
                List<CommFuture<Void>> sends = new ArrayList<>();
                for (int k = 0; k < sizes.length; k++) {
                    byte[] b = new byte[(int) sizes[k]];
                    fill(MemorySegment.ofArray(b), me * 1000L + k);
                    sends.add(c.sendAsync(b, 0, 40 + k));
                }
                for (CommFuture<Void> s : sends) s.await();
                c.send(new byte[1], 0, 99);
            } else {
                try {
                    Thread.sleep(300); // everything is unexpected by now (the rendezvous ones as their RTS)
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
                boolean[][] seen = new boolean[n][sizes.length];
                for (int m = 0; m < (n - 1) * sizes.length; m++) {
                    byte[] b = new byte[400_000];
                    Status st = c.recv(b, Communicator.ANY_SOURCE, Communicator.ANY_TAG);
                    int k = st.tag() - 40;
                    assertThat(k).isBetween(0, sizes.length - 1);
                    assertThat(st.bytes()).isEqualTo(sizes[k]);
                    assertThat(seen[st.source()][k]).isFalse();
                    seen[st.source()][k] = true;
                    check(MemorySegment.ofArray(b), sizes[k], st.source() * 1000L + k, "from " + st.source() + " tag " + st.tag());
                    // per source, messages come in the order they were sent
                    for (int j = 0; j < k; j++) assertThat(seen[st.source()][j]).isTrue();
                }
                for (int p = 1; p < n; p++) c.recv(new byte[1], p, 99);
            }
            allShm(h);
        });
    }

    /**
     * Messages of one tag keep their order across the three roads (slots up to 32 bytes, eager frames in the ring,
     * rendezvous beyond the ring), both ways at once: every message is sent before the peer posts its receive, so the
     * 64 slots fill up and the rest overflows into the ring, and the eager credit runs out into rendezvous. Every
     * byte of every message is checked, as is its size (which says whether an overtaking one came first).
     */
    @Test
    void oneTagKeepsItsOrderAcrossSlotsRingAndRendezvous() throws Exception {
        int messages = 3000;
        Ranks.runThreads(2, TIMEOUT, this::shm, h -> {
            Communicator c = h.world();
            int me = c.rank(), peer = 1 - me;
            int[] mine = sizes(new Random(11 + me), messages);
            int[] theirs = sizes(new Random(11 + peer), messages);
            List<CommFuture<Void>> sends = new ArrayList<>();
            try (Arena arena = Arena.ofShared()) {
                for (int m = 0; m < messages; m++) {
                    MemorySegment out = m % 2 == 0 ? MemorySegment.ofArray(new byte[mine[m]]) : arena.allocate(Math.max(1, mine[m])).asSlice(0, mine[m]);
                    fill(out, me * 100_000L + m);
                    sends.add(c.sendAsync(out, peer, 7));
                }
                try {
                    Thread.sleep(200); // the peer's sends are unexpected by now
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
                MemorySegment in = arena.allocate(160_000);
                byte[] heapIn = new byte[160_000];
                for (int m = 0; m < messages; m++) {
                    MemorySegment into = m % 3 == 0 ? MemorySegment.ofArray(heapIn) : in;
                    Status st = c.recv(into, peer, 7);
                    assertThat(st.bytes()).as("size of message %d", m).isEqualTo(theirs[m]);
                    check(into, theirs[m], peer * 100_000L + m, "message " + m);
                }
                for (CommFuture<Void> s : sends) s.await();
            }
            allShm(h);
        });
    }

    /** Mostly slot-sized (0-32 bytes), many ring eager ones, a few larger than the ring. */
    private static int[] sizes(Random rnd, int n) {
        int[] sizes = new int[n];
        for (int i = 0; i < n; i++) {
            int kind = rnd.nextInt(20);
            sizes[i] = kind < 11 ? rnd.nextInt(33) : kind < 19 ? 33 + rnd.nextInt(2000) : 70_000 + rnd.nextInt(80_000);
        }
        return sizes;
    }

    /** Several threads per rank send and receive at once on their own tags. */
    @Test
    void concurrentThreadsPerRank() throws Exception {
        int threads = 4, messages = 60;
        Ranks.runThreads(2, TIMEOUT, this::shm, h -> {
            Communicator c = h.world();
            int me = c.rank(), peer = 1 - me;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> fs = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int tag = 100 + t;
                    fs.add(pool.submit((Callable<Void>) () -> {
                        Random rnd = new Random(tag);
                        for (int m = 0; m < messages; m++) {
                            int size = rnd.nextInt(10) == 0 ? 150_000 + rnd.nextInt(100_000) : rnd.nextInt(3000);
                            byte[] out = new byte[size];
                            fill(MemorySegment.ofArray(out), me * 1_000_000L + tag * 1000L + m);
                            byte[] in = new byte[size];
                            CommFuture<Status> r = c.recvAsync(in, peer, tag);
                            c.send(out, peer, tag);
                            assertThat(r.await().bytes()).isEqualTo(size);
                            check(MemorySegment.ofArray(in), size, peer * 1_000_000L + tag * 1000L + m, "thread tag " + tag + " message " + m);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : fs) f.get();
            } catch (Exception e) {
                throw new AssertionError(e);
            } finally {
                pool.shutdownNow();
            }
            allShm(h);
        });
    }

    /**
     * {@code HCOMM_SPIN_TIME=0}: every wait arms the rings and blocks at once, so every message needs a doorbell (the
     * reader sleeping) and every message larger than the 64 KiB ring one the other way too (the writer waiting for
     * room). A lost wake-up shows as a round trip of the selector's 100 ms timeout; a systematic one would hit a large
     * share of the 1500 round trips, while a loaded machine (other builds on these 2 cores) stalls a few of them for
     * as long on its own: so the test counts round trips of 95 ms or more and allows a handful.
     */
    @Test
    void doorbellsWakeEverySleeper() throws Exception {
        Ranks.runThreads(2, TIMEOUT, b -> shm(b).spinTime(Duration.ZERO), h -> {
            Communicator c = h.world();
            int me = c.rank(), peer = 1 - me;
            int stalled = 0;
            for (int i = 0; i < 1500; i++) {
                int size = i % 5 == 4 ? 200_003 : 8;
                byte[] out = new byte[size];
                fill(MemorySegment.ofArray(out), i * 2L + me);
                byte[] in = new byte[size];
                long t0 = System.nanoTime();
                if (me == 0) {
                    c.send(out, peer, 3);
                    c.recv(in, peer, 3);
                } else {
                    c.recv(in, peer, 3);
                    c.send(out, peer, 3);
                }
                if (System.nanoTime() - t0 >= 95_000_000L) stalled++;
                check(MemorySegment.ofArray(in), size, i * 2L + peer, "round trip " + i);
            }
            assertThat(stalled).as("round trips of 95 ms or more (the selector's timeout: a lost wake-up)").isLessThanOrEqualTo(5);
            allShm(h);
        });
    }

    /** auto (the default) picks shared memory on one host; tcp forces TCP; different host ids mean TCP under auto. */
    @Test
    void transportChoice() throws Exception {
        record Case(String name, java.util.function.UnaryOperator<CommConfig.Builder> config, String expect) {
        }
        List<Case> cases = List.of(
                new Case("auto", b -> b.shmDir(dir.toString()), "shm"),
                new Case("tcp", b -> b.shmDir(dir.toString()).transport(CommConfig.Transport.TCP), "tcp"),
                new Case("auto, other hosts", b -> b.shmDir(dir.toString()).hostId("host-" + b.build().rank()), "tcp"),
                new Case("auto, same host id", b -> b.shmDir(dir.toString()).hostId("rack7-node3"), "shm"));
        for (Case k : cases) {
            Ranks.runThreads(3, TIMEOUT, k.config(), h -> {
                Communicator c = h.world();
                float[] v = {c.rank() + 1};
                c.allReduce(v, ReduceOp.SUM);
                assertThat(v[0]).isEqualTo(6f);
                for (int p = 0; p < c.size(); p++) {
                    if (p == c.rank()) continue;
                    // connect every pair, then look
                    CommFuture<Status> r = c.recvAsync(new byte[1], p, 5);
                    c.send(new byte[] {1}, p, 5);
                    r.await();
                    assertThat(h.transportTo(p)).as("%s: rank %d to %d", k.name(), c.rank(), p).isEqualTo(k.expect());
                }
                assertThat(h.transportTo(c.rank())).isEqualTo("self");
                assertThat(h.config().transport()).isEqualTo(k.name().equals("tcp") ? CommConfig.Transport.TCP : CommConfig.Transport.AUTO);
                c.barrier();
            });
        }
    }

    /** HCOMM_TRANSPORT=shm across hosts fails init on every rank, naming the setting. */
    @Test
    void shmBetweenDifferentHostsFailsInit() {
        assertThatThrownBy(() -> Ranks.runThreads(2, TIMEOUT, b -> shm(b).hostId("host-" + b.build().rank()), h -> {
            throw new AssertionError("init should have failed");
        })).isInstanceOf(HcommException.class).hasMessageContaining("HCOMM_TRANSPORT=shm").hasMessageContaining("other hosts");
    }
}
