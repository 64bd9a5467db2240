package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ResendLog}'s bounds: a peer that acknowledges nothing fills the log up to its frame or byte limit and no
 * further (the link then fails with {@link ResendLog.LogFullException}, naming what is kept); below the limits the ring
 * grows as it must, every kept payload reads back byte for byte, and after an acknowledgement it takes frames again.
 */
class ResendLogTest {
    private static void eager(ResendLog log, MemorySegment payload) {
        long seq = log.nextSeq();
        log.append(Frame.EAGER, 0, seq, 0, 1, 7, 0, payload.byteSize(), 0, payload, true, null);
    }

    @Test
    void aPeerThatAcknowledgesNothingFillsTheByteRingToItsLimitAndNoFurther() {
        long maxBytes = 1 << 20; // the ring grows 256 KiB -> 512 KiB -> 1 MiB, then refuses
        ResendLog log = new ResendLog(1 << 12, maxBytes);
        SplittableRandom rnd = new SplittableRandom(18);
        List<byte[]> sent = new ArrayList<>();
        try (Arena a = Arena.ofConfined()) {
            Throwable full = null;
            while (full == null) {
                byte[] b = new byte[1 + rnd.nextInt(9000)];
                rnd.nextBytes(b);
                try {
                    eager(log, MemorySegment.ofArray(b));
                    sent.add(b);
                } catch (ResendLog.LogFullException e) {
                    full = e;
                }
                assertThat(sent.size()).as("frames before the limit").isLessThan(1 << 12);
            }
            assertThat(full).hasMessageContaining("the peer has not acknowledged the last " + sent.size() + " frames")
                    .hasMessageContaining("limit of 1.0 MiB").hasMessageContaining("stopped reading");
            assertThat(log.bytes()).isLessThanOrEqualTo(maxBytes).isGreaterThan(maxBytes - 9000 - Frame.HEADER - 9056);
            for (int i = 0; i < sent.size(); i++) {
                MemorySegment kept = log.copiedPayload(log.firstSeq() + i);
                assertThat(kept.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).as("frame %d", i).isEqualTo(sent.get(i));
            }
            // acknowledged, the log takes frames again
            List<SendRequest> done = new ArrayList<>();
            log.acknowledge(log.nextSeq() - 1, done);
            assertThat(log.frames()).isZero();
            eager(log, a.allocate(9000));
            assertThat(log.frames()).isOne();
        }
    }

    @Test
    void aPeerThatAcknowledgesNothingFillsTheRecordsToTheirLimitAndNoFurther() {
        ResendLog log = new ResendLog(1024, 1 << 20);
        MemorySegment empty = MemorySegment.ofArray(new byte[0]);
        for (int i = 0; i < 1024; i++) eager(log, empty);
        assertThatThrownBy(() -> eager(log, empty)).isInstanceOf(ResendLog.LogFullException.class)
                .hasMessageContaining("the peer has not acknowledged the last 1024 frames").hasMessageContaining("at most 1024 frames");
        assertThat(log.frames()).isEqualTo(1024);
    }

    @Test
    void limitsArePowersOfTwoWithinTheRing() {
        assertThatThrownBy(() -> new ResendLog(1000, 1 << 20)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ResendLog(1024, 3L << 20)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ResendLog(1024, 1L << 31)).isInstanceOf(IllegalArgumentException.class);
    }
}
