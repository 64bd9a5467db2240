package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.P2pWorker;
import io.hcomm4j.testing.Ranks;
import io.hcomm4j.ucx.Ucp;
import io.hcomm4j.ucx.UcpContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code HCOMM_TRANSPORT=ucx} between separate JVM processes, over the two kinds of UCX transport this machine has:
 * TCP ({@code UCX_TLS=tcp}, what verbs stand in for here) and shared memory with cross-memory attach
 * ({@code UCX_TLS=posix,cma}). Every point-to-point scenario and the seeded random collective sequences of
 * {@link P2pProcessTest}, each rank checking every element, and every pair's link must be UCX. Skipped, saying why,
 * where libucp is not installed (.ci/run installs it).
 */
class UcxTransportTest {
    @BeforeAll
    static void ucxInstalled() {
        Assumptions.assumeTrue(Ucp.available(), "UCX (libucp.so.0, 1." + Ucp.MIN_MINOR + "+) is not installed: apt-get install libucx0");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,cma"})
    void twoRanksEveryScenario(String tls) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(2, P2pWorker.class, Map.of("HCOMM_TRANSPORT", "ucx", "UCX_TLS", tls),
                Duration.ofMinutes(5), P2pProcessTest.ALL);
        check(out);
        Ranks.assertTransports(out, "ucx");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,cma"})
    void fourRanksEveryScenario(String tls) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(4, P2pWorker.class, Map.of("HCOMM_TRANSPORT", "ucx", "UCX_TLS", tls),
                Duration.ofMinutes(6), P2pProcessTest.ALL);
        check(out);
        Ranks.assertTransports(out, "ucx");
    }

