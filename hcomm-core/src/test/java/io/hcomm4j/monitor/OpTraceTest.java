package io.hcomm4j.monitor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The flight-recorder ring: what it keeps, in which order, and that a reader never sees a torn or stale entry. */
class OpTraceTest {
    @Test
    void keepsTheLastCapacityOpsOldestFirstWithTheirFields() {
        OpTrace t = new OpTrace(0x2aL, 1, 4, 5); // rounded up to 8
        assertThat(t.capacity()).isEqualTo(8);
        for (int i = 0; i < 11; i++) {
            long ticket = t.open(OpTrace.Kind.COLLECTIVE, "allReduce", i + 1, -1, -1, "FLOAT32", "SUM", 10L * i, 40L * i, 0x1000 + i,
                    i % 3, OpTrace.State.SCHEDULED);
            if (i != 10) t.started(ticket);
            if (i < 9) t.ended(ticket, i % 2 == 0 ? Thread.State.RUNNABLE : null, "transport", i == 4 ? new IllegalStateException("boom") : null);
        }
        List<TraceEntry> es = t.entries();
        assertThat(t.recorded()).isEqualTo(11);
        assertThat(es).hasSize(8);
        for (int k = 0; k < es.size(); k++) {
            TraceEntry e = es.get(k);
            int i = k + 3;
            assertThat(e.recordId()).isEqualTo(i);
            assertThat(e.commId()).isEqualTo(0x2aL);
            assertThat(e.seq()).isEqualTo(i + 1);
            assertThat(e.count()).isEqualTo(10L * i);
            assertThat(e.bytes()).isEqualTo(40L * i);
            assertThat(e.fingerprint()).isEqualTo(0x1000 + i);
            assertThat(e.stream()).isEqualTo(i % 3);
            assertThat(e.type()).isEqualTo("FLOAT32");
            assertThat(e.reduction()).isEqualTo("SUM");
            OpTrace.State want = i == 10 ? OpTrace.State.SCHEDULED : i == 9 ? OpTrace.State.STARTED
                    : i == 4 ? OpTrace.State.FAILED : OpTrace.State.COMPLETED;
            assertThat(e.state()).as("op %d", i).isEqualTo(want);
            assertThat(e.algorithm()).isEqualTo(i < 9 && i % 2 == 0 ? "runnable" : null);
            assertThat(e.error()).isEqualTo(i == 4 ? "IllegalStateException: boom" : null);
            assertThat(e.calledEpochNanos()).isPositive();
            if (i < 10) assertThat(e.startedEpochNanos()).isGreaterThanOrEqualTo(e.calledEpochNanos());
            else assertThat(e.startedEpochNanos()).isZero();
            if (i < 9) assertThat(e.endedEpochNanos()).isGreaterThanOrEqualTo(e.startedEpochNanos());
            else assertThat(e.endedEpochNanos()).isZero();
        }
    }

    @Test
    void anOldTicketDoesNotChangeTheOpThatTookItsSlot() {
        OpTrace t = new OpTrace(0, 0, 2, 2);
        long old = t.open(OpTrace.Kind.P2P, "recv", -1, 1, 7, null, null, -1, 64, 0, 0, OpTrace.State.STARTED);
        t.open(OpTrace.Kind.P2P, "send", -1, 1, 8, null, null, -1, 64, 0, 0, OpTrace.State.STARTED);
        long newer = t.open(OpTrace.Kind.P2P, "send", -1, 1, 9, null, null, -1, 64, 0, 0, OpTrace.State.STARTED); // old's slot
        t.ended(old, null, "tcp", new RuntimeException("late"));
        t.p2pEnded(old, "tcp", 1, null, 5, 1, System.nanoTime());
        t.p2pEnded(old, "tcp", 1, null, 5, 1, 0);
        TraceEntry e = t.entries().getLast();
        assertThat(e.recordId()).isEqualTo(newer);
        assertThat(e.tag()).isEqualTo(9);
        assertThat(e.peer()).isEqualTo(1);
        assertThat(e.state()).isEqualTo(OpTrace.State.STARTED);
        assertThat(e.error()).isNull();
    }

    @Test
    void aMismatchFoundAfterTheEndMarksTheOpFailedWhicheverComesFirst() {
        OpTrace t = new OpTrace(0, 1, 3, 4);
        long before = t.open(OpTrace.Kind.COLLECTIVE, "reduce", 3, 0, -1, "INT32", "SUM", 16, 64, 7, 0, OpTrace.State.STARTED);
        t.ended(before, null, "transport", null);
        t.failedLate(before, new IllegalStateException("rank 0 called reduce with root 1"));
        long after = t.open(OpTrace.Kind.COLLECTIVE, "gather", 5, 0, -1, "INT32", null, 16, 64, 8, 0, OpTrace.State.STARTED);
        t.failedLate(after, new IllegalStateException("found while it ran")); // the report ran before the op's own end
        t.ended(after, null, "transport", null);
        long kept = t.open(OpTrace.Kind.COLLECTIVE, "scatter", 6, 0, -1, "INT32", null, 16, 64, 9, 0, OpTrace.State.STARTED);
        t.ended(kept, null, "transport", new IllegalArgumentException("its own failure"));
        t.failedLate(kept, new IllegalStateException("later")); // the first failure stays
        List<TraceEntry> es = t.entries();
        assertThat(es).extracting(TraceEntry::state).containsExactly(OpTrace.State.FAILED, OpTrace.State.FAILED, OpTrace.State.FAILED);
        assertThat(es).extracting(TraceEntry::error).containsExactly("IllegalStateException: rank 0 called reduce with root 1",
                "IllegalStateException: found while it ran", "IllegalArgumentException: its own failure");
        assertThat(es.getFirst().endedEpochNanos()).isPositive();
        for (int i = 0; i < 4; i++) t.open(OpTrace.Kind.P2P, "send", -1, 1, i, null, null, -1, 8, 0, 0, OpTrace.State.STARTED);
        t.failedLate(before, new IllegalStateException("stale")); // its slot holds another op now
        assertThat(t.entries()).allSatisfy(e -> assertThat(e.error()).isNull());
    }

