package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Health;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A rank of the shrink jobs ({@code ShrinkTest}); the scenario is the first argument. Lines it prints for the test:
 * <ul>
 *   <li>{@code READY}: initialized; {@code RUNNING}: in the middle of its training loop;</li>
 *   <li>{@code CAUGHT <failed ranks> at=<ms>}: the step that failed;</li>
 *   <li>{@code SHRUNK rank=<r> size=<n> at=<ms> took=<ms>}: the shrink returned;</li>
 *   <li>{@code CHECKED <what>}: results checked on the shrunk communicator; {@code DONE}: the end;</li>
 *   <li>{@code CLOSED threads=<hcomm threads alive> fds=<open fds after close minus before init>}.</li>
 * </ul>
 * Scenarios: {@code kill} (the test kills the ranks named in the second argument, e.g. {@code 1,3}; the others wait
 * until they know all of them failed, shrink and check collectives of many sizes on the shrunk communicator) and
 * {@code train} (a data-parallel training loop: every step all-reduces gradients and checks every element against
 * the sum of the contributions of the ranks taking part; the test kills the last rank; the survivors catch the
 * failure, shrink and go on for {@code STEPS_AFTER} more steps, redoing the failed one).
 */
public final class ShrinkWorker {
    static final int STEPS_AFTER = 30;
    static final int LEN = 64 * 1024;

    private ShrinkWorker() {
    }

    public static void main(String[] args) throws Exception {
        FaultWorker.warmUpJdk();
        long fdsBefore = FaultWorker.fdTargets().size();
        int code;
        try (Hcomm hcomm = Hcomm.init()) {
            System.out.println("READY");
            System.out.flush();
            code = switch (args[0]) {
                case "kill" -> kill(hcomm, Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray());
                case "train" -> train(hcomm);
                default -> throw new IllegalArgumentException(args[0]);
            };
            System.out.flush();
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (FaultWorker.hcommThreads() > 0 && System.nanoTime() < deadline) Thread.sleep(10);
        System.out.printf("CLOSED threads=%d fds=%d%n", FaultWorker.hcommThreads(), FaultWorker.fdTargets().size() - fdsBefore);
        System.out.flush();
        System.exit(code);
    }

    private static int kill(Hcomm hcomm, int[] victims) throws Exception {
        Communicator world = hcomm.world();
        int n = world.size();
        world.barrier();
        System.out.println("RUNNING");
        System.out.flush();
        if (Arrays.stream(victims).anyMatch(v -> v == world.rank())) {
            Thread.sleep(600_000);
            return 9;
        }
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (world.health().failedRanks().size() < victims.length) {
            if (System.nanoTime() > deadline) throw new AssertionError("failures not learned: " + world.health());
            Thread.sleep(5);
        }
        long t0 = System.nanoTime();
        Communicator shrunk = world.shrink();
        long took = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("SHRUNK rank=%d size=%d at=%d took=%d%n", shrunk.rank(), shrunk.size(), System.currentTimeMillis(), took);
        int live = n - victims.length;
        if (shrunk.size() != live) throw new AssertionError("size " + shrunk.size());
        int expectRank = world.rank() - (int) Arrays.stream(victims).filter(v -> v < world.rank()).count();
        if (shrunk.rank() != expectRank) throw new AssertionError("rank " + shrunk.rank() + ", expected " + expectRank);
        if (shrunk.health().state() != Health.State.READY) throw new AssertionError("shrunk health " + shrunk.health());
        if (world.health().state() != Health.State.DEGRADED) throw new AssertionError("world health " + world.health());
        checkCollectives(shrunk);
        // the old communicator still fails, the new one still works
        try {
            world.barrier();
            throw new AssertionError("a barrier on the old communicator passed");
        } catch (PeerFailedException e) {
            System.out.println("OLD FAILS " + e.failedRanks());
        }
        shrunk.barrier();
        Communicator again = shrunk.shrink(); // no failure: like dup
        if (again.size() != live || again.rank() != shrunk.rank()) throw new AssertionError("second shrink " + again);
        checkCollectives(again);
        again.close();
        shrunk.close();
        System.out.println("DONE");
        return 0;
    }

    /** All-reduce (sizes that pick different algorithms), all-gather, broadcast, reduce-scatter, all-to-all: every element checked. */
    static void checkCollectives(Communicator c) {
        int r = c.rank(), n = c.size();
        for (int len : new int[] {1, 7, 1000, 40_000, 300_000}) {
            float[] a = new float[len];
            for (int i = 0; i < len; i++) a[i] = (r + 1) * 10 + i % 13;
            c.allReduce(a, ReduceOp.SUM);
            for (int i = 0; i < len; i++) {
                float e = n * (n + 1) / 2f * 10 + n * (i % 13);
                if (a[i] != e) throw new AssertionError("allReduce len " + len + " [" + i + "] = " + a[i] + ", expected " + e);
            }
        }
        System.out.println("CHECKED allReduce");
        int[] mine = {r * 3, r * 3 + 1, r * 3 + 2};
        int[] all = new int[3 * n];
        c.allGather(MemorySegment.ofArray(mine), MemorySegment.ofArray(all), 3, DataType.INT32);
        for (int i = 0; i < all.length; i++) if (all[i] != i) throw new AssertionError("allGather " + Arrays.toString(all));
        long[] b = new long[5000];
        if (r == n - 1) Arrays.fill(b, 42);
        c.broadcast(MemorySegment.ofArray(b), b.length, DataType.INT64, n - 1);
        for (long x : b) if (x != 42) throw new AssertionError("broadcast");
        int[] send = new int[n * 2];
        for (int i = 0; i < send.length; i++) send[i] = r * 1000 + i;
        int[] recv = new int[n * 2];
        c.allToAll(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), 2, DataType.INT32);
        for (int p = 0; p < n; p++) {
            for (int j = 0; j < 2; j++) {
                if (recv[2 * p + j] != p * 1000 + 2 * r + j) throw new AssertionError("allToAll " + Arrays.toString(recv));
            }
        }
        c.barrier();
        System.out.println("CHECKED all");
        System.out.flush();
    }

