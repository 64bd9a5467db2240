package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.LockType;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Window;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One rank of the one-sided failure test: the last rank exposes a window and is killed (SIGKILL by the test) while
 * the others hammer it with fetchAndOp, get, put and flush under a shared lock. Each survivor must see
 * PeerFailedException naming it (prints {@code DETECTED <ms> ranks=[...]}), then still reach a live member
 * ({@code SURVIVORS OK}). Argument: {@code alloc} or {@code create} (see {@link RmaWorker}).
 */
public final class RmaFailureWorker {
    public static void main(String[] args) throws Exception {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int n = comm.size();
            int victim = n - 1;
            MemorySegment mine = Arena.ofShared().allocate(4096, 8);
            Window w = args[0].equals("create") ? comm.createWindow(mine) : comm.allocateWindow(4096);
            if (comm.rank() == victim) {
                System.out.println("READY");
                System.out.flush();
                Thread.sleep(Long.MAX_VALUE);
            }
            w.lock(victim, LockType.SHARED);
            MemorySegment buf = Arena.ofShared().allocate(512);
            long killedSeen = 0;
            boolean printed = false;
            try {
                while (true) {
                    w.fetchAndOp(1, victim, 0, DataType.INT64, ReduceOp.SUM);
                    w.get(buf, victim, 512);
                    w.put(buf, victim, 1024 + comm.rank() * 512L);
                    w.flush(victim);
                    if (!printed) {
                        System.out.println("WAITING");
                        System.out.flush();
                        printed = true;
                    }
                    if (killedSeen == 0 && java.nio.file.Files.exists(java.nio.file.Path.of(System.getenv("RMA_KILLED_FLAG")))) {
                        killedSeen = System.nanoTime();
                    }
                }
            } catch (PeerFailedException e) {
                long ms = killedSeen == 0 ? 0 : (System.nanoTime() - killedSeen) / 1_000_000;
                System.out.println("DETECTED " + ms + " ms ranks=" + e.failedRanks() + " " + e.getMessage());
            }
            try {
                w.unlock(victim);
                throw new AssertionError("unlock of the failed rank " + victim + " succeeded");
            } catch (PeerFailedException expected) {
                // the lock is dropped here all the same
            }
            // a live member is still reachable through the same window
            w.lock(0, LockType.SHARED);
            long before = w.fetchAndOp(1, 0, 8, DataType.INT64, ReduceOp.SUM);
            long after = w.fetchAndOp(0, 0, 8, DataType.INT64, ReduceOp.NO_OP);
            if (after <= before) throw new AssertionError("counter at rank 0 did not move: " + before + " -> " + after);
            w.unlock(0);
            System.out.println("SURVIVORS OK");
            System.out.flush();
            comm.shrink().barrier(); // no survivor leaves while another still uses its memory
        }
    }
}