    @Test
    void anOpThatEndedBeforeItWasRecordedIsWrittenWhole() {
        OpTrace t = new OpTrace(0, 0, 2, 4);
        t.openEnded(OpTrace.Kind.P2P, "send", 1, 7, 8, "shm", 1, null);
        t.openEnded(OpTrace.Kind.P2P, "send", 1, 8, 16, "tcp", 1, new IllegalStateException("refused"));
        List<TraceEntry> es = t.entries();
        assertThat(es).extracting(TraceEntry::state).containsExactly(OpTrace.State.COMPLETED, OpTrace.State.FAILED);
        assertThat(es).extracting(TraceEntry::tag).containsExactly(7, 8);
        assertThat(es).extracting(TraceEntry::bytes).containsExactly(8L, 16L);
        assertThat(es).extracting(TraceEntry::path).containsExactly("shm", "tcp");
        assertThat(es.get(1).error()).isEqualTo("IllegalStateException: refused");
        for (TraceEntry e : es) {
            assertThat(e.ended()).isTrue();
            assertThat(e.endedEpochNanos()).isEqualTo(e.calledEpochNanos()).isPositive();
            assertThat(List.of(e.seq(), e.count(), (long) e.channels())).containsExactly(-1L, -1L, 1L);
        }
        new OpTrace(0, 0, 2, 0).openEnded(OpTrace.Kind.P2P, "send", 1, 7, 8, "shm", 1, null); // records nothing, no failure
    }

    @Test
    void zeroRecordsNothingAndBadCapacitiesAreRefused() {
        OpTrace off = new OpTrace(0, 0, 1, 0);
        assertThat(off.enabled()).isFalse();
        long ticket = off.open(OpTrace.Kind.COLLECTIVE, "barrier", 1, -1, -1, null, null, 0, 0, 0, 0, OpTrace.State.STARTED);
        assertThat(ticket).isEqualTo(-1);
        off.ended(ticket, null, null, null);
        assertThat(off.entries()).isEmpty();
        assertThatThrownBy(() -> new OpTrace(0, 0, 1, -1)).hasMessageContaining("HCOMM_TRACE_BUFFER").hasMessageContaining("-1");
        assertThatThrownBy(() -> new OpTrace(0, 0, 1, (1 << 24) + 1)).hasMessageContaining("HCOMM_TRACE_BUFFER");
    }

    /**
     * Four writers record ops whose fields all derive from one number (count n, bytes 4n, tag n % 1000, op name by
     * parity) while a reader copies the ring again and again: every entry it sees is whole (its fields agree), and
     * every ended entry has its end after its start.
     */
    @Test
    void concurrentWritersAndAReaderNeverShowATornEntry() throws Exception {
        OpTrace t = new OpTrace(1, 0, 4, 64);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> bad = new AtomicReference<>();
        CountDownLatch go = new CountDownLatch(1);
        Thread[] writers = new Thread[4];
        for (int w = 0; w < writers.length; w++) {
            long seed = w;
            writers[w] = Thread.ofPlatform().start(() -> {
                SplittableRandom rnd = new SplittableRandom(seed);
                try {
                    go.await();
                    while (!stop.get()) {
                        long n = rnd.nextLong(1, 1L << 40);
                        long ticket = t.open(OpTrace.Kind.P2P, n % 2 == 0 ? "send" : "recv", -1, (int) (n % 7), (int) (n % 1000), null, null,
                                n, 4 * n, 0, 0, OpTrace.State.SCHEDULED);
                        t.started(ticket);
                        t.ended(ticket, null, "tcp", null);
                    }
                } catch (Throwable e) {
                    bad.compareAndSet(null, e);
                }
            });
        }
        go.countDown();
        long deadline = System.nanoTime() + 1_500_000_000L;
        int seen = 0;
        while (System.nanoTime() < deadline && bad.get() == null) {
            for (TraceEntry e : t.entries()) {
                seen++;
                long n = e.count();
                if (e.bytes() != 4 * n || e.tag() != n % 1000 || e.peer() != n % 7 || !e.op().equals(n % 2 == 0 ? "send" : "recv")) {
                    bad.compareAndSet(null, new AssertionError("torn entry " + e));
                }
                if (e.ended() && e.endedEpochNanos() < e.startedEpochNanos()) bad.compareAndSet(null, new AssertionError("ends before it starts: " + e));
            }
        }
        stop.set(true);
        for (Thread w : writers) w.join();
        if (bad.get() != null) throw new AssertionError(bad.get());
        assertThat(seen).isPositive();
        assertThat(t.recorded()).isGreaterThan(64);
    }
}