    /** Gradient element {@code i} of the rank that started as rank {@code id}, at step {@code step}: small integers, exact in float. */
    static float grad(int id, int step, int i) {
        return (id + 1) + (step % 5) + (i % 3);
    }

    private static int train(Hcomm hcomm) throws Exception {
        Communicator comm = hcomm.world();
        int id = comm.rank();
        // which ranks (by their first rank) contribute: all of them, until the shrink
        int[] ids = new int[comm.size()];
        for (int i = 0; i < ids.length; i++) ids[i] = i;
        float[] g = new float[LEN];
        double[] params = new double[LEN];
        double[] reference = new double[LEN];
        int step = 0;
        int stepsLeft = -1; // after the shrink
        boolean shrunk = false;
        while (stepsLeft != 0) {
            for (int i = 0; i < LEN; i++) g[i] = grad(id, step, i);
            try {
                comm.allReduce(g, ReduceOp.SUM);
            } catch (PeerFailedException e) {
                System.out.printf("CAUGHT %s at=%d step=%d%n", e.failedRanks(), System.currentTimeMillis(), step);
                if (shrunk) throw e;
                long t0 = System.nanoTime();
                Communicator next = comm.shrink();
                long took = (System.nanoTime() - t0) / 1_000_000;
                // the contributors now: the members of the shrunk communicator, in order (ranks kept their order)
                int[] left = new int[next.size()];
                next.allGather(MemorySegment.ofArray(new int[] {id}), MemorySegment.ofArray(left), 1, DataType.INT32);
                for (int x = 1; x < left.length; x++) if (left[x] <= left[x - 1]) throw new AssertionError("order " + Arrays.toString(left));
                if (Arrays.stream(left).anyMatch(x -> e.failedRanks().contains(x))) throw new AssertionError("failed rank kept " + Arrays.toString(left));
                ids = left;
                System.out.printf("SHRUNK rank=%d size=%d at=%d took=%d step=%d%n", next.rank(), next.size(), System.currentTimeMillis(), took, step);
                System.out.flush();
                comm = next;
                shrunk = true;
                stepsLeft = STEPS_AFTER;
                continue; // redo this step on the shrunk communicator
            }
            for (int i = 0; i < LEN; i++) {
                float e = 0;
                for (int x : ids) e += grad(x, step, i);
                if (g[i] != e) throw new AssertionError("step " + step + " element " + i + ": " + g[i] + ", expected " + e + " from " + Arrays.toString(ids));
                params[i] -= 0.01 * g[i] / ids.length;
                double ref = 0;
                for (int x : ids) ref += grad(x, step, i);
                reference[i] -= 0.01 * ref / ids.length;
            }
            step++;
            if (step == 20) {
                System.out.println("RUNNING");
                System.out.flush();
            }
            if (stepsLeft > 0) stepsLeft--;
            if (step > 1_000_000) throw new AssertionError("nobody was killed");
        }
        if (!Arrays.equals(params, reference)) throw new AssertionError("parameters differ from the reference");
        System.out.printf("TRAINED steps=%d ranks=%d params[0]=%.4f%n", step, comm.size(), params[0]);
        comm.close();
        System.out.println("DONE");
        return 0;
    }
}
