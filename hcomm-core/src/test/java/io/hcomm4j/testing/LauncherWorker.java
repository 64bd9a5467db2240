package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.HcommException;
import io.hcomm4j.ReduceOp;

/**
 * One rank of {@code LauncherEnvironmentTest}'s job: {@code Hcomm.init()} from the environment its launcher gave it, then
 * an all-reduce and an all-gather whose every element it checks. Prints {@code LAUNCHED rank R/N OK}, or
 * {@code INIT FAILED after T ms: message} and exits 3.
 */
public final class LauncherWorker {
    private LauncherWorker() {
    }

    public static void main(String[] args) {
        long t0 = System.nanoTime();
        // the public view of the same reading init makes below
        try {
            Hcomm.launchedAs().ifPresent(p -> System.out.printf("LAUNCHED AS rank %d/%d: %s%n", p.rank(), p.worldSize(), p.source()));
        } catch (HcommException e) {
            System.out.println("LAUNCHED AS refused: " + e.getMessage()); // init below says the same
        }
        Hcomm hcomm;
        try {
            hcomm = Hcomm.init();
        } catch (HcommException e) {
            System.out.printf("INIT FAILED after %d ms: %s%n", (System.nanoTime() - t0) / 1_000_000, e.getMessage());
            System.exit(3);
            return;
        }
        long t1 = System.nanoTime();
        try (hcomm) {
            Communicator c = hcomm.world();
            int n = c.size();
            float[] data = new float[4099];
            for (int i = 0; i < data.length; i++) data[i] = (c.rank() + 1) * (i % 13 + 1);
            c.allReduce(data, ReduceOp.SUM);
            for (int i = 0; i < data.length; i++) {
                float want = n * (n + 1) / 2f * (i % 13 + 1);
                if (data[i] != want) throw new AssertionError("rank " + c.rank() + ": element " + i + " is " + data[i] + ", not " + want);
            }
            float[] ranks = new float[n];
            c.allGather(new float[] {c.rank()}, ranks);
            for (int r = 0; r < n; r++) {
                if (ranks[r] != r) throw new AssertionError("rank " + c.rank() + ": slot " + r + " of the all-gather holds " + ranks[r]);
            }
            System.out.printf("LAUNCHED rank %d/%d OK (init %d ms, collectives %d ms)%n", c.rank(), n,
                    (t1 - t0) / 1_000_000, (System.nanoTime() - t1) / 1_000_000);
        }
    }
}
