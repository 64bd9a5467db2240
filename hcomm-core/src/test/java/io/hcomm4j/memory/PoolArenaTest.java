package io.hcomm4j.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.MemoryLimitException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link MemoryPool#arena()}: segments in the pool, zeroed, aligned, disjoint, invalid after close, memory returned. */
class PoolArenaTest {
    private ShmDir dir;
    private MemoryPool pool;

    /** The index of the first byte of {@code s} that is not {@code value}, or -1. */
    static long firstOther(MemorySegment s, byte value) {
        MemorySegment ref = Arena.ofAuto().allocate(Math.max(1, s.byteSize())).fill(value);
        return MemorySegment.mismatch(s, 0, s.byteSize(), ref, 0, s.byteSize());
    }

    @BeforeEach
    void setUp() {
        dir = new ShmDir();
    }

    @AfterEach
    void tearDown() throws Exception {
        if (pool != null) pool.close();
        dir.close();
    }

    /** Seeded random sizes (0 B to 1 MiB) and alignments (1 B to 64 KiB): each segment as asked, in the pool, its own. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void segmentsAreRegisteredZeroedAlignedAndDisjoint(boolean debug) {
        pool = MemoryPool.open(dir.options(1L << 30, debug));
        Random rnd = new Random(20261202);
        List<MemorySegment> all = new ArrayList<>();
        try (Arena arena = pool.arena()) {
            for (int i = 0; i < 120; i++) {
                long size = switch (rnd.nextInt(4)) {
                    case 0 -> rnd.nextInt(64);
                    case 1 -> rnd.nextInt(8192);
                    case 2 -> PoolArena.OWN_BUFFER - 8 + rnd.nextInt(16);
                    default -> rnd.nextInt(1 << 20);
                };
                long align = 1L << rnd.nextInt(17);
                MemorySegment s = arena.allocate(size, align);
                assertThat(s.byteSize()).as("segment %d", i).isEqualTo(size);
                assertThat(s.address() % align).as("segment %d: address %d, alignment %d", i, s.address(), align).isZero();
                assertThat(s.scope()).isEqualTo(arena.scope());
                if (size > 0) assertThat(pool.lookup(s)).as("segment %d (%d bytes) lies in the pool", i, size).isPresent();
                assertThat(firstOther(s, (byte) 0)).as("segment %d: first byte that is not zero", i).isEqualTo(-1);
                s.fill((byte) (i + 1));
                all.add(s);
            }
            // every segment still holds its own byte: none overlaps a later one
            for (int i = 0; i < all.size(); i++) {
                assertThat(firstOther(all.get(i), (byte) (i + 1))).as("segment %d: first byte overwritten", i).isEqualTo(-1);
            }
            assertThat(pool.stats().buffersInUse()).isPositive();
        }
        assertThat(pool.stats().buffersInUse()).as("every buffer back in the pool").isZero();
        assertThat(pool.stats().bytesInUse()).isZero();
        for (MemorySegment s : all) {
            if (s.byteSize() > 0) assertThatThrownBy(() -> s.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void closedArenaAndBadArgumentsFailClearly(boolean debug) {
        pool = MemoryPool.open(dir.options(1L << 20, debug));
        Arena arena = pool.arena();
        assertThatThrownBy(() -> arena.allocate(-1, 8)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("byteSize");
        assertThatThrownBy(() -> arena.allocate(8, 3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("byteAlignment");
        assertThatThrownBy(() -> arena.allocate(2L << 20, 8)).isInstanceOf(MemoryLimitException.class);
        MemorySegment s = arena.allocate(ValueLayout.JAVA_LONG, 4);
        arena.close();
        arena.close(); // idempotent
        assertThatThrownBy(() -> s.get(ValueLayout.JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> arena.allocate(8, 8)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThat(pool.stats().buffersInUse()).isZero();
        pool.close();
        assertThatThrownBy(pool::arena).isInstanceOf(IllegalStateException.class);
    }

    /** Four threads allocate from one arena at once; each writes and re-reads its own segments. */
    @org.junit.jupiter.api.Test
    void threadsShareOneArena() throws Exception {
        pool = MemoryPool.open(dir.options(1L << 30, false));
        ExecutorService ex = Executors.newFixedThreadPool(4);
        try (Arena arena = pool.arena()) {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int seed = t;
                fs.add(ex.submit(() -> {
                    Random rnd = new Random(seed);
                    List<MemorySegment> mine = new ArrayList<>();
                    for (int i = 0; i < 100; i++) {
                        MemorySegment s = arena.allocate(1 + rnd.nextInt(rnd.nextBoolean() ? 512 : 100_000), 8);
                        s.fill((byte) (seed * 50 + i % 50));
                        mine.add(s);
                    }
                    for (int i = 0; i < mine.size(); i++) {
                        long at = firstOther(mine.get(i), (byte) (seed * 50 + i % 50));
                        if (at >= 0) throw new AssertionError("thread " + seed + " segment " + i + " byte " + at);
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) f.get();
        } finally {
            ex.shutdownNow();
        }
        assertThat(pool.stats().buffersInUse()).isZero();
    }
}
