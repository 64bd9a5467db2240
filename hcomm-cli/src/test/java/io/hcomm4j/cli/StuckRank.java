package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReduceOp;

/**
 * A rank of {@link StatusCommandTest}'s job: one all-reduce together, then the last rank stays away (in its own code)
 * for {@code args[0]} ms before the second all-reduce, in which the others wait for it (stuck after HCOMM_STUCK_REPORT).
 */
public final class StuckRank {
    private StuckRank() {
    }

    public static void main(String[] args) throws Exception {
        long lateMs = Long.parseLong(args[0]);
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int[] v = {1, 2, 3, 4};
            comm.allReduce(v, ReduceOp.SUM);
            System.out.println("FIRST DONE");
            System.out.flush();
            if (comm.rank() == comm.size() - 1) Thread.sleep(lateMs);
            comm.allReduce(v, ReduceOp.SUM);
            System.out.println("SECOND DONE " + v[0]);
            System.out.flush();
        }
        System.exit(0);
    }
}
