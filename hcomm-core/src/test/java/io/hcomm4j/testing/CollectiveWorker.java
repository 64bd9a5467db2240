package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataMovementCollectivesTest;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReductionCollectivesTest;

/** One rank (a separate JVM) of the collectives job: the same seeded random sequences as the in-JVM tests. */
public final class CollectiveWorker {
    public static void main(String[] args) throws Exception {
        long seed = Long.parseLong(args[0]);
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator c = hcomm.world();
            long t0 = System.nanoTime();
            ReductionCollectivesTest.sequence(c, seed, 40);
            System.out.printf("rank %d PASS reductions (%d ms)%n", c.rank(), (System.nanoTime() - t0) / 1_000_000);
            t0 = System.nanoTime();
            DataMovementCollectivesTest.sequence(c, seed + 1, 30);
            System.out.printf("rank %d PASS data movement (%d ms)%n", c.rank(), (System.nanoTime() - t0) / 1_000_000);
            Ranks.printTransports(hcomm);
            c.barrier(); // nobody closes its connections before every rank has looked at them
        }
    }
}
