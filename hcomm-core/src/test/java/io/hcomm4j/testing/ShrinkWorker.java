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
 * A rank of the shrink and grow jobs ({@code ShrinkTest}, {@code GrowTest}); the scenario is the first argument. Lines it prints for the test:
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
        if (args[0].equals("joiner")) {
            code = joiner();
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (FaultWorker.hcommThreads() > 0 && System.nanoTime() < deadline) Thread.sleep(10);
            System.out.printf("CLOSED threads=%d fds=%d%n", FaultWorker.hcommThreads(), FaultWorker.fdTargets().size() - fdsBefore);
            System.out.flush();
            System.exit(code);
        }
        try (Hcomm hcomm = Hcomm.init()) {
            System.out.println("READY");
            System.out.flush();
            code = switch (args[0]) {
                case "kill" -> kill(hcomm, Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray(),
                        args.length > 2 && args[2].equals("grow"));
                case "train" -> train(hcomm, false);
                case "traingrow" -> train(hcomm, true);
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

    private static int kill(Hcomm hcomm, int[] victims, boolean grow) throws Exception {
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
        if (grow) {
            System.out.println("GROWING");
            System.out.flush();
            long g0 = System.nanoTime();
            Communicator grown = shrunk.grow(victims.length);
            System.out.printf("GROWN rank=%d size=%d at=%d took=%d%n", grown.rank(), grown.size(), System.currentTimeMillis(),
                    (System.nanoTime() - g0) / 1_000_000);
            if (grown.size() != n || grown.rank() != shrunk.rank()) throw new AssertionError("grown " + grown);
            afterGrow(grown, new Train(), world.rank());
            grown.close();
        }
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

    /** The state of the training loop: the step, the parameters, and which ranks (by their world rank) contribute. */
    static final class Train {
        int step;
        int[] ids;
        final float[] g = new float[LEN];
        final double[] params = new double[LEN];
        final double[] reference = new double[LEN];
        /** The parameters before the last step: a step whose all-reduce failed on some ranks may have completed on others. */
        final double[] prevParams = new double[LEN];
        final double[] prevReference = new double[LEN];
    }

    /**
     * After a shrink: the survivors agree on the step to go on from (the lowest: a failed all-reduce may have completed on
     * some of them, never more than one step ahead); a rank that is a step ahead goes back one.
     */
    static void agreeOnStep(Communicator comm, Train t) {
        int[] min = {t.step};
        comm.allReduce(min, ReduceOp.MIN);
        if (min[0] == t.step) return;
        if (min[0] != t.step - 1) throw new AssertionError("step " + t.step + ", lowest " + min[0]);
        System.arraycopy(t.prevParams, 0, t.params, 0, LEN);
        System.arraycopy(t.prevReference, 0, t.reference, 0, LEN);
        t.step = min[0];
        System.out.println("ROLLED BACK to step " + t.step);
    }

    /**
     * One step: all-reduce of the gradients, every element checked against the sum of the contributors' gradients,
     * then the update (SGD on the mean), also applied to the reference computed here.
     */
    static void step(Communicator comm, Train t, int id) {
        for (int i = 0; i < LEN; i++) t.g[i] = grad(id, t.step, i);
        comm.allReduce(t.g, ReduceOp.SUM);
        System.arraycopy(t.params, 0, t.prevParams, 0, LEN);
        System.arraycopy(t.reference, 0, t.prevReference, 0, LEN);
        for (int i = 0; i < LEN; i++) {
            float e = 0;
            for (int x : t.ids) e += grad(x, t.step, i);
            if (t.g[i] != e) throw new AssertionError("step " + t.step + " element " + i + ": " + t.g[i] + ", expected " + e + " from " + Arrays.toString(t.ids));
            t.params[i] -= 0.01 * t.g[i] / t.ids.length;
            t.reference[i] -= 0.01 * e / t.ids.length;
        }
        t.step++;
    }

    /** The contributors of {@code comm}: every member's id, in rank order. */
    static int[] ids(Communicator comm, int id) {
        int[] all = new int[comm.size()];
        comm.allGather(MemorySegment.ofArray(new int[] {id}), MemorySegment.ofArray(all), 1, DataType.INT32);
        return all;
    }

    /** After a grow: rank 0 sends the step and the parameters to everybody (the joiner starts from them). */
    static void syncState(Communicator comm, Train t) {
        long[] step = {t.step};
        comm.broadcast(MemorySegment.ofArray(step), 1, DataType.INT64, 0);
        t.step = (int) step[0];
        comm.broadcast(MemorySegment.ofArray(t.params), LEN, DataType.FLOAT64, 0);
        comm.broadcast(MemorySegment.ofArray(t.reference), LEN, DataType.FLOAT64, 0);
    }

    private static int train(Hcomm hcomm, boolean grow) throws Exception {
        Communicator comm = hcomm.world();
        int id = comm.rank();
        Train t = new Train();
        t.ids = ids(comm, id);
        // 4 ranks until one is killed
        while (true) {
            try {
                step(comm, t, id);
            } catch (PeerFailedException e) {
                System.out.printf("CAUGHT %s at=%d step=%d%n", e.failedRanks(), System.currentTimeMillis(), t.step);
                break; // redo this step on the shrunk communicator
            }
            if (t.step == 20) {
                System.out.println("RUNNING");
                System.out.flush();
            }
            if (t.step > 1_000_000) throw new AssertionError("nobody was killed");
        }
        long t0 = System.nanoTime();
        Communicator shrunk = comm.shrink();
        long took = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("SHRUNK rank=%d size=%d at=%d took=%d step=%d%n", shrunk.rank(), shrunk.size(), System.currentTimeMillis(), took, t.step);
        System.out.flush();
        int[] left = ids(shrunk, id);
        for (int x = 1; x < left.length; x++) if (left[x] <= left[x - 1]) throw new AssertionError("order " + Arrays.toString(left));
        t.ids = left;
        agreeOnStep(shrunk, t);
        for (int i = 0; i < STEPS_AFTER; i++) step(shrunk, t, id);
        System.out.printf("TRAINED steps=%d ranks=%d%n", t.step, shrunk.size());
        Communicator last = shrunk;
        if (grow) {
            System.out.println("GROWING");
            System.out.flush();
            t0 = System.nanoTime();
            Communicator grown = shrunk.grow(1);
            took = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("GROWN rank=%d size=%d at=%d took=%d%n", grown.rank(), grown.size(), System.currentTimeMillis(), took);
            System.out.flush();
            if (grown.rank() != shrunk.rank()) throw new AssertionError("rank changed in grow");
            afterGrow(grown, t, id);
            last = grown;
        }
        if (!Arrays.equals(t.params, t.reference)) throw new AssertionError("parameters differ from the reference");
        System.out.printf("FINAL steps=%d ranks=%d params[0]=%.4f%n", t.step, last.size(), t.params[0]);
        comm.close();
        System.out.println("DONE");
        return 0;
    }

    /** On the grown communicator (old members and joiner alike): state from rank 0, then STEPS_AFTER steps on all. */
    static void afterGrow(Communicator grown, Train t, int id) {
        syncState(grown, t);
        t.ids = ids(grown, id);
        for (int i = 0; i < STEPS_AFTER; i++) step(grown, t, id);
        checkCollectives(grown);
        System.out.printf("TRAINED steps=%d ranks=%d ids=%s%n", t.step, grown.size(), Arrays.toString(t.ids));
        System.out.flush();
    }

    /** A replacement process: joins the running job, then trains with it. */
    private static int joiner() {
        long t0 = System.nanoTime();
        try (Hcomm hcomm = Hcomm.join()) {
            Communicator grown = hcomm.world();
            long took = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("JOINED rank=%d size=%d at=%d took=%d%n", grown.rank(), grown.size(), System.currentTimeMillis(), took);
            System.out.flush();
            Train t = new Train();
            afterGrow(grown, t, grown.rank());
            if (!Arrays.equals(t.params, t.reference)) throw new AssertionError("parameters differ from the reference");
            System.out.printf("FINAL steps=%d ranks=%d params[0]=%.4f%n", t.step, grown.size(), t.params[0]);
        }
        System.out.println("DONE");
        return 0;
    }
}
