package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataMovementCollectivesTest;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ReductionCollectivesTest;

/**
 * One rank (a separate JVM) of the collectives job: the same seeded random sequences as the in-JVM tests. The process
 * tests run {@link #sequences} in {@link P2pWorker}'s jobs (scenario {@code collectives}), after the point-to-point
 * scenarios: one start of the ranks' JVMs for both.
 */
public final class CollectiveWorker {
    public static void main(String[] args) throws Exception {
        long seed = Long.parseLong(args[0]);
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator c = hcomm.world();
            sequences(c, seed);
            Ranks.printTransports(hcomm);
            c.barrier(); // nobody closes its connections before every rank has looked at them
        }
    }

    /** The reductions' sequence (seed {@code seed}), then the data movement's ({@code seed + 1}), every element checked. */
    public static void sequences(Communicator c, long seed) {
        long t0 = System.nanoTime();
        ReductionCollectivesTest.sequence(c, seed, 40);
        System.out.printf("rank %d PASS reductions (%d ms)%n", c.rank(), (System.nanoTime() - t0) / 1_000_000);
        t0 = System.nanoTime();
        DataMovementCollectivesTest.sequence(c, seed + 1, 30);
        System.out.printf("rank %d PASS data movement (%d ms)%n", c.rank(), (System.nanoTime() - t0) / 1_000_000);
    }
}
