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

    /** HCOMM_RESEND_LOG_FRAMES and HCOMM_RESEND_LOG_BYTES reach the log of every reliable link, and messages go on. */
    @Test
    void theSettingsBoundEveryReliableLinksLog() throws Exception {
        var opts = new TransportOptions(java.time.Duration.ofSeconds(20), java.time.Duration.ofSeconds(10), java.time.Duration.ofNanos(50_000),
                64 * 1024, 1 << 20, java.time.Duration.ofSeconds(10), java.time.Duration.ofMillis(2500))
                .withRetry(5, java.time.Duration.ofMillis(100)) // credit 1 MiB: a log of 2 MiB and 16 Ki frames holds what it leaves unacked
                .withLimits(new TransportLimits(1L << 30, 1 << 20, io.hcomm4j.security.AcceptGate.Limits.DEFAULT, 1 << 14, 2 << 20));
        PeerTransport[] ts = TransportSmokeTest.job(2, null, opts);
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
            for (int m = 0; m < 300; m++) { // more frames than one ack interval, more bytes than the first ring
                MemorySegment out = arena.allocate(4000);
                out.fill((byte) m);
                MemorySegment in = arena.allocate(4000);
                var r = ts[1].recv(0, 0, m, in);
                ts[0].send(0, 1, m, out).await(java.time.Duration.ofSeconds(20));
                r.await(java.time.Duration.ofSeconds(20));
                assertThat(in.mismatch(out)).isEqualTo(-1);
            }
            for (PeerTransport t : ts) {
                ResendLog log = t.links()[1 - t.rank].writer.resendLog();
                assertThat(log).as("rank %d's log", t.rank).isNotNull();
                assertThat(log.maxRecords()).isEqualTo(1 << 14);
                assertThat(log.maxBytes()).isEqualTo(2 << 20);
            }
        } finally {
            for (PeerTransport t : ts) t.close();
        }
        assertThatThrownBy(() -> new TransportLimits(1L << 30, 1 << 20, io.hcomm4j.security.AcceptGate.Limits.DEFAULT, 3000, 1 << 20))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
