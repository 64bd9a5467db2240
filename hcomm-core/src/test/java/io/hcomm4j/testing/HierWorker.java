package io.hcomm4j.testing;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataMovementCollectivesTest;
import io.hcomm4j.Hcomm;
import io.hcomm4j.HierarchicalCollectivesTest;
import io.hcomm4j.ReductionCollectivesTest;
import io.hcomm4j.Topology;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.transport.HostIdentity;
import java.nio.file.Path;
import java.util.Map;

/**
 * One rank of a job spread over network namespaces ({@code NetnsHierarchyTest}). First session, the cost model's
 * choices: prints its host id and topology, talks to every peer once and prints the transports, then runs the two-level
 * ops' sequence; second session, two-level algorithms forced: the same and the flat tests' random sequences.
 */
public final class HierWorker {
    public static void main(String[] args) throws Exception {
        long seed = Long.parseLong(args[0]);
        CommConfig auto = CommConfig.fromEnvironment();
        try (Hcomm h = Hcomm.init(auto)) {
            Communicator c = h.world();
            Topology t = c.topology();
            System.out.printf("rank %d hostid %s%n", c.rank(), HostIdentity.of(Path.of(auto.shmDir())));
            System.out.printf("rank %d topology host %d of %d, local rank %d of %d%n", c.rank(), t.host(), t.hosts(), t.localRank(),
                    t.localSize());
            HierarchicalCollectivesTest.touchEveryPeer(c);
            Ranks.printTransports(h);
            Tuner model = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, Tuner.LinkCost.SHM, Map.of());
            System.out.printf("rank %d model allreduce 4K %s 1M %s%n", c.rank(),
                    model.choose(Tuner.Op.ALLREDUCE, 4096, Tuner.Shape.of(t)), model.choose(Tuner.Op.ALLREDUCE, 1 << 20, Tuner.Shape.of(t)));
            long t0 = System.nanoTime();
            HierarchicalCollectivesTest.hierSequence(c, seed);
            System.out.printf("rank %d PASS auto (%d ms)%n", c.rank(), (System.nanoTime() - t0) / 1_000_000);
            c.barrier();
        }
        try (Hcomm h = Hcomm.init(CommConfig.builderFromEnvironment().algo(HierarchicalCollectivesTest.FORCE).build())) {
            Communicator c = h.world();
            long t0 = System.nanoTime();
            HierarchicalCollectivesTest.hierSequence(c, seed + 1);
            ReductionCollectivesTest.sequence(c, seed + 2, 16);
            DataMovementCollectivesTest.sequence(c, seed + 3, 16);
            System.out.printf("rank %d PASS forced (%d ms)%n", c.rank(), (System.nanoTime() - t0) / 1_000_000);
            c.barrier();
        }
    }
}
