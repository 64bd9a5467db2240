package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A rank of {@code FloodJobTest}: init and one barrier (every link up), {@code UP}, then it waits (90 s at most) for the
 * file {@code args[0]} (the test makes it once its flood holds) and runs shortened seeded collective sequences of
 * {@link CollectiveWorker} (seed {@code args[1]}, every element checked) under the flood.
 */
public final class FloodWorker {
    private FloodWorker() {
    }

    public static void main(String[] args) throws Exception {
        Path go = Path.of(args[0]);
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator c = hcomm.world();
            c.barrier();
            System.out.println("rank " + c.rank() + " UP");
            System.out.flush();
            long deadline = System.nanoTime() + 90_000_000_000L;
            while (!Files.exists(go)) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("no " + go + " within 90 s");
                Thread.sleep(20);
            }
            long seed = Long.parseLong(args[1]);
            io.hcomm4j.ReductionCollectivesTest.sequence(c, seed, 12);
            System.out.printf("rank %d PASS reductions%n", c.rank());
            io.hcomm4j.DataMovementCollectivesTest.sequence(c, seed + 1, 10);
            System.out.printf("rank %d PASS data movement%n", c.rank());
            c.barrier();
        }
        System.exit(0);
    }
}
