package io.hcomm4j.testing;

import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.ZeroCopyCollectivesTest;
import io.hcomm4j.comm.ZeroCopyProbe;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One rank (a separate JVM) of the zero-copy jobs.
 * <ul>
 *   <li>{@code sequence <seed>}: ZeroCopyCollectivesTest's checked sequence, then {@code PASS}.</li>
 *   <li>{@code kill <bytes>}: every rank loops all-reduces of registered buffers ({@code LOOPING} after the first one
 *       checked); the test kills the last rank at some point; the others print {@code DETECTED <epoch ms> ranks=[..]}
 *       when the op they are in fails with PeerFailedException, and exit 0.</li>
 *   <li>{@code absent}: the last rank never calls the all-reduce the others wait in ({@code READY} once they could
 *       have); the test kills it; the others print {@code DETECTED}.</li>
 * </ul>
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
                    ZeroCopyCollectivesTest.sequence(c, Long.parseLong(args[1]), 30);
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
                    }
                }
                default -> throw new IllegalArgumentException(args[0]);
            }
        }
        System.out.println("CLOSED");
    }
}
