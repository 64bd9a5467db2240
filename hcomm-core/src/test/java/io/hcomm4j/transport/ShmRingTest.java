package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The single-producer/single-consumer ring on its own: byte order across wrap-arounds, fullness, sleeping flags. */
class ShmRingTest {
    @Test
    void aStreamOfOddChunksArrivesIntactAcrossThreads() throws Exception {
        int capacity = 4096;
        long total = 3_000_017;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(ShmRing.regionBytes(capacity), 4096);
            ShmRing producer = new ShmRing(region, capacity);
            ShmRing consumer = new ShmRing(region, capacity);
            Throwable[] failure = new Throwable[1];
            Thread writer = Thread.ofPlatform().start(() -> {
                try {
                    Random rnd = new Random(1);
                    ByteBuffer a = ByteBuffer.allocateDirect(5000);
                    ByteBuffer b = ByteBuffer.allocate(3000); // heap and direct sources, gathered
                    long next = 0;
                    while (next < total) {
                        a.clear().limit(rnd.nextInt(a.capacity()) + 1);
                        b.clear().limit(rnd.nextInt(b.capacity()) + 1);
                        for (int i = 0; i < a.limit(); i++) a.put(i, (byte) (next + i));
                        for (int i = 0; i < b.limit(); i++) b.put(i, (byte) (next + a.limit() + i));
                        long want = Math.min(total - next, a.limit() + b.limit());
                        if (want < a.limit()) a.limit((int) want);
                        if (want < a.limit() + b.limit()) b.limit((int) (want - a.limit()));
                        ByteBuffer[] srcs = {a, b};
                        long sent = 0;
                        while (sent < want) {
                            long n = producer.write(srcs, 0, 2);
                            assertThat(n).isBetween(0L, (long) capacity);
                            sent += n;
                            if (n == 0) Thread.onSpinWait();
                        }
                        next += want;
                    }
                } catch (Throwable e) {
                    failure[0] = e;
                }
            });
            Random rnd = new Random(2);
            ByteBuffer dst = ByteBuffer.allocateDirect(7000);
            long got = 0;
            while (got < total) {
                dst.clear().limit(rnd.nextInt(dst.capacity()) + 1);
                int n = consumer.read(dst);
                for (int i = 0; i < n; i++) {
                    if (dst.get(i) != (byte) (got + i)) throw new AssertionError("byte " + (got + i) + " is " + dst.get(i));
                }
                got += n;
                if (n == 0) {
                    if (!writer.isAlive() && failure[0] != null) throw new AssertionError(failure[0]);
                    Thread.onSpinWait();
                }
            }
            writer.join();
            assertThat(failure[0]).isNull();
            assertThat(consumer.readable()).isFalse();
        }
    }

    @Test
    void fullAndEmptyAndTheSleepingFlags() throws Exception {
        int capacity = 4096;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = arena.allocate(ShmRing.regionBytes(capacity), 4096);
            ShmRing producer = new ShmRing(region, capacity);
            ShmRing consumer = new ShmRing(region, capacity);
            assertThat(consumer.read(ByteBuffer.allocate(10))).isZero();
            // a reader about to sleep: the next write must wake it, once
            assertThat(consumer.armReader()).isFalse();
            assertThat(producer.write(ByteBuffer.allocate(100))).isEqualTo(100);
            assertThat(producer.readerToWake()).isTrue();
            assertThat(producer.readerToWake()).isFalse();
            consumer.disarmReader();
            // data that came before the flag: arming reports it, no wake-up needed
            assertThat(consumer.armReader()).isTrue();
            consumer.disarmReader();
            assertThat(producer.readerToWake()).isFalse();
            // fill it: the rest does not fit
            ByteBuffer big = ByteBuffer.allocate(10_000);
            assertThat(producer.write(big)).isEqualTo(capacity - 100);
            assertThat(producer.write(big)).isZero();
            assertThat(producer.hasRoom(1)).isFalse();
            // a writer waiting for room: the next read wakes it, once
            assertThat(producer.armWriter(1)).isFalse();
            ByteBuffer out = ByteBuffer.allocate(1000);
            assertThat(consumer.read(out)).isEqualTo(1000);
            assertThat(consumer.writerToWake()).isTrue();
            assertThat(consumer.writerToWake()).isFalse();
            producer.disarmWriter();
            assertThat(producer.hasRoom(1000)).isTrue();
            assertThat(producer.hasRoom(1001)).isFalse();
            ByteBuffer rest = ByteBuffer.allocate(capacity);
            assertThat(consumer.read(rest)).isEqualTo(capacity - 1000);
            assertThat(consumer.readable()).isFalse();
        }
    }

    /**
     * Indices a hostile peer writes: the consumer's tail beyond the ring or backwards, the producer's head beyond what was
     * written or backwards. Each is found at the next load, the readiness check says "ready" (so the link's thread comes
     * and fails), and the copy throws {@link ShmRing.CorruptIndexException} instead of an index error or a bad copy.
     */
    @Test
    void indicesThePeerCouldNotHaveWrittenAreRefused() throws Exception {
        int capacity = 4096;
        // {which index, its garbage value relative to the honest one}: 1000 bytes written, 600 read
        long[][] cases = {{ShmRing.TAIL_OFFSET, capacity + 1}, {ShmRing.TAIL_OFFSET, -1}, {ShmRing.TAIL_OFFSET, Long.MAX_VALUE / 2},
                {ShmRing.HEAD_OFFSET, 401}, {ShmRing.HEAD_OFFSET, -1}, {ShmRing.HEAD_OFFSET, Long.MIN_VALUE / 2}};
        for (long[] c : cases) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment region = arena.allocate(ShmRing.regionBytes(capacity), 4096);
                ShmRing producer = new ShmRing(region, capacity);
                ShmRing consumer = new ShmRing(region, capacity);
                assertThat(producer.write(ByteBuffer.allocate(1000))).isEqualTo(1000);
                assertThat(consumer.read(ByteBuffer.allocate(600))).isEqualTo(600);
                assertThat(producer.hasRoom(capacity)).isFalse(); // the producer has seen head 600
                long honest = region.get(ValueLayout.JAVA_LONG, c[0]);
                region.set(ValueLayout.JAVA_LONG, c[0], honest + c[1]);
                String what = (c[0] == ShmRing.TAIL_OFFSET ? "tail " : "head ") + c[1];
                if (c[0] == ShmRing.TAIL_OFFSET) {
                    // the consumer has 400 bytes cached: it looks again when it wants more
                    assertThat(consumer.read(ByteBuffer.allocate(400))).as(what).isEqualTo(400);
                    assertThat(consumer.readable()).as(what).isTrue();
                    assertThatThrownBy(() -> consumer.read(ByteBuffer.allocate(100))).as(what)
                            .isInstanceOf(ShmRing.CorruptIndexException.class).hasMessageContaining("tail");
                    assertThat(consumer.corrupt()).as(what).isNotNull();
                } else {
                    // the producer looks at head again only when its cached room is short
                    assertThat(producer.hasRoom(capacity)).as(what).isTrue();
                    assertThatThrownBy(() -> producer.write(ByteBuffer.allocate(capacity))).as(what)
                            .isInstanceOf(ShmRing.CorruptIndexException.class).hasMessageContaining("head");
                    assertThatThrownBy(() -> producer.write(new ByteBuffer[] {ByteBuffer.allocate(1)}, 0, 1)).as(what)
                            .isInstanceOf(ShmRing.CorruptIndexException.class);
                }
            }
        }
        // a mapping whose indices are not a ring's from the start
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = arena.allocate(ShmRing.regionBytes(capacity), 4096);
            region.set(ValueLayout.JAVA_LONG, ShmRing.TAIL_OFFSET, capacity + 1);
            assertThatThrownBy(() -> new ShmRing(region, capacity)).isInstanceOf(ShmRing.CorruptIndexException.class);
        }
    }
}
