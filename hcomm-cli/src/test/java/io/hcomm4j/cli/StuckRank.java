package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A rank of {@link StatusCommandTest}'s job: one all-reduce together, then the last rank stays away (in its own code)
 * until the file {@code args[0]} exists (the test creates it once it has seen the others stuck; 90 s at most) before
 * the second all-reduce, in which the others wait for it (stuck after HCOMM_STUCK_REPORT).
 */
public final class StuckRank {
    private StuckRank() {
    }

    public static void main(String[] args) throws Exception {
        Path go = Path.of(args[0]);
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int[] v = {1, 2, 3, 4};
            comm.allReduce(v, ReduceOp.SUM);
            System.out.println("FIRST DONE");
            if (comm.size() > 1) System.out.println("TRANSPORT " + hcomm.transportTo((comm.rank() + 1) % comm.size()));
            System.out.flush();
            if (comm.rank() == comm.size() - 1) {
                long deadline = System.nanoTime() + 90_000_000_000L;
                while (!Files.exists(go)) {
                    if (System.nanoTime() > deadline) throw new IllegalStateException("no " + go + " within 90 s");
                    Thread.sleep(20);
                }
                System.out.println("GO");
                System.out.flush();
            }
            comm.allReduce(v, ReduceOp.SUM);
            System.out.println("SECOND DONE " + v[0]);
            System.out.flush();
        }
        System.exit(0);
    }
}
