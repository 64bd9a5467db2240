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
     * caller's memory, every element checked on every rank. Over shared memory and CMA puts, gets and atomics go
     * straight into the targets' memory through UCX (the counters say so), accumulates through the targets' progress
     * engines; over UCX's TCP alone, where UCX would emulate RMA with messages, everything keeps to the frames.
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
        if (tls.equals("tcp")) {
            // UCX would emulate RMA and atomics with messages over TCP alone: the windows keep to the frames
            assertThat(viaUcx).as("one-sided ops through UCX over its TCP alone").isZero();
        } else {
            // ranks 1-3 alone fetchAndOp rank 0's counter 20 000 times each, per kind of window
            assertThat(viaUcx).as("one-sided ops through UCX, all ranks").isGreaterThan(2 * 3 * 20_000);
        }
        Ranks.assertTransports(out, "ucx");
        out.getFirst().output().lines().filter(l -> l.contains(" PASS ") || l.contains("UCX ONE-SIDED"))
                .forEach(l -> System.out.println("UcxTransportTest one-sided " + tls + ": " + l));
    }

    /**
     * Three rank JVMs over UCX hammer one word of rank 0 with fetch-and-adds and accumulates, 32- and 64-bit, and check
     * the sum, then write and read seeded random stripes of each other's blocks from native memory and heap arrays,
     * every byte checked ({@link io.hcomm4j.testing.UcxWindowWorker}). Over shared memory and CMA the fetch-and-adds and
     * the native puts and gets go through UCX's atomics and RMA, the rest through the frames: the two roads stay atomic
     * with each other and in order (the counters say both were taken); over UCX's TCP alone everything keeps to the
     * frames.
     */
    @ParameterizedTest
    @ValueSource(strings = {"posix,cma", "tcp"})
    void windowOpsMixUcxAndFramesAndStayAtomicAndOrdered(String tls) throws Exception {
        List<Ranks.Outcome> out = Ranks.run(3, io.hcomm4j.testing.UcxWindowWorker.class, Map.of("HCOMM_TRANSPORT", "ucx", "UCX_TLS", tls),
                Duration.ofMinutes(3), "2000");
        for (Ranks.Outcome o : out) {
            assertThat(o.output()).contains("rank " + o.rank() + " MIX OK");
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("UCX ONE-SIDED OPS (\\d+)").matcher(o.output());
            assertThat(m.find()).as(o.output()).isTrue();
            long via = Long.parseLong(m.group(1));
            if (tls.equals("tcp")) assertThat(via).as("rank %d over UCX's TCP alone", o.rank()).isZero();
            else assertThat(via).as("rank %d: one-sided ops through UCX", o.rank()).isGreaterThanOrEqualTo(o.rank() == 0 ? 1 : 2000);
        }
        Ranks.assertTransports(out, "ucx");
    }


    /**
     * A window's target killed while the others put, get and fetchAndOp it (through UCX's RMA over shared memory and
     * CMA, through the frames over UCX's TCP): PeerFailedException, no hang.
     */
    @ParameterizedTest
    @CsvSource({"alloc, tcp", "create, tcp", "alloc, 'posix,cma'", "create, 'posix,cma'"})
    void aKilledWindowTargetFailsTheOpsOnIt(String windows, String tls) throws Exception {
        RmaFailureTest.killTargetAndExpectFailures(windows, "ucx", Map.of("UCX_TLS", tls));
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

    /**
     * {@code HCOMM_TRANSPORT=auto-ucx} on 4 thread ranks placed on two "hosts" ({@code HCOMM_HOST_ID}), contiguous and
     * interleaved: same-host pairs take the shared-memory rings, the others UCX (over what {@code UCX_TLS} of the test JVM
     * allows); the two-level collectives (the cost model's choice across hosts) and the seeded data-movement sequence
     * give the right answer, every element on every rank; large messages between hosts go through UCX's tag matching;
     * a per-host communicator uses the zero-copy collectives, which {@code ucx} alone never does.
     */
    @ParameterizedTest(name = "hosts of the ranks: {0}")
    @ValueSource(strings = {"0,0,1,1", "0,1,0,1"})
    void autoUcxTakesSharedMemoryWithinAHostAndUcxBetweenHosts(String layout) throws Exception {
        int[] labels = HierarchicalCollectivesTest.labels(layout);
        Ranks.runThreadsPerRank(labels.length, Duration.ofMinutes(4),
                (r, b) -> b.hostId("host-" + labels[r]).transport(CommConfig.Transport.AUTO_UCX), h -> {
            Communicator c = h.world();
            int me = c.rank();
            HierarchicalCollectivesTest.assertTopology(c, labels);
            HierarchicalCollectivesTest.touchEveryPeer(c);
            for (int p = 0; p < c.size(); p++) {
                if (p != me) assertThat(h.transportTo(p)).as("rank %d to %d", me, p).isEqualTo(labels[p] == labels[me] ? "shm" : "ucx");
            }
            long[] before = io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c);
            HierarchicalCollectivesTest.hierSequence(c, 8_2026L + layout.hashCode());
            DataMovementCollectivesTest.sequence(c, 9_2026L + layout.hashCode(), 20);
            long[] sent = {io.hcomm4j.comm.TransportProbe.ucxTaggedMessages(c)[0] - before[0]};
            c.allReduce(sent, ReduceOp.SUM);
            assertThat(sent[0]).as("large messages between the hosts through UCX's tag matching").isPositive();
            try (Communicator host = c.split(labels[me], me)) {
                float[] v = new float[1009];
                java.util.Arrays.fill(v, me + 1);
                host.allReduce(v, ReduceOp.SUM);
                float want = 0;
                for (int r = 0; r < labels.length; r++) if (labels[r] == labels[me]) want += r + 1;
                for (int i = 0; i < v.length; i++) assertThat(v[i]).as("per-host allReduce, element %d", i).isEqualTo(want);
                assertThat(io.hcomm4j.comm.ZeroCopyProbe.zeroCopyOps(host)).as("zero-copy ops of the per-host communicator").isPositive();
            }
        });
    }

    private static void check(List<Ranks.Outcome> out) {
        for (Ranks.Outcome o : out) {
            for (String s : P2pProcessTest.ALL) assertThat(o.output()).contains("rank " + o.rank() + " PASS " + s);
            assertThat(o.output()).contains("rank " + o.rank() + " PASS reductions").contains("rank " + o.rank() + " PASS data movement");
        }
    }
}
