package io.hcomm4j.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.hcomm4j.DataType;
import io.hcomm4j.MemoryLimitException;
import io.hcomm4j.MemoryStats;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class MemoryPoolTest {
    private static final long GIB = 1L << 30;
    private ShmDir dir;
    private MemoryPool pool;

    @BeforeEach
    void setUp() {
        dir = new ShmDir();
    }

    @AfterEach
    void tearDown() throws Exception {
        if (pool != null) pool.close();
        dir.close();
    }

    private MemoryPool open(long max, boolean debug) {
        pool = MemoryPool.open(dir.options(max, debug));
        return pool;
    }

    static byte pattern(long i, int seed) {
        return (byte) (i * 31 + seed + (i >>> 13));
    }

    static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, pattern(i, seed));
    }

    /** Index of the first byte that differs from the pattern, or -1. */
    static long firstMismatch(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != pattern(i, seed)) return i;
        }
        return -1;
    }

    @Test
    void buffersOfAnySizeHoldEveryByteWritten() {
        open(GIB, false);
        long[] sizes = {1, 7, 4095, 4096, 4097, 100_000, 256 * 1024, 256 * 1024 + 1, 3 * 1024 * 1024 + 5};
        List<Buffer> buffers = new ArrayList<>();
        for (int k = 0; k < sizes.length; k++) {
            Buffer b = pool.allocate(sizes[k]);
            buffers.add(b);
            MemorySegment s = b.segment();
            assertThat(s.byteSize()).isEqualTo(sizes[k]);
            assertThat(b.byteSize()).isEqualTo(sizes[k]);
            assertThat(s.isNative()).isTrue();
            assertThat(s.address() % 4096).as("page-aligned").isZero();
            fill(s, k);
        }
        // written all at once, then read: no buffer overlaps another
        for (int k = 0; k < sizes.length; k++) {
            assertThat(firstMismatch(buffers.get(k).segment(), k)).as("buffer of %d bytes", sizes[k]).isEqualTo(-1);
        }
        // a byte past the end is refused, not silently in the next buffer
        assertThatThrownBy(() -> buffers.get(0).segment().get(ValueLayout.JAVA_BYTE, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        long inUse = 4 * 4096 + 8192 + 131072 + 262144 + 327680 + (7L << 19); // 3 MiB + 5 takes the 3.5 MiB class
        assertThat(pool.stats().bytesInUse()).isEqualTo(inUse);
        assertThat(pool.stats().buffersInUse()).isEqualTo(sizes.length);
        buffers.forEach(Buffer::close);
        assertThat(pool.stats().bytesInUse()).isZero();
        assertThat(pool.stats().buffersInUse()).isZero();
    }

    @Test
    void aClosedBufferIsReusedAtTheSameAddressWithoutANewMapping() {
        open(GIB, false);
        Buffer a = pool.allocate(10_000);
        long address = a.segment().address();
        MemoryStats before = pool.stats();
        assertThat(before.allocations()).isEqualTo(1);
        assertThat(before.reuses()).isZero();
        assertThat(before.mappings()).isEqualTo(1);
        assertThat(before.mappedBytes()).isEqualTo(2L << 20); // one chunk for the 16 KiB class
        a.close();
        assertThat(a.isClosed()).isTrue();
        assertThatThrownBy(a::segment).isInstanceOf(IllegalStateException.class).hasMessage("the buffer is closed");
        a.close(); // idempotent

        Buffer b = pool.allocate(9_000); // same class (16 KiB)
        assertThat(b.segment().address()).isEqualTo(address);
        assertThat(b.byteSize()).isEqualTo(9_000);
        MemoryStats after = pool.stats();
        assertThat(after.mappings()).isEqualTo(1);
        assertThat(after.mappedBytes()).isEqualTo(2L << 20);
        assertThat(after.allocations()).isEqualTo(2);
        assertThat(after.reuses()).isEqualTo(1);
        b.close();

        // a large buffer (its own mapping) too
        Buffer big = pool.allocate(5L << 20);
        long bigAddress = big.segment().address();
        assertThat(pool.stats().mappings()).isEqualTo(2);
        assertThat(pool.stats().mappedBytes()).isEqualTo((2L << 20) + (5L << 20));
        big.close();
        Buffer big2 = pool.allocate((5L << 20) - 12345);
        assertThat(big2.segment().address()).isEqualTo(bigAddress);
        assertThat(pool.stats().mappings()).isEqualTo(2);
        assertThat(pool.stats().reuses()).isEqualTo(2);
        assertThat(pool.stats().allocations()).isEqualTo(4);
        big2.close();
    }

    @Test
    void smallClassesShareAChunkLargeBuffersHaveTheirOwnMapping() {
        open(GIB, false);
        Buffer a = pool.allocate(1);
        Buffer b = pool.allocate(4096);
        Buffer c = pool.allocate(4000);
        Registration ra = pool.lookup(a.segment()).orElseThrow();
        Registration rb = pool.lookup(b.segment()).orElseThrow();
        Registration rc = pool.lookup(c.segment()).orElseThrow();
        assertThat(rb.file()).isEqualTo(ra.file());
        assertThat(rc.file()).isEqualTo(ra.file());
        assertThat(List.of(ra.offset(), rb.offset(), rc.offset())).containsExactly(0L, 4096L, 8192L);
        assertThat(b.segment().address() - a.segment().address()).isEqualTo(4096);
        assertThat(pool.stats().mappings()).isEqualTo(1);
        assertThat(pool.stats().mappedBytes()).isEqualTo(2L << 20);

        Buffer d = pool.allocate(8192); // another class: another chunk
        assertThat(pool.lookup(d.segment()).orElseThrow().file()).isNotEqualTo(ra.file());
        assertThat(pool.stats().mappings()).isEqualTo(2);

        Buffer large = pool.allocate(300 * 1024); // class 320 KiB, its own mapping
        Registration rl = pool.lookup(large.segment()).orElseThrow();
        assertThat(rl.offset()).isZero();
        assertThat(rl.length()).isEqualTo(300 * 1024);
        assertThat(Files.exists(rl.file())).isTrue();
        assertThat(pool.stats().mappings()).isEqualTo(3);
        assertThat(pool.stats().mappedBytes()).isEqualTo((4L << 20) + 320 * 1024);
        assertThat(dir.list()).hasSize(3).allMatch(n -> n.startsWith("hcomm4j-"));
        for (Buffer x : List.of(a, b, c, d, large)) x.close();
    }

    @Test
    void statsTrackBytesInUseAndHighWater() {
        open(GIB, false);
        Buffer a = pool.allocate(5000);    // 8 KiB class
        Buffer b = pool.allocate(100);     // 4 KiB class
        Buffer c = pool.allocate(1 << 20); // 1 MiB class
        MemoryStats s = pool.stats();
        assertThat(s.bytesInUse()).isEqualTo(8192 + 4096 + (1 << 20));
        assertThat(s.buffersInUse()).isEqualTo(3);
        assertThat(s.highWaterBytes()).isEqualTo(8192 + 4096 + (1 << 20));
        assertThat(s.allocations()).isEqualTo(3);
        assertThat(s.mappings()).isEqualTo(3);
        assertThat(s.mappedBytes()).isEqualTo((2L << 20) + (2L << 20) + (1 << 20));
        assertThat(s.limitBytes()).isEqualTo(GIB);
        assertThat(s.leaks()).isZero();
        c.close();
        s = pool.stats();
        assertThat(s.bytesInUse()).isEqualTo(8192 + 4096);
        assertThat(s.buffersInUse()).isEqualTo(2);
        assertThat(s.highWaterBytes()).isEqualTo(8192 + 4096 + (1 << 20));
        assertThat(s.mappedBytes()).isEqualTo((4L << 20) + (1 << 20)); // kept for reuse
        a.close();
        b.close();
        s = pool.stats();
        assertThat(s.bytesInUse()).isZero();
        assertThat(s.buffersInUse()).isZero();
        assertThat(s.highWaterBytes()).isEqualTo(8192 + 4096 + (1 << 20));
    }

    @Test
    void theLimitThrowsNamingTheRequestTheBytesInUseAndTheLimit() {
        open(1 << 20, false);
        Buffer a = pool.allocate(512 * 1024);
        Buffer b = pool.allocate(512 * 1024);
        assertThat(pool.stats().mappedBytes()).isEqualTo(1 << 20);
        assertThatThrownBy(() -> pool.allocate(1))
                .isInstanceOf(MemoryLimitException.class)
                .hasMessage("memory pool limit reached: a request of 1 bytes (size class 4096) needs more shared memory, "
                        + "but 1048576 bytes are in use in 2 buffers and 1048576 bytes are mapped, of a limit of 1048576 bytes "
                        + "(HCOMM_MEM_POOL_MAX)")
                .satisfies(e -> {
                    MemoryLimitException m = (MemoryLimitException) e;
                    assertThat(m.requestedBytes()).isEqualTo(1);
                    assertThat(m.inUseBytes()).isEqualTo(1 << 20);
                    assertThat(m.limitBytes()).isEqualTo(1 << 20);
                });
        assertThatThrownBy(() -> pool.allocate(2 << 20))
                .isInstanceOf(MemoryLimitException.class)
                .hasMessage("memory pool: a request of 2097152 bytes is more than the limit of 1048576 bytes (HCOMM_MEM_POOL_MAX); "
                        + "1048576 bytes are in use");

        // a free buffer of another class is unmapped to make room; the new chunk is cut to what fits
        b.close();
        Buffer small = pool.allocate(4096);
        MemoryStats s = pool.stats();
        assertThat(s.mappedBytes()).isEqualTo(1 << 20);
        assertThat(s.mappings()).isEqualTo(2);
        assertThat(s.bytesInUse()).isEqualTo(512 * 1024 + 4096);
        List<Buffer> more = new ArrayList<>();
        for (int i = 1; i < 128; i++) more.add(pool.allocate(4096)); // the rest of the 512 KiB chunk
        assertThat(pool.stats().mappings()).isEqualTo(2);
        assertThatThrownBy(() -> pool.allocate(4096)).isInstanceOf(MemoryLimitException.class)
                .hasMessageContaining("1048576 bytes are in use in 129 buffers");
        a.close();
        small.close();
        more.forEach(Buffer::close);
        assertThat(pool.stats().bytesInUse()).isZero();
    }

    @Test
    void badSizesAreRefusedNamingTheArgument() {
        open(GIB, false);
        assertThatThrownBy(() -> pool.allocate(0)).isInstanceOf(IllegalArgumentException.class).hasMessage("bytes must be > 0, was 0");
        assertThatThrownBy(() -> pool.allocate(-5)).isInstanceOf(IllegalArgumentException.class).hasMessage("bytes must be > 0, was -5");
        assertThatThrownBy(() -> pool.allocate(DataType.FLOAT32, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("count must be > 0, was 0");
        assertThatThrownBy(() -> pool.allocate(DataType.INT64, Long.MAX_VALUE / 4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("count " + Long.MAX_VALUE / 4 + " of INT64 is more than 2^63 bytes");
        assertThatThrownBy(() -> pool.allocate(null, 1)).isInstanceOf(NullPointerException.class).hasMessage("type");
        assertThatThrownBy(() -> new MemoryPool.Options(dir.path, 4095, false)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxBytes must be in [4096, 2^50], was 4095");
        try (Buffer f = pool.allocate(DataType.FLOAT64, 1000)) {
            assertThat(f.byteSize()).isEqualTo(8000);
        }
        assertThat(pool.stats().allocations()).isEqualTo(1);
        assertThat(pool.stats().mappings()).isEqualTo(1);
    }

    @Test
    void concurrentAllocateAndCloseNeverHandOutTheSameMemoryTwice() throws Exception {
        open(GIB, false);
        int threads = 4;
        int rounds = 3000;
        long[] sizes = {16, 4096, 5000, 20_000, 64 * 1024, 300 * 1024};
        ExecutorService exec = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                results.add(exec.submit(() -> {
                    Buffer[] held = new Buffer[4];
                    long[] stamp = new long[4];
                    int checked = 0;
                    for (int r = 0; r < rounds; r++) {
                        int k = r % held.length;
                        if (held[k] != null) {
                            MemorySegment s = held[k].segment();
                            // nobody else wrote into it while we held it
                            assertThat(s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0)).isEqualTo(stamp[k]);
                            assertThat(s.get(ValueLayout.JAVA_LONG_UNALIGNED, s.byteSize() - 8)).isEqualTo(~stamp[k]);
                            checked++;
                            held[k].close();
                        }
                        held[k] = pool.allocate(sizes[(r * 7 + id) % sizes.length]);
                        MemorySegment s = held[k].segment();
                        stamp[k] = ((long) id << 32) | r;
                        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, stamp[k]);
                        s.set(ValueLayout.JAVA_LONG_UNALIGNED, s.byteSize() - 8, ~stamp[k]);
                    }
                    for (Buffer b : held) b.close();
                    return checked;
                }));
            }
            int checked = 0;
            for (Future<Integer> f : results) checked += f.get(120, TimeUnit.SECONDS);
            assertThat(checked).isEqualTo(threads * (rounds - 4));
        } finally {
            exec.shutdownNow();
        }
        MemoryStats s = pool.stats();
        assertThat(s.bytesInUse()).isZero();
        assertThat(s.buffersInUse()).isZero();
        assertThat(s.allocations()).isEqualTo((long) threads * rounds);
        // at most 16 buffers were open at once: nearly every allocation reused memory
        assertThat(s.reuses()).isGreaterThan((long) threads * rounds - 200);
        assertThat(s.highWaterBytes()).isLessThanOrEqualTo(16L * 320 * 1024);
        assertThat(s.leaks()).isZero();
    }

    private void allocateAndDrop(long bytes) {
        Buffer b = pool.allocate(bytes);
        b.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
    }

    private static void awaitLeaks(MemoryPool p, long n) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> {
            System.gc();
            return p.stats().leaks() >= n;
        });
    }

    @Test
    void aBufferDroppedWithoutCloseIsReportedAndItsMemoryReclaimed() {
        open(GIB, false);
        List<String> reports = new CopyOnWriteArrayList<>();
        pool.leakListener = reports::add;
        Buffer keep = pool.allocate(1000);
        allocateAndDrop(1000);
        assertThat(pool.stats().buffersInUse()).isEqualTo(2);
        awaitLeaks(pool, 1);
        MemoryStats s = pool.stats();
        assertThat(s.leaks()).isEqualTo(1);
        assertThat(s.buffersInUse()).isEqualTo(1); // reclaimed
        assertThat(s.bytesInUse()).isEqualTo(4096);
        assertThat(reports).singleElement().satisfies(r -> assertThat(r)
                .startsWith("memory pool: a buffer of 1000 bytes (hcomm4j-")
                .contains("at offset 4096) became unreachable without close(); its memory went back to the pool.")
                .endsWith("HCOMM_MEM_DEBUG=1 records where buffers are allocated."));
        // the reclaimed memory is handed out again
        Buffer again = pool.allocate(4096);
        assertThat(again.segment().address()).isEqualTo(keep.segment().address() + 4096);
        assertThat(pool.stats().reuses()).isEqualTo(1);
        keep.close();
        again.close();
        assertThat(pool.stats().leaks()).isEqualTo(1);
    }

    private MemorySegment[] held = new MemorySegment[1];

    private void dropBufferKeepSegment() {
        Buffer b = pool.allocate(2000);
        held[0] = b.segment().asSlice(100, 50);
    }

    @Test
    void aDroppedBufferWhoseSegmentIsStillReachableIsNotReclaimedUntilTheSegmentIsGone() throws Exception {
        open(GIB, false);
        dropBufferKeepSegment();
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(40);
        }
        assertThat(pool.stats().leaks()).isZero();
        assertThat(pool.stats().buffersInUse()).isEqualTo(1);
        held[0].set(ValueLayout.JAVA_BYTE, 49, (byte) 7); // still ours: nobody else got this memory
        assertThat(held[0].get(ValueLayout.JAVA_BYTE, 49)).isEqualTo((byte) 7);
        held[0] = null;
        awaitLeaks(pool, 1);
        assertThat(pool.stats().buffersInUse()).isZero();
    }

    private void allocateInDebugModeAndDrop() {
        Buffer b = pool.allocate(3000);
        b.segment().fill((byte) 1);
    }

    @Test
    void debugModeReportsTheAllocationSiteAndInvalidatesClosedSegments() {
        open(GIB, true);
        List<String> reports = new CopyOnWriteArrayList<>();
        pool.leakListener = reports::add;
        allocateInDebugModeAndDrop();
        awaitLeaks(pool, 1);
        assertThat(pool.stats().buffersInUse()).isZero();
        assertThat(reports).singleElement().satisfies(r -> assertThat(r)
                .startsWith("memory pool: a buffer of 3000 bytes (hcomm4j-")
                .contains("became unreachable without close(); its segment was invalidated and its memory went back to the pool. "
                        + "It was allocated by thread " + Thread.currentThread().getName() + " at:\n\tat "
                        + MemoryPoolTest.class.getName() + ".allocateInDebugModeAndDrop(MemoryPoolTest.java:")
                .contains("\tat " + MemoryPoolTest.class.getName() + ".debugModeReportsTheAllocationSiteAndInvalidatesClosedSegments(")
                .doesNotContain("MemoryPool.allocate"));

        // use after close throws instead of touching memory that may belong to the next buffer
        Buffer b = pool.allocate(100);
        MemorySegment s = b.segment();
        s.set(ValueLayout.JAVA_BYTE, 0, (byte) 5);
        b.close();
        assertThatThrownBy(() -> s.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        Buffer next = pool.allocate(100);
        assertThat(next.segment().address()).isEqualTo(s.address()); // the same memory, safely reused
        assertThat(next.segment().get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 5);
        next.close();
        assertThat(pool.stats().leaks()).isEqualTo(1);
    }

    @Test
    void inDebugModeASegmentKeptPastItsDroppedBufferIsInvalidatedBeforeTheMemoryIsReused() {
        open(GIB, true);
        dropBufferKeepSegment();
        awaitLeaks(pool, 1);
        assertThat(pool.stats().buffersInUse()).isZero();
        assertThatThrownBy(() -> held[0].get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        try (Buffer next = pool.allocate(2000)) {
            assertThat(next.segment().address()).isEqualTo(held[0].address() - 100);
        }
    }

    @Test
    void closingThePoolUnlinksEveryFileAndUnmapsIdleMappings() {
        open(GIB, false);
        Buffer a = pool.allocate(100);
        Buffer b = pool.allocate(1 << 20);
        Buffer c = pool.allocate(40_000);
        a.close();
        b.close();
        c.close();
        List<String> files = dir.list();
        assertThat(files).hasSize(3).allMatch(n -> n.startsWith("hcomm4j-" + ShmFiles.SELF.namespace() + "-"
                + ProcessHandle.current().pid() + "-" + ShmFiles.SELF.startTime() + "-"));
        pool.close();
        assertThat(dir.list()).isEmpty();
        MemoryStats s = pool.stats();
        assertThat(s.mappings()).isZero();
        assertThat(s.mappedBytes()).isZero();
        assertThat(pool.isClosed()).isTrue();
        assertThatThrownBy(() -> pool.allocate(1)).isInstanceOf(IllegalStateException.class)
                .hasMessage("the memory pool is closed (its Hcomm session was closed)");
        pool.close(); // idempotent
    }

    @Test
    void aBufferStillOpenWhenThePoolClosesStaysUsableUntilItIsClosed() {
        open(GIB, false);
        Buffer open = pool.allocate(1 << 20);
        Buffer done = pool.allocate(4096);
        done.close();
        fill(open.segment(), 3);
        pool.close();
        assertThat(dir.list()).isEmpty(); // unlinked at once
        assertThat(pool.stats().mappings()).isEqualTo(1); // but still mapped
        assertThat(pool.stats().mappedBytes()).isEqualTo(1 << 20);
        assertThat(firstMismatch(open.segment(), 3)).isEqualTo(-1);
        assertThat(pool.lookup(open.segment())).isEmpty();
        open.close();
        assertThat(pool.stats().mappings()).isZero();
        assertThat(pool.stats().mappedBytes()).isZero();
        assertThat(pool.stats().buffersInUse()).isZero();
    }

    @Test
    void aSecondMappingOfTheFileByNameSeesTheBytesWrittenThroughTheBuffer() throws Exception {
        open(GIB, false);
        Buffer pad = pool.allocate(16384); // so the buffer below (same class) does not start at offset 0 of its file
        Buffer buf = pool.allocate(3 * 4096 + 17);
        fill(buf.segment(), 11);
        Registration reg = pool.lookup(buf.segment()).orElseThrow();
        assertThat(reg.offset()).isEqualTo(16384);
        assertThat(reg.length()).isEqualTo(3 * 4096 + 17);
        assertThat(reg.file().getParent()).isEqualTo(dir.path);
        assertThat(reg.fileName()).startsWith("hcomm4j-");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment peer = new Registration(dir.path.resolve(reg.fileName()), reg.offset(), reg.length()).map(arena);
            assertThat(peer.address()).isNotEqualTo(buf.segment().address());
            assertThat(firstMismatch(peer, 11)).isEqualTo(-1);
            fill(peer, 12); // and the other way round
            assertThat(firstMismatch(buf.segment(), 12)).isEqualTo(-1);
        }
        // a slice is found with its own offset; memory that is not the pool's is not
        Registration slice = pool.lookup(buf.segment().asSlice(100, 200)).orElseThrow();
        assertThat(slice.file()).isEqualTo(reg.file());
        assertThat(slice.offset()).isEqualTo(16384 + 100);
        assertThat(slice.length()).isEqualTo(200);
        assertThat(pool.lookup(MemorySegment.ofArray(new byte[10]))).isEmpty();
        try (Arena arena = Arena.ofConfined()) {
            assertThat(pool.lookup(arena.allocate(4096))).isEmpty();
        }
        assertThatThrownBy(() -> new Registration(reg.file(), 2L << 20, 1).map(Arena.global()))
                .isInstanceOf(java.io.IOException.class).hasMessageContaining("holds 2097152 bytes");
        assertThat(Files.size(reg.file())).isEqualTo(2L << 20); // not grown by the refused map
        pad.close();
        buf.close();
    }

    @Test
    void filesAreOwnerOnlyAndPreFaulted() throws Exception {
        open(GIB, false);
        try (Buffer b = pool.allocate(1 << 20)) {
            Registration r = pool.lookup(b.segment()).orElseThrow();
            assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(r.file())))
                    .isEqualTo("rw-------");
            // every page is allocated in the file system when the mapping is made (not sparse)
            Process stat = new ProcessBuilder("stat", "-c", "%s %b %B", r.file().toString()).redirectErrorStream(true).start();
            String[] out = new String(stat.getInputStream().readAllBytes()).trim().split(" ");
            assertThat(stat.waitFor()).isZero();
            assertThat(Long.parseLong(out[0])).isEqualTo(1 << 20);
            assertThat(Long.parseLong(out[1]) * Long.parseLong(out[2])).isEqualTo(1 << 20);
            Set<Long> seen = new HashSet<>();
            for (long off = 0; off < b.byteSize(); off += 4096) seen.add(b.segment().get(ValueLayout.JAVA_LONG, off));
            assertThat(seen).containsExactly(0L); // fresh memory reads as zero
        }
    }
}
