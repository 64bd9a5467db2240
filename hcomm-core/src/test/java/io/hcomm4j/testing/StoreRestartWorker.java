package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.HcommException;
import io.hcomm4j.ReduceOp;

/**
 * A rank of the store-restart jobs ({@code StoreRestartTest}): {@link Hcomm#init()} against a store that the test kills
 * (and maybe starts again) while the ranks are in init. Lines it prints (times are epoch milliseconds):
 * <ul>
 *   <li>{@code INIT rank=<r> at=<ms> took=<ms>}: init returned;</li>
 *   <li>{@code INIT FAILED at=<ms> type=<exception class> msg=<message>}: init threw;</li>
 *   <li>{@code ALLREDUCE OK <elements>}: a 64 Ki-float all-reduce, every element checked; then {@code CHECKED ...} from
 *       {@link ShrinkWorker#checkCollectives};</li>
 *   <li>{@code CLOSED threads=<hcomm threads alive, virtual ones included> fds=<open fds after close minus before init>}.</li>
 * </ul>
 */
public final class StoreRestartWorker {
    private static final int LEN = 64 * 1024;

    private StoreRestartWorker() {
    }

    public static void main(String[] args) throws Exception {
        FaultWorker.warmUpJdk();
        long fdsBefore = FaultWorker.fdTargets().size();
        int code = 0;
        long t0 = System.nanoTime();
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator world = hcomm.world();
            System.out.printf("INIT rank=%d at=%d took=%d%n", world.rank(), System.currentTimeMillis(), (System.nanoTime() - t0) / 1_000_000);
            System.out.flush();
            allReduce(world);
            ShrinkWorker.checkCollectives(world);
        } catch (HcommException e) {
            System.out.printf("INIT FAILED at=%d type=%s msg=%s%n", System.currentTimeMillis(), e.getClass().getName(),
                    e.getMessage().replace('\n', ' '));
            code = 3;
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        long threads;
        while ((threads = hcommThreads()) > 0 && System.nanoTime() < deadline) Thread.sleep(20);
        System.out.printf("CLOSED threads=%d fds=%d%n", threads, FaultWorker.fdTargets().size() - fdsBefore);
        System.out.flush();
        System.exit(code);
    }

    /** Every rank contributes {@code (rank + 1) * 100 + i % 7} to element i: the sum is known exactly. */
    private static void allReduce(Communicator c) {
        int r = c.rank(), n = c.size();
        float[] a = new float[LEN];
        for (int i = 0; i < LEN; i++) a[i] = (r + 1) * 100 + i % 7;
        c.allReduce(a, ReduceOp.SUM);
        for (int i = 0; i < LEN; i++) {
            float e = n * (n + 1) / 2f * 100 + n * (i % 7);
            if (a[i] != e) throw new AssertionError("allReduce [" + i + "] = " + a[i] + ", expected " + e);
        }
        System.out.println("ALLREDUCE OK " + LEN);
        System.out.flush();
    }

    /** Live threads named {@code hcomm-*}, virtual ones included (the store client's watcher is virtual). */
    static long hcommThreads() {
        return LiveThreads.named("hcomm-").size();
    }
}