    /**
     * Every one-sided scenario of {@link RmaProcessTest} on 4 rank JVMs over UCX, with windows from the pool and over the
     * caller's memory: puts, gets and atomics go straight into the targets' memory through UCX (the counters say so),
     * accumulates through the targets' progress engines, every element checked on every rank.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,cma"})
    void fourRanksEveryOneSidedScenario(String tls) throws Exception {
        String[] args = new String[RmaProcessTest.ALL.length + 1];
        args[0] = "alloc+create";
        System.arraycopy(RmaProcessTest.ALL, 0, args, 1, RmaProcessTest.ALL.length);
        List<Ranks.Outcome> out = Ranks.run(4, io.hcomm4j.testing.RmaWorker.class, Map.of("HCOMM_TRANSPORT", "ucx", "UCX_TLS", tls),
                Duration.ofMinutes(6), args);
        long viaUcx = 0;
        for (Ranks.Outcome o : out) {
            for (String kind : new String[] {"alloc", "create"}) {
                for (String s : RmaProcessTest.ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + kind + " " + s + " (");
            }
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("UCX ONE-SIDED OPS (\\d+)").matcher(o.output());
            assertThat(m.find()).as(o.output()).isTrue();
            viaUcx += Long.parseLong(m.group(1));
        }
        // ranks 1-3 alone fetchAndOp rank 0's counter 20 000 times each, per kind of window
        assertThat(viaUcx).as("one-sided ops through UCX, all ranks").isGreaterThan(2 * 3 * 20_000);
        Ranks.assertTransports(out, "ucx");
        out.getFirst().output().lines().filter(l -> l.contains(" PASS ") || l.contains("UCX ONE-SIDED"))
                .forEach(l -> System.out.println("UcxTransportTest one-sided " + tls + ": " + l));
    }

    /**
     * Three thread ranks over UCX (what {@code UCX_TLS} of the test JVM allows) hammer one word of rank 0 with
     * fetch-and-adds (UCX's atomics) and accumulates (the target's progress engine), 32- and 64-bit, and check the sum:
     * the two roads are atomic with each other. Then seeded random puts and gets from native memory and heap arrays
     * (the two roads again), checked byte for byte after a fence; a get right after a put to the same bytes sees it.
     */
    @Test
    void windowOpsMixUcxAndFramesAndStayAtomicAndOrdered() throws Exception {
        int n = 3, rounds = 2_000;
        Ranks.runThreads(n, Duration.ofSeconds(120), b -> b.transport(CommConfig.Transport.UCX), h -> {
            Communicator c = h.world();
            long[] before = io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c);
            try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofShared(); Window w = c.allocateWindow(1 << 20)) {
                java.lang.foreign.MemorySegment one = a.allocate(8).fill((byte) 0);
                one.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, 1);
                java.lang.foreign.MemorySegment oneInt = a.allocate(4);
                oneInt.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 1);
                w.lockAll();
                for (int i = 0; i < rounds; i++) {
                    if (i % 2 == 0) {
                        w.fetchAndOpAsync(1, 0, 0, DataType.INT64, ReduceOp.SUM);
                        w.fetchAndOpAsync(1, 0, 8, DataType.INT32, ReduceOp.SUM);
                    } else {
                        w.accumulateAsync(one, 0, 0, DataType.INT64, ReduceOp.SUM);
                        w.accumulateAsync(oneInt, 0, 8, DataType.INT32, ReduceOp.SUM);
                    }
                }
                w.flushAll();
                w.unlockAll();
                w.fence();
                assertThat(w.fetchAndOp(0, 0, 0, DataType.INT64, ReduceOp.NO_OP)).as("64-bit sum at rank 0").isEqualTo((long) n * rounds);
                assertThat(w.fetchAndOp(0, 0, 8, DataType.INT32, ReduceOp.NO_OP)).as("32-bit sum at rank 0").isEqualTo((long) n * rounds);
                w.fence();
                // each rank writes its own stripe of every other rank's block, through both roads, then all read all
                java.util.Random rnd = new java.util.Random(20_05 + c.rank());
                int stripe = (1 << 20) / n;
                for (int t = 0; t < n; t++) {
                    if (t == c.rank()) continue;
                    for (int off = 0; off < stripe; ) {
                        int len = Math.min(stripe - off, 1 + rnd.nextInt(64 << 10));
                        byte[] bytes = pattern(c.rank(), t, off, len);
                        java.lang.foreign.MemorySegment src = rnd.nextBoolean() ? java.lang.foreign.MemorySegment.ofArray(bytes)
                                : a.allocate(len).copyFrom(java.lang.foreign.MemorySegment.ofArray(bytes));
                        long at = (long) c.rank() * stripe + off;
                        w.put(src, t, at);
                        java.lang.foreign.MemorySegment back = rnd.nextBoolean() ? java.lang.foreign.MemorySegment.ofArray(new byte[len]) : a.allocate(len);
                        w.get(back, t, at); // no flush between: the get sees the put
                        assertThat(back.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).as("rank %d reads back its put to rank %d at %d", c.rank(), t, at).isEqualTo(bytes);
                        off += len;
                    }
                }
                w.fence();
                for (int t = 0; t < n; t++) {
                    java.lang.foreign.MemorySegment all = a.allocate(1 << 20);
                    w.get(all, t, 0);
                    w.flush(t);
                    for (int o = 0; o < n; o++) {
                        if (o == t) continue;
                        byte[] want = pattern(o, t, 0, stripe);
                        assertThat(all.asSlice((long) o * stripe, stripe).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE))
                                .as("rank %d's stripe in rank %d's block, read by rank %d", o, t, c.rank()).isEqualTo(want);
                    }
                }
                w.fence();
            }
            long[] after = io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c);
            assertThat(after[2] - before[2]).as("rank %d: one-sided ops through UCX", c.rank()).isGreaterThanOrEqualTo(c.rank() == 0 ? 1 : rounds);
        });
        assertThat(UcpContext.openHandles()).as("UCX handles after close").isZero();
    }

    /** Bytes rank {@code from} writes into rank {@code to}'s block: a function of both and the position. */
    private static byte[] pattern(int from, int to, int off, int len) {
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++) b[i] = (byte) ((off + i) * 31 + from * 7 + to * 13 + ((off + i) >>> 8));
        return b;
    }

    /** A window's target killed while the others put, get and fetchAndOp it through UCX: PeerFailedException, no hang. */
    @ParameterizedTest
    @ValueSource(strings = {"alloc", "create"})
    void aKilledWindowTargetFailsTheOpsOnIt(String windows) throws Exception {
        RmaFailureTest.killTargetAndExpectFailures(windows, "ucx", Map.of("UCX_TLS", "tcp"));
    }

    /** A rank killed with SIGKILL is reported to the ones waiting for it, over UCX's TCP and its shared memory. */
    @ParameterizedTest
    @CsvSource({"2, tcp", "4, tcp", "2, 'posix,cma'"})
    void aKilledPeerIsReportedWithinSeconds(int n, String tls) throws Exception {
        PeerFailureTest.killAndExpectDetection(n, Map.of("HCOMM_TIMEOUT", "120s", "HCOMM_TRANSPORT", "ucx", "UCX_TLS", tls), "ucx");
    }

    /**
     * 50 sessions over UCX, one after the other in this JVM (2 thread ranks, a message each way, an all-reduce, a window
     * and an atomic through UCX, every element checked): no UCX context, worker, endpoint, registered memory or remote
     * key, no hcomm thread and no descriptor stays behind, also when the session closes a window its owner left open.
     */
    @Test
    void fiftyInitCloseCyclesLeaveNoUcxHandlesThreadsOrDescriptors() throws Exception {
        long fdsAfterWarmup = -1;
        for (int i = 0; i < 50; i++) {
            int round = i;
            Ranks.runThreads(2, Duration.ofSeconds(60), b -> b.transport(CommConfig.Transport.UCX), h -> {
                Communicator c = h.world();
                int peer = 1 - c.rank();
                int[] in = new int[3];
                CommFuture<Status> r = c.recvAsync(in, peer, 0);
                c.send(new int[] {c.rank(), round, 7}, peer, 0);
                r.await();
                assertThat(in).containsExactly(peer, round, 7);
                long[] sum = {c.rank() + 1L, round};
                c.allReduce(sum, ReduceOp.SUM);
                assertThat(sum).containsExactly(3L, 2L * round);
                // a window's registered memory and remote keys go too; every other round the session closes it
                Window w = c.allocateWindow(64);
                w.fence();
                assertThat(w.fetchAndOp(round, peer, 0, DataType.INT64, ReduceOp.SUM)).isZero();
                w.fence();
                assertThat(w.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0)).isEqualTo(round);
                if (round % 2 == 0) w.close();
            });
            long deadline = System.nanoTime() + 5_000_000_000L;
            while ((LifecycleTest.hcommThreads() > 0 || UcpContext.openHandles() > 0) && System.nanoTime() < deadline) Thread.sleep(5);
            assertThat(LifecycleTest.hcommThreads()).as("hcomm threads alive after close, round %d", i).isZero();
            assertThat(UcpContext.openHandles()).as("UCX handles open after close, round %d", i).isZero();
            if (i == 4) fdsAfterWarmup = LifecycleTest.openFds();
        }
        assertThat(LifecycleTest.openFds()).as("open file descriptors").isLessThanOrEqualTo(fdsAfterWarmup + 4);
    }

    /**
     * Large messages into native memory go through UCX's tag matching straight between the buffers (not as chunks on
     * the stream): 64 KiB to 16 MiB, from native memory and from a heap array, receive posted first and last, every byte
     * checked on both ranks; an all-reduce of 4 MiB on top. The counters say the tag path carried them. Thread ranks:
     * over what {@code UCX_TLS} of the test JVM allows (unset: UCX's choice, shared memory here; ./test's UCX pass: tcp).
     */
    @Test
    void largeMessagesGoThroughUcxTagMatching() throws Exception {
        String tls = "UCX_TLS=" + System.getenv().getOrDefault("UCX_TLS", "(unset)");
        Ranks.runThreads(2, Duration.ofSeconds(120), b -> b.transport(CommConfig.Transport.UCX), h -> {
            Communicator c = h.world();
            int peer = 1 - c.rank();
            long[] before = io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c);
            int messages = 0;
            try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofShared()) {
                for (int size = 64 << 10; size <= 16 << 20; size *= 4) {
                    for (boolean recvFirst : new boolean[] {true, false}) {
                        java.lang.foreign.MemorySegment out = a.allocate(size), in = a.allocate(size);
                        java.util.Random rnd = new java.util.Random(size * 31L + c.rank());
                        for (long i = 0; i < size; i += 8) out.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
                        byte[] heap = new byte[size];
                        rnd.nextBytes(heap);
                        int tag = size / 1024 + (recvFirst ? 1 : 0);
                        CommFuture<Status> r = recvFirst ? c.recvAsync(in, peer, tag) : null;
                        if (!recvFirst) c.barrier(); // the message waits unexpected (an RTS) before its receive is posted
                        CommFuture<Void> s = c.sendAsync(out, peer, tag);
                        if (r == null) r = c.recvAsync(in, peer, tag);
                        r.await();
                        s.await();
                        java.util.Random theirs = new java.util.Random(size * 31L + peer);
                        for (long i = 0; i < size; i += 8) {
                            long want = theirs.nextLong();
                            if (in.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i) != want) {
                                throw new AssertionError(tls + " " + size + " B: byte " + i + " differs");
                            }
                        }
                        // a heap array's bytes are copied to native memory for UCX's send
                        byte[] theirHeap = new byte[size];
                        theirs.nextBytes(theirHeap);
                        CommFuture<Status> rh = c.recvAsync(in, peer, tag + 100_000);
                        c.send(heap, peer, tag + 100_000);
                        rh.await();
                        assertThat(in.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).as("%s %d B from a heap array", tls, size).isEqualTo(theirHeap);
                        messages += 2;
                    }
                }
                double[] v = new double[1 << 19];
                java.util.Arrays.fill(v, c.rank() + 1.5);
                c.allReduce(v, ReduceOp.SUM);
                for (double x : v) assertThat(x).isEqualTo(4.0);
            }
            long[] after = io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c);
            assertThat(after[0] - before[0]).as("%s: sent through UCX's tag matching", tls).isGreaterThanOrEqualTo(messages);
            assertThat(after[1] - before[1]).as("%s: received through UCX's tag matching", tls).isGreaterThanOrEqualTo(messages);
        });
    }

    /**
     * The memory pool's mappings are registered with UCX as the pool makes them, and a large message from or into a pool
     * buffer names its registration: 256 KiB to 8 MiB between pool buffers, every byte checked, the counters saying
     * both sides used the registrations; closing the session leaves no registration behind.
     */
    @Test
    void poolBuffersAreRegisteredWithUcxAheadOfUse() throws Exception {
        Ranks.runThreads(2, Duration.ofSeconds(120), b -> b.transport(CommConfig.Transport.UCX), h -> {
            Communicator c = h.world();
            int peer = 1 - c.rank();
            long[] before = io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c);
            int messages = 0;
            for (int size = 256 << 10; size <= 8 << 20; size *= 2) {
                try (RegisteredBuffer out = c.memory().allocate(size); RegisteredBuffer in = c.memory().allocate(size)) {
                    java.util.Random rnd = new java.util.Random(size * 17L + c.rank());
                    for (long i = 0; i < size; i += 8) out.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
                    CommFuture<Status> r = c.recvAsync(in.segment(), peer, size / 1024);
                    c.send(out.segment(), peer, size / 1024);
                    r.await();
                    java.util.Random theirs = new java.util.Random(size * 17L + peer);
                    for (long i = 0; i < size; i += 8) {
                        assertThat(in.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i)).as("%d B, byte %d", size, i)
                                .isEqualTo(theirs.nextLong());
                    }
                    messages++;
                }
            }
            long[] after = io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c);
            assertThat(after[4]).as("pool mappings registered with UCX").isPositive();
            // each message: this rank's send and its receive of the peer's, both from pool buffers
            assertThat(after[3] - before[3]).as("large messages naming a registration").isGreaterThanOrEqualTo(2L * messages);
        });
        assertThat(UcpContext.openHandles()).as("UCX handles after close").isZero();
    }

    private static void check(List<Ranks.Outcome> out) {
        for (Ranks.Outcome o : out) {
            for (String s : P2pProcessTest.ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + s);
            assertThat(o.output()).contains("rank " + o.rank() + " PASS reductions").contains("rank " + o.rank() + " PASS data movement");
        }
    }
}
