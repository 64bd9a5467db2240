package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.monitor.OpTrace;
import io.hcomm4j.monitor.TraceAnalysis;
import io.hcomm4j.monitor.TraceDump;
import io.hcomm4j.monitor.TraceEntry;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The flight recorder (issue 19): every op of a rank in its communicator's ring, dumped as JSON by
 * {@code comm.dumpTrace}, by a rank whose op timed out (and by every other rank it then asks through the store), and
 * read back by {@link TraceAnalysis}, which names the first collective where the ranks part ways. Ranks are threads of
 * this JVM over real sockets and shared memory.
 */
class FlightRecorderTest {
    @TempDir
    Path dir;

    private static Path file(Path dir, int rank) {
        return dir.resolve(TraceDump.fileName(rank));
    }

    private static List<TraceDump> read(Path dir, int n) throws Exception {
        List<TraceDump> out = new ArrayList<>();
        for (int r = 0; r < n; r++) out.add(TraceDump.parse(Files.readString(file(dir, r))));
        return out;
    }

    @Test
    void everyOpIsRecordedWithItsFieldsAndTheDumpReadsBack() throws Exception {
        int n = 3;
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int me = c.rank();
            try (Arena arena = Arena.ofShared(); Stream s = c.newStream()) {
                MemorySegment f = arena.allocate(4000);
                c.allReduce(f, f, 1000, DataType.FLOAT32, ReduceOp.SUM);
                MemorySegment l = arena.allocate(17 * 8);
                c.broadcast(l, 17, DataType.INT64, 1);
                MemorySegment all = arena.allocate(12L * n);
                c.allGatherAsync(arena.allocate(12), all, 3, DataType.INT32).await();
                s.reduce(f, f, 1000, DataType.FLOAT32, ReduceOp.MAX, 2);
                s.synchronize();
                MemorySegment msg = arena.allocate(65536);
                if (me == 0) {
                    for (int i = 0; i < 65536; i++) msg.set(ValueLayout.JAVA_BYTE, i, (byte) i);
                    c.send(msg, 1, 5);
                } else if (me == 1) {
                    Status st = c.recv(msg, Communicator.ANY_SOURCE, 5);
                    assertThat(st.source()).isZero();
                }
                c.barrier();
                c.dumpTrace(file(dir, me));
            }
        });
        List<TraceDump> dumps = read(dir, n);
        for (int r = 0; r < n; r++) {
            TraceDump d = dumps.get(r);
            assertThat(d.rank()).isEqualTo(r);
            assertThat(d.worldSize()).isEqualTo(n);
            assertThat(d.reason()).isEqualTo("dumpTrace");
            assertThat(d.pid()).isEqualTo(ProcessHandle.current().pid());
            TraceDump.Comm w = d.comms().stream().filter(x -> x.id() == 0).findFirst().orElseThrow();
            assertThat(w.rank()).isEqualTo(r);
            assertThat(w.size()).isEqualTo(n);
            assertThat(w.worldRanks()).containsExactly(0, 1, 2);
            List<TraceEntry> coll = w.entries().stream().filter(e -> e.kind() == OpTrace.Kind.COLLECTIVE).toList();
            assertThat(coll).extracting(TraceEntry::op).containsExactly("allReduce", "broadcast", "allGather", "reduce", "barrier");
            assertThat(coll).extracting(TraceEntry::seq).containsExactly(1L, 2L, 3L, 4L, 5L);
            assertThat(w.collectives()).isEqualTo(5);
            for (TraceEntry e : coll) {
                assertThat(e.state()).as("%s on rank %d", e.op(), r).isEqualTo(OpTrace.State.COMPLETED);
                assertThat(e.path()).as("%s on rank %d", e.op(), r).isIn("zero_copy", "transport");
                assertThat(e.fingerprint()).isNotZero();
                assertThat(e.startedEpochNanos()).isGreaterThanOrEqualTo(e.calledEpochNanos());
                assertThat(e.endedEpochNanos()).isGreaterThanOrEqualTo(e.startedEpochNanos());
                assertThat(e.error()).isNull();
                // one connection per peer (HCOMM_CHANNELS 1); shared memory moves a zero-copy op over none
                assertThat(e.channels()).as("%s on rank %d", e.op(), r).isEqualTo(e.path().equals("zero_copy") ? 0 : 1);
            }
            TraceEntry ar = coll.get(0);
            assertThat(List.of(ar.type(), ar.reduction(), ar.count(), ar.bytes(), ar.peer(), ar.stream()))
                    .containsExactly("FLOAT32", "SUM", 1000L, 4000L, -1, 0);
            TraceEntry bc = coll.get(1);
            assertThat(List.of(bc.type(), bc.count(), bc.peer())).containsExactly("INT64", 17L, 1);
            assertThat(bc.reduction()).isNull();
            TraceEntry red = coll.get(3);
            assertThat(List.of(red.reduction(), red.peer())).containsExactly("MAX", 2);
            assertThat(red.stream()).as("the stream's op").isPositive();
            // every rank numbered and fingerprinted the same op alike
            for (int k = 0; k < coll.size(); k++) {
                TraceEntry other = dumps.get(0).comms().get(0).entries().stream().filter(e -> e.kind() == OpTrace.Kind.COLLECTIVE).toList().get(k);
                assertThat(coll.get(k).fingerprint()).isEqualTo(other.fingerprint());
            }
            List<TraceEntry> p2p = w.entries().stream().filter(e -> e.kind() == OpTrace.Kind.P2P).toList();
            if (r == 0) {
                assertThat(p2p).hasSize(1);
                TraceEntry sd = p2p.get(0);
                assertThat(List.of(sd.op(), sd.peer(), sd.tag(), sd.bytes())).containsExactly("send", 1, 5, 65536L);
                assertThat(sd.state()).isEqualTo(OpTrace.State.COMPLETED);
                assertThat(sd.path()).isIn("shm", "tcp");
                assertThat(sd.channels()).isEqualTo(1);
            } else if (r == 1) {
                assertThat(p2p).hasSize(1);
                TraceEntry rv = p2p.get(0);
                assertThat(List.of(rv.op(), rv.peer(), rv.tag(), rv.bytes())).as("the matched source").containsExactly("recv", 0, 5, 65536L);
                assertThat(rv.state()).isEqualTo(OpTrace.State.COMPLETED);
            } else {
                assertThat(p2p).isEmpty();
            }
        }
        TraceAnalysis a = TraceAnalysis.of(dumps);
        assertThat(a.findings()).isEmpty();
        assertThat(a.summary()).contains("agree");
    }

    /**
     * With HCOMM_CHANNELS=2 a large message is striped over both connections to its peer, and its record says so on
     * both sides, as does a collective's; a small one stays on the primary link.
     */
    @Test
    void aStripedMessageRecordsTheChannelsItWentOver() throws Exception {
        long big = 16L << 20;
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.transport(CommConfig.Transport.TCP).channels(2), h -> {
            Communicator c = h.world();
            int me = c.rank();
            // the rail opens once the primary link is up, in the background
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> h.linksTo(1 - me).size() == 2);
            try (Arena arena = Arena.ofShared()) {
                MemorySegment m = arena.allocate(big);
                if (me == 0) {
                    for (long i = 0; i < big; i += 8) m.set(ValueLayout.JAVA_LONG, i, i);
                    c.send(m, 1, 1);
                    c.send(m.asSlice(0, 8), 1, 2);
                } else {
                    c.recv(m, 0, 1);
                    for (long i = 0; i < big; i += 8) assertThat(m.get(ValueLayout.JAVA_LONG, i)).isEqualTo(i);
                    c.recv(m.asSlice(0, 8), 0, 2);
                }
                MemorySegment f = arena.allocate(big);
                c.allReduce(f, f, big / 4, DataType.FLOAT32, ReduceOp.SUM);
                c.barrier();
                c.dumpTrace(file(dir, me));
            }
        });
        for (TraceDump d : read(dir, 2)) {
            List<TraceEntry> es = d.comms().get(0).entries();
            List<TraceEntry> p2p = es.stream().filter(e -> e.kind() == OpTrace.Kind.P2P).toList();
            assertThat(p2p).extracting(TraceEntry::bytes).as("rank %d", d.rank()).containsExactly(big, 8L);
            assertThat(p2p).extracting(TraceEntry::channels).as("rank %d", d.rank()).containsExactly(2, 1);
            TraceEntry ar = es.stream().filter(e -> e.op().equals("allReduce")).findFirst().orElseThrow();
            assertThat(ar.path()).isEqualTo("transport");
            assertThat(ar.channels()).as("rank %d: the all-reduce's halves", d.rank()).isEqualTo(2);
        }
    }

    /** One-sided ops go into the same record: direct in shared memory on one host, or as frames over TCP. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = CommConfig.Transport.class, names = {"AUTO", "TCP"})
    void oneSidedOpsAreRecordedWithTheirTargetAndPath(CommConfig.Transport transport) throws Exception {
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.transport(transport), h -> {
            Communicator c = h.world();
            int me = c.rank();
            try (Arena arena = Arena.ofShared(); Window w = c.allocateWindow(4096)) {
                if (me == 0) {
                    w.lock(1, LockType.SHARED);
                    MemorySegment block = arena.allocate(1024);
                    w.put(block, 1, 0);
                    w.get(block, 1, 1024);
                    w.accumulate(arena.allocate(64), 1, 2048, DataType.INT64, ReduceOp.SUM);
                    assertThat(w.fetchAndOp(5, 1, 0, DataType.INT64, ReduceOp.SUM)).isZero();
                    w.unlock(1);
                }
                c.barrier();
                c.dumpTrace(file(dir, me));
            }
        });
        List<TraceEntry> rma = read(dir, 2).get(0).comms().get(0).entries().stream().filter(e -> e.kind() == OpTrace.Kind.ONE_SIDED).toList();
        assertThat(rma).extracting(TraceEntry::op).containsExactly("put", "get", "accumulate", "fetchAndOp");
        assertThat(rma).extracting(TraceEntry::bytes).containsExactly(1024L, 1024L, 64L, 8L);
        assertThat(rma).allSatisfy(e -> {
            assertThat(e.peer()).isEqualTo(1);
            assertThat(e.state()).isEqualTo(OpTrace.State.COMPLETED);
            assertThat(e.path()).isEqualTo(transport == CommConfig.Transport.TCP ? "tcp" : "shm_direct");
        });
        assertThat(rma.get(2).type()).isEqualTo("INT64");
        assertThat(rma.get(2).reduction()).isEqualTo("SUM");
        assertThat(rma.get(2).count()).isEqualTo(8);
        assertThat(read(dir, 2).get(1).comms().get(0).entries()).noneMatch(e -> e.kind() == OpTrace.Kind.ONE_SIDED);
    }

    @Test
    void aMismatchedCollectiveIsNamedWithTheRankThatDiffers() throws Exception {
        int n = 3;
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int me = c.rank();
            try (Arena arena = Arena.ofShared()) {
                MemorySegment buf = arena.allocate(1024 * 4);
                c.allReduce(buf, buf, 1024, DataType.INT32, ReduceOp.SUM);
                c.allReduce(buf, buf, 1024, DataType.INT32, ReduceOp.SUM);
                if (me == 2) {
                    assertThatThrownBy(() -> c.broadcast(buf, 1024, DataType.INT32, 0)).isInstanceOf(CollectiveMismatchException.class);
                } else {
                    assertThatThrownBy(() -> c.allReduce(buf, buf, 1024, DataType.INT32, ReduceOp.SUM)).isInstanceOf(CollectiveMismatchException.class);
                }
                c.dumpTrace(file(dir, me));
            }
        });
        TraceAnalysis a = TraceAnalysis.of(read(dir, n));
        assertThat(a.findings()).isNotEmpty();
        TraceAnalysis.Finding f = a.findings().get(0);
        assertThat(f.kind()).isEqualTo("mismatch");
        assertThat(f.commId()).isZero();
        assertThat(f.seq()).isEqualTo(3);
        assertThat(f.ranks()).containsExactly(2);
        assertThat(String.join("\n", f.lines())).contains("ranks 0, 1 called allReduce (count 1024 INT32 SUM")
                .contains("rank 2 called broadcast (count 1024 INT32, root 0");
        assertThat(a.summary()).isEqualTo("first divergence: communicator 0, collective #3 (mismatch, ranks [2])");
    }

    /**
     * Rank 2 skips the third all-reduce and waits for a message instead: ranks 0 and 1 time out in it and write their
     * records to HCOMM_TRACE_DIR by themselves, and rank 2 writes its own when their request reaches it through the
     * store; the analysis finds rank 2 behind at collective #3, waiting in its receive.
     */
    @Test
    void aRankThatSkipsAnOpIsFoundBehindFromTheDumpsATimeoutTriggers() throws Exception {
        int n = 3;
        Ranks.runThreads(n, Duration.ofMinutes(2), b -> b.timeout(Duration.ofSeconds(3))
                .monitor(MonitorConfig.DEFAULT.withTraceDir(dir)), h -> {
            Communicator c = h.world();
            int me = c.rank();
            try (Arena arena = Arena.ofShared()) {
                MemorySegment buf = arena.allocate(256 * 8);
                c.allReduce(buf, buf, 256, DataType.FLOAT64, ReduceOp.SUM);
                c.allReduce(buf, buf, 256, DataType.FLOAT64, ReduceOp.SUM);
                MemorySegment word = arena.allocate(8);
                if (me == 2) {
                    c.recvAsync(word, 0, 9).await(Duration.ofSeconds(60));
                } else {
                    assertThatThrownBy(() -> c.allReduce(buf, buf, 256, DataType.FLOAT64, ReduceOp.SUM)).isInstanceOf(CommTimeoutException.class);
                    if (me == 0) {
                        // rank 2 answers the request within a poll period or two; then let it go
                        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> Files.exists(file(dir, 2)));
                        c.send(word, 2, 9);
                    }
                }
            }
        });
        List<TraceDump> dumps = read(dir, n);
        for (int r = 0; r < 2; r++) {
            // its own timeout's dump, or the one the other's request made after it (a file holds the latest)
            assertThat(dumps.get(r).reason()).matches("(requested: rank [01] )?timeout: rank [01]: allReduce \\(collective #3.*");
            TraceEntry third = dumps.get(r).comms().get(0).entries().stream().filter(e -> e.seq() == 3).findFirst().orElseThrow();
            assertThat(third.state()).isEqualTo(OpTrace.State.FAILED);
            assertThat(third.error()).startsWith("CommTimeoutException: rank " + r + ": allReduce");
        }
        assertThat(dumps.get(2).reason()).matches("requested: rank [01] timeout: .*");
        TraceAnalysis a = TraceAnalysis.of(dumps);
        TraceAnalysis.Finding f = a.findings().get(0);
        assertThat(f.kind()).isEqualTo("behind");
        assertThat(f.seq()).isEqualTo(3);
        assertThat(f.ranks()).containsExactly(2);
        assertThat(String.join("\n", f.lines())).contains("rank 2 never called collective #3 (allReduce (count 256 FLOAT64 SUM")
                .contains("rank 2: in recv from rank 0 (tag 9, 8 B)");
    }
}
