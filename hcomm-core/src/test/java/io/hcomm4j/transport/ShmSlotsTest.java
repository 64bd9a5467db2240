package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The slots of the small-message road on their own: order and contents across laps and threads, fullness, stale laps. */
class ShmSlotsTest {
    /** Stamps increase with gaps (the frames that went by the ring meanwhile), as the link's seqs do. */
    private static long[] stamps(int n, long seed) {
        Random rnd = new Random(seed);
        long[] s = new long[n];
        long seq = 0;
        for (int i = 0; i < n; i++) {
            seq += 1 + (rnd.nextInt(4) == 0 ? rnd.nextInt(5) : 0);
            s[i] = seq;
        }
        return s;
    }

    private static byte payloadByte(int message, int i) {
        return (byte) (message * 31 + i * 7 + 1);
    }

    @Test
    void messagesArriveInOrderAndIntactAcrossThreadsAndLaps() throws Exception {
        int n = 200_000;
        long[] stamps = stamps(n, 5);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(ShmSlots.regionBytes(), 4096);
            ShmSlots producer = new ShmSlots(region);
            ShmSlots consumer = new ShmSlots(region);
            Throwable[] failure = new Throwable[1];
            Thread writer = Thread.ofPlatform().start(() -> {
                try {
                    MemorySegment payload = arena.allocate(ShmSlots.PAYLOAD_MAX);
                    for (int m = 0; m < n; m++) {
                        int length = m % (ShmSlots.PAYLOAD_MAX + 1);
                        for (int i = 0; i < length; i++) payload.set(ValueLayout.JAVA_BYTE, i, payloadByte(m, i));
                        while (!producer.hasRoom()) Thread.onSpinWait();
                        producer.put(stamps[m], 1000L + m, m * 3, ~m, payload.asSlice(0, length));
                    }
                } catch (Throwable e) {
                    failure[0] = e;
                }
            });
            MemorySegment got = arena.allocate(ShmSlots.PAYLOAD_MAX + 8);
            for (int m = 0; m < n; m++) {
                long stamp;
                while ((stamp = consumer.peek()) == 0) {
                    if (!writer.isAlive() && failure[0] != null) throw new AssertionError(failure[0]);
                    Thread.onSpinWait();
                }
                int length = m % (ShmSlots.PAYLOAD_MAX + 1);
                if (stamp != stamps[m] || consumer.commId() != 1000L + m || consumer.tag() != m * 3 || consumer.flags() != ~m
                        || consumer.length() != length) {
                    throw new AssertionError("message " + m + ": stamp " + stamp + " (expected " + stamps[m] + "), commId "
                            + consumer.commId() + ", tag " + consumer.tag() + ", flags " + consumer.flags() + ", length "
                            + consumer.length());
                }
                got.fill((byte) 0);
                consumer.copyPayload(got, 8, length);
                for (int i = 0; i < length; i++) {
                    byte b = got.get(ValueLayout.JAVA_BYTE, 8 + i);
                    if (b != payloadByte(m, i)) throw new AssertionError("message " + m + " byte " + i + " is " + b);
                }
                for (int i = 0; i < 8; i++) assertThat(got.get(ValueLayout.JAVA_BYTE, i)).isZero();
                consumer.release(stamp);
            }
            writer.join();
            assertThat(failure[0]).isNull();
            assertThat(consumer.peek()).isZero();
        }
    }

    @Test
    void fullUntilReleasedAndAStaleLapIsNotAMessage() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = arena.allocate(ShmSlots.regionBytes(), 4096);
            ShmSlots producer = new ShmSlots(region);
            ShmSlots consumer = new ShmSlots(region);
            MemorySegment empty = MemorySegment.ofArray(new byte[0]);
            assertThat(consumer.peek()).isZero();
            for (int i = 1; i <= ShmSlots.SLOTS; i++) {
                assertThat(producer.hasRoom()).as("slot %d", i).isTrue();
                producer.put(i, 0, 0, 0, empty);
            }
            assertThat(producer.hasRoom()).as("every slot taken").isFalse();
            // the consumer takes all of them; the next slot then holds the first lap's stamp 1: not a message
            for (int i = 1; i <= ShmSlots.SLOTS; i++) {
                assertThat(consumer.peek()).isEqualTo(i);
                consumer.release(i);
            }
            assertThat(consumer.peek()).as("the next slot holds stamp 1 of the lap before").isZero();
            assertThat(producer.hasRoom()).isTrue();
            producer.put(ShmSlots.SLOTS + 5, 9, 9, 9, empty);
            assertThat(consumer.peek()).isEqualTo(ShmSlots.SLOTS + 5);
            assertThat(consumer.commId()).isEqualTo(9);
        }
    }

    @Test
    void aRegionTooSmallIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment small = arena.allocate(ShmSlots.regionBytes() - 64);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ShmSlots(small))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(String.valueOf(ShmSlots.regionBytes()));
        }
    }

    /**
     * A count of freed slots the consumer could not have published (beyond what was written, or backwards) is not
     * believed: no slot is free from then on (messages take the ring, whose write then fails the link), and it says why.
     */
    @Test
    void aFreedCountThePeerCouldNotHaveWrittenIsRefused() {
        for (long garbage : new long[] {ShmSlots.SLOTS + 1, -1, Long.MIN_VALUE}) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment region = arena.allocate(ShmSlots.regionBytes(), 4096);
                ShmSlots producer = new ShmSlots(region);
                MemorySegment payload = arena.allocate(8);
                for (int i = 0; i < ShmSlots.SLOTS; i++) {
                    assertThat(producer.hasRoom()).isTrue();
                    producer.put(i + 1, 7, 1, 0, payload);
                }
                region.set(ValueLayout.JAVA_LONG, 0, garbage); // 'freed', at the start of the control line
                assertThat(producer.hasRoom()).as("freed %d", garbage).isFalse();
                assertThat(producer.corrupt()).as("freed %d", garbage).contains("count of slots freed");
                assertThat(producer.hasRoom()).isFalse();
            }
        }
    }
}
