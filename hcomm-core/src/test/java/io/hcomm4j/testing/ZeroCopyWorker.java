package io.hcomm4j.testing;

import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.ZeroCopyCollectivesTest;
import io.hcomm4j.bootstrap.TcpStore;
import io.hcomm4j.comm.ZeroCopyProbe;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * One rank (a separate JVM) of the zero-copy jobs.
 * <ul>
 *   <li>{@code sequence <seed>}: ZeroCopyCollectivesTest's checked sequence (a diagonal of its type x op grid), then
 *       {@code PASS}.</li>
 *   <li>{@code kill <bytes>}: every rank loops all-reduces of registered buffers ({@code LOOPING} after the first one
 *       checked); the test kills the last rank at some point; the others print {@code DETECTED <epoch ms> ranks=[..]}
 *       when the op they are in fails with PeerFailedException, and exit 0.</li>
 *   <li>{@code absent}: the last rank never calls the all-reduce the others wait in ({@code READY} once they could
 *       have); the test kills it; the others print {@code DETECTED}.</li>
 * </ul>
 * In both, a survivor closes its session only once every survivor has reported ({@link #reported}): a survivor that
 * closes earlier is, to one still waiting in the op, a second rank gone, and is rightly named failed too.
 */
public final class ZeroCopyWorker {
    public static void main(String[] args) throws Exception {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator c = hcomm.world();
            int me = c.rank();
            int n = c.size();
            switch (args[0]) {
                case "sequence" -> {
                    long t0 = System.nanoTime();
                    ZeroCopyCollectivesTest.sequence(c, Long.parseLong(args[1]), 30, 3);
                    System.out.printf("rank %d PASS (%d ms, %d ops in shared memory)%n", me, (System.nanoTime() - t0) / 1_000_000,
                            ZeroCopyProbe.zeroCopyOps(c));
                    Ranks.printTransports(hcomm);
                    c.barrier();
                }
                case "kill" -> {
                    long count = Long.parseLong(args[1]) / 4;
                    try (RegisteredBuffer s = c.memory().allocate(DataType.FLOAT32, count); RegisteredBuffer r = c.memory().allocate(DataType.FLOAT32, count)) {
                        MemorySegment send = s.segment();
                        for (long i = 0; i < count; i++) send.setAtIndex(ValueLayout.JAVA_FLOAT, i, me + 1);
                        c.allReduce(send, r.segment(), count, DataType.FLOAT32, ReduceOp.SUM);
                        float want = n * (n + 1) / 2f;
                        for (long i = 0; i < count; i += 1001) {
                            if (r.segment().getAtIndex(ValueLayout.JAVA_FLOAT, i) != want) throw new AssertionError("element " + i);
                        }
                        System.out.println("LOOPING");
                        System.out.flush();
                        try {
                            for (long it = 0; ; it++) c.allReduce(send, r.segment(), count, DataType.FLOAT32, ReduceOp.SUM);
                        } catch (PeerFailedException e) {
                            System.out.printf("DETECTED %d ranks=%s%n", System.currentTimeMillis(), e.failedRanks());
                            System.out.println(e.getMessage());
                        }
                        reported(me, n - 1);
                    }
                }
                case "absent" -> {
                    try (RegisteredBuffer s = c.memory().allocate(DataType.INT32, 1000)) {
                        c.allReduce(s.segment(), s.segment(), 1000, DataType.INT32, ReduceOp.SUM);
                        if (me == n - 1) {
                            System.out.println("READY");
                            System.out.flush();
                            Thread.sleep(600_000);
                            return;
                        }
                        System.out.println("WAITING");
                        System.out.flush();
                        try {
                            c.allReduce(s.segment(), s.segment(), 1000, DataType.INT32, ReduceOp.SUM);
                            System.out.println("NOT DETECTED");
                        } catch (PeerFailedException e) {
                            System.out.printf("DETECTED %d ranks=%s%n", System.currentTimeMillis(), e.failedRanks());
                            System.out.println(e.getMessage());
                        }
                        reported(me, n - 1);
                    }
                }
                default -> throw new IllegalArgumentException(args[0]);
            }
        }
        System.out.println("CLOSED");
    }

    /**
     * A store barrier of the {@code survivors} (ranks 0 ..survivors-1) after each has reported, so none closes its
     * session while another still waits in the failed op. Rank 0 hosts the store and closes last: it says it has
     * reported, then waits for every other survivor's word; the others wait for rank 0's word first and say theirs last
     * (their final store call, so rank 0 closing the store after it cannot cut one short).
     */
    private static void reported(int me, int survivors) {
        Duration wait = Duration.ofSeconds(60);
        InetSocketAddress at = new InetSocketAddress(System.getenv("MASTER_ADDR"), Integer.parseInt(System.getenv("MASTER_PORT")));
        try (TcpStore store = TcpStore.connect(at, System.getenv("HCOMM_SECRET"), wait)) {
            if (me == 0) {
                store.set("test/reported/0", new byte[] {1});
                for (int r = 1; r < survivors; r++) store.get("test/reported/" + r, wait);
            } else {
                store.get("test/reported/0", wait);
                store.set("test/reported/" + me, new byte[] {1});
            }
        }
    }
}
