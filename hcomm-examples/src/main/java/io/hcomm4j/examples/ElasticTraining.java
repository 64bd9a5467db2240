package io.hcomm4j.examples;

import static io.hcomm4j.examples.DataParallelTraining.PARAMS;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.examples.DataParallelTraining.Activations;
import io.hcomm4j.examples.DataParallelTraining.Shard;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Elastic data-parallel training, as one rank of a job: the job loses a rank, shrinks and goes on with the survivors,
 * then grows back to its size when a replacement process joins, and every step's result is checked.
 *
 * <p>The model, the data and the gradients are those of {@link DataParallelTraining} (a 2-layer perceptron trained
 * with SGD on a synthetic dataset, one all-reduce of the averaged gradients per step). What this program adds is
 * what a training loop needs to survive a failure:
 * <ol>
 *   <li><b>The failure.</b> At step {@code --kill-step} (default 100) the rank that started as {@code --kill-rank}
 *       (default 3) kills its own JVM with SIGKILL, like the OOM killer or a lost node would: no goodbye, its sockets
 *       closed by the kernel.</li>
 *   <li><b>Detection.</b> The survivors' all-reduce of that step fails with {@link PeerFailedException} naming the
 *       dead rank (within milliseconds: its connections ended), instead of hanging until a timeout.</li>
 *   <li><b>Shrink.</b> Every survivor calls {@link Communicator#shrink()}: they agree on who failed and get a
 *       communicator of the survivors, ranked 0..n-2. An all-reduce that failed on some survivors may have completed on
 *       others (the dead rank's data reached some of them), so the survivors agree on the step to go on from (the
 *       lowest) and a survivor one step ahead undoes that step. The dataset is then divided among the survivors (each
 *       rank's shard depends on its rank and the number of ranks, as with a DistributedSampler), and training goes
 *       on with fewer samples per step.</li>
 *   <li><b>Grow.</b> At step {@code --grow-step} (default 200) a job smaller than it started calls
 *       {@link Communicator#grow(int)}, which waits for replacement processes. A replacement is this program started
 *       again by the launcher ({@code hcomm launch --max-restarts 1}, which sets {@code HCOMM_JOIN=1}) or by hand with
 *       {@code --replacement 1}: it joins the running job ({@link Hcomm#join()}) instead of starting one, takes the
 *       dead rank's place, and receives the step, the weights and the history from rank 0 by broadcast. Something
 *       must start it, as Kubernetes restarts a failed pod or an elastic agent a failed worker: {@code hcomm launch
 *       --max-restarts N} does.</li>
 * </ol>
 *
 * <p>Checks, printed in one line per rank (exit code 1 if one fails):
 * <ol>
 *   <li>every step: the all-reduced gradient equals, within float rounding ({@value #STEP_TOLERANCE}), the average of
 *       the gradients of exactly the ranks taking part, which every rank recomputes from the data (the dead rank's
 *       gradient is not in it, no survivor's is missing, none is counted twice);</li>
 *   <li>at the end: every rank holds bit-identical weights (all-gathered hashes); the loss fell to at most
 *       {@code --loss-bound}; and the weights equal, within float rounding ({@value #REPLAY_TOLERANCE}), a
 *       single-process replay of the whole run from the recorded history (steps 0-99 with 4 shards, 100-199 with 3,
 *       200-299 with 4).</li>
 * </ol>
 *
 * <p>Run: {@code scripts/example.sh elastic -n 4} (that is {@code hcomm launch -n 4 --max-restarts 1}). With another
 * launcher, start a replacement yourself when a rank dies ({@code java -cp hcomm-examples.jar io.hcomm4j.examples.ElasticTraining --replacement 1} with the job's
 * MASTER_ADDR, MASTER_PORT and HCOMM_SECRET). The store must outlive the dead rank: a launcher's store
 * ({@code HCOMM_STORE_HOSTED=1}) always does; without one rank 0 serves it, so {@code --kill-rank 0} is refused then.
 * Options: {@code --steps 300 --batch 32 --lr 1.0 --kill-rank 3 --kill-step 100 --grow-step 200 --loss-bound 0.3}
 * ({@code --kill-rank -1}: nobody dies).
 */
public final class ElasticTraining {
    static final String NAME = "elastic";
    /** Most phases (runs of steps with one membership) the history holds: one per failure and one per grow, plus the first. */
    static final int MAX_PHASES = 32;
    /** How far an all-reduced gradient may be from the locally recomputed average: the order of the additions differs. */
    static final double STEP_TOLERANCE = 1e-6;
    /** How far the final weights may be from the single-process replay, as in {@link DataParallelTraining}. */
    static final double REPLAY_TOLERANCE = 1e-4;

    private ElasticTraining() {
    }

    /** Runs one rank (or, with {@code --replacement 1}, a replacement); see the class comment for the options. */
    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(new Examples.Options(args, "steps", "batch", "lr", "kill-rank", "kill-step",
                "grow-step", "loss-bound", "replacement")));
    }

    /** The training state that must survive a membership change; rank 0 sends it to a replacement. */
    static final class State {
        int step;
        final float[] params = new float[PARAMS];
        /** The weights before the last step, to undo a step that completed here but failed elsewhere. */
        final float[] before = new float[PARAMS];
        /** Phases of the run: {first step, number of ranks} each, in order. */
        final List<int[]> history = new ArrayList<>();
        double lossBefore;
        /** Largest difference seen between an all-reduced gradient and its recomputed average. */
        double maxStepDiff;
    }

    static boolean run(Examples.Options options) throws Exception {
        int steps = options.intValue("steps", 300);
        int batch = options.intValue("batch", 32);
        float lr = (float) options.doubleValue("lr", 1.0);
        int killRank = options.intValue("kill-rank", 3);
        int killStep = options.intValue("kill-step", 100);
        int growStep = options.intValue("grow-step", 200);
        double lossBound = options.doubleValue("loss-bound", 0.3);
        CommConfig config = CommConfig.fromEnvironment();
        // a replacement: started with --replacement 1, or by hcomm launch --max-restarts (HCOMM_JOIN=1 for Hcomm.init)
        boolean replacement = options.intValue("replacement", 0) == 1 || config.join();
        if (killRank == 0 && !replacement && !config.storeHosted()) {
            throw new IllegalArgumentException("--kill-rank 0: rank 0 serves the job's store here (HCOMM_STORE_HOSTED is not set), "
                    + "so its death would take the store along; run under a launcher (scripts/example.sh, hcomm launch) or pick "
                    + "another rank");
        }
        Data data = new Data();
        Activations act = new Activations(batch);

        // A replacement joins the running job: it gets a dead rank's place once the others call grow().
        try (Hcomm hcomm = replacement ? Hcomm.join(config) : Hcomm.init(config)) {
            Communicator comm = hcomm.world();
            int target = comm.size();                  // the size to grow back to: the job's, as it started
            int startedAs = comm.rank();
            State st = new State();
            if (replacement) {
                say(comm, "joined the running job as a replacement; waiting for the state");
                receiveState(comm, st);                // the counterpart of the others' sendState after grow()
                say(comm, "going on from step " + st.step + " with " + comm.size() + " ranks");
            } else {
                if (comm.rank() == 0) DataParallelTraining.initialize(MemorySegment.ofArray(st.params));
                comm.broadcast(st.params, 0);          // every replica starts from rank 0's weights
                st.history.add(new int[] {0, comm.size()});
                st.lossBefore = DataParallelTraining.globalLoss(comm, MemorySegment.ofArray(st.params), data.shards(comm.size())[comm.rank()]);
            }

            while (st.step < steps) {
                if (st.step == growStep && comm.size() < target) {
                    // The job is smaller than it started: wait for replacements, take them in, hand them the state.
                    int missing = target - comm.size();
                    say(comm, "step " + st.step + ": waiting for " + missing + " replacement(s) to grow back to " + target + " ranks");
                    long t0 = System.nanoTime();
                    Communicator grown = comm.grow(missing);
                    st.history.add(new int[] {st.step, grown.size()});
                    sendState(grown, st);                // the replacements start from here
                    if (comm != hcomm.world()) comm.close(); // the shrunk communicator is not needed any more
                    comm = grown;
                    say(comm, Examples.fmt("grown back to %d ranks in %d ms", comm.size(), (System.nanoTime() - t0) / 1_000_000));
                }
                if (!replacement && startedAs == killRank && st.step == killStep) die(comm, killRank, killStep);
                try {
                    step(comm, st, data, batch, lr, act);
                } catch (PeerFailedException e) {
                    // A rank died during this step. Everyone who is left gets here, in this step or the next.
                    say(comm, "step " + st.step + ": lost rank(s) " + e.failedRanks() + " (" + e.getClass().getSimpleName() + "), shrinking");
                    long t0 = System.nanoTime();
                    Communicator shrunk = comm.shrink(); // a communicator of the survivors, ranks 0..n-1
                    agreeOnStep(shrunk, st);
                    st.history.add(new int[] {st.step, shrunk.size()});
                    if (comm != hcomm.world()) comm.close();
                    comm = shrunk;
                    say(comm, Examples.fmt("shrunk to %d ranks in %d ms, going on from step %d", comm.size(),
                            (System.nanoTime() - t0) / 1_000_000, st.step));
                }
            }

            return finish(comm, st, data, steps, batch, lr, lossBound, replacement);
        }
    }

    /**
     * One step: this rank's gradient on its shard of the current membership, averaged over the ranks with one
     * all-reduce, checked against the average recomputed here from every member's shard, then applied.
     */
    static void step(Communicator comm, State st, Data data, int batch, float lr, Activations act) {
        Shard[] shards = data.shards(comm.size());
        float[] grads = gradient(st.params, shards[comm.rank()], st.step, batch, act);
        comm.allReduce(grads, ReduceOp.AVG);          // throws PeerFailedException if a member died
        float[] expected = average(st.params, shards, st.step, batch, act);
        for (int i = 0; i < PARAMS; i++) {
            double diff = Math.abs(grads[i] - expected[i]);
            st.maxStepDiff = Math.max(st.maxStepDiff, diff);
            if (!(diff <= STEP_TOLERANCE)) {
                throw new IllegalStateException(Examples.fmt("step %d: all-reduced gradient [%d] = %g, the average of the %d"
                        + " members' gradients is %g", st.step, i, grads[i], comm.size(), expected[i]));
            }
        }
        System.arraycopy(st.params, 0, st.before, 0, PARAMS);
        DataParallelTraining.sgd(MemorySegment.ofArray(st.params), MemorySegment.ofArray(grads), lr);
        st.step++;
    }

    /**
     * After a shrink: the survivors go on from the lowest step any of them reached. A survivor whose all-reduce of the
     * failed step completed (so it applied that step) is one step ahead, never more (the next all-reduce needs the dead
     * rank too): it undoes the step, so every replica holds the same weights again.
     */
    static void agreeOnStep(Communicator comm, State st) {
        int[] lowest = {st.step};
        comm.allReduce(lowest, ReduceOp.MIN);
        if (lowest[0] == st.step) return;
        if (lowest[0] != st.step - 1) throw new IllegalStateException("at step " + st.step + " but another survivor is at " + lowest[0]);
        System.arraycopy(st.before, 0, st.params, 0, PARAMS);
        st.step = lowest[0];
        say(comm, "undid step " + st.step + ", which the others did not complete");
    }

    /** Rank 0 sends the state to every member (after a grow: the replacements receive it with {@link #receiveState}). */
    static void sendState(Communicator comm, State st) {
        long[] header = new long[3 + 2 * MAX_PHASES];
        header[0] = st.step;
        header[1] = Double.doubleToRawLongBits(st.lossBefore);
        header[2] = st.history.size();
        for (int i = 0; i < st.history.size(); i++) {
            header[3 + 2 * i] = st.history.get(i)[0];
            header[4 + 2 * i] = st.history.get(i)[1];
        }
        comm.broadcast(header, 0);
        comm.broadcast(st.params, 0);
    }

    /** A replacement's side of {@link #sendState}: the same two broadcasts, from rank 0. */
    static void receiveState(Communicator comm, State st) {
        long[] header = new long[3 + 2 * MAX_PHASES];
        comm.broadcast(header, 0);
        comm.broadcast(st.params, 0);
        st.step = (int) header[0];
        st.lossBefore = Double.longBitsToDouble(header[1]);
        for (int i = 0; i < header[2]; i++) st.history.add(new int[] {(int) header[3 + 2 * i], (int) header[4 + 2 * i]});
    }

    /** The end: bit-identical replicas, the loss, the single-process replay; prints the rank's result line. */
    static boolean finish(Communicator comm, State st, Data data, int steps, int batch, float lr, double lossBound,
                          boolean replacement) {
        int rank = comm.rank();
        int size = comm.size();
        double lossAfter = DataParallelTraining.globalLoss(comm, MemorySegment.ofArray(st.params), data.shards(size)[rank]);
        long[] hashes = Examples.allHashes(comm, Examples.hash(st.params));
        boolean identical = Arrays.stream(hashes).allMatch(h -> h == hashes[0]);
        float[] replay = replay(data, st.history, steps, batch, lr);
        double maxDiff = 0;
        for (int i = 0; i < PARAMS; i++) maxDiff = Math.max(maxDiff, Math.abs(st.params[i] - replay[i]));

        boolean ok = identical && lossAfter <= lossBound && lossAfter < st.lossBefore && maxDiff <= REPLAY_TOLERANCE
                && st.maxStepDiff <= STEP_TOLERANCE;
        String detail = Examples.fmt("%s; every step's all-reduced gradient equals the average of its members' (max |diff| %.1e),"
                        + " loss %.4f -> %.4f (bound %.4f), weights %s (hash %016x), max |w - single-process replay| %.1e",
                phases(st.history, steps), st.maxStepDiff, st.lossBefore, lossAfter, lossBound,
                identical ? "bit-identical on all " + size + " ranks" : "DIFFER between ranks " + Arrays.toString(hashes),
                hashes[rank], maxDiff);
        return Examples.result(NAME, rank, size, replacement ? "(replacement)" : "", detail, ok);
    }

    /** {@code steps 0-99 on 4 ranks, 100-199 on 3 ranks, 200-299 on 4 ranks}. */
    static String phases(List<int[]> history, int steps) {
        StringBuilder sb = new StringBuilder("steps ");
        for (int i = 0; i < history.size(); i++) {
            int from = history.get(i)[0];
            int to = i + 1 < history.size() ? history.get(i + 1)[0] : steps;
            if (i > 0) sb.append(", ");
            sb.append(from).append('-').append(to - 1).append(" on ").append(history.get(i)[1]).append(" ranks");
        }
        return sb.toString();
    }

    /** The whole run in one process: each step averages the gradients of the shards of that step's membership. */
    static float[] replay(Data data, List<int[]> history, int steps, int batch, float lr) {
        float[] params = new float[PARAMS];
        DataParallelTraining.initialize(MemorySegment.ofArray(params));
        Activations act = new Activations(batch);
        int phase = 0;
        for (int step = 0; step < steps; step++) {
            while (phase + 1 < history.size() && history.get(phase + 1)[0] <= step) phase++;
            DataParallelTraining.sgd(MemorySegment.ofArray(params),
                    MemorySegment.ofArray(average(params, data.shards(history.get(phase)[1]), step, batch, act)), lr);
        }
        return params;
    }

    /** The gradient of one shard's mini-batch {@code step}. */
    static float[] gradient(float[] params, Shard shard, int step, int batch, Activations act) {
        int[] rows = shard.batch(step, batch);
        float[] g = new float[PARAMS];
        MemorySegment p = MemorySegment.ofArray(params), gs = MemorySegment.ofArray(g);
        DataParallelTraining.forward(p, shard, rows, act);
        DataParallelTraining.backwardOutputLayer(act, shard, rows, gs);
        DataParallelTraining.backwardHiddenLayer(p, act, shard, rows, gs);
        return g;
    }

    /** The average of every shard's gradient: added in rank order, divided once (what AVG does). */
    static float[] average(float[] params, Shard[] shards, int step, int batch, Activations act) {
        float[] sum = new float[PARAMS];
        for (Shard s : shards) {
            float[] g = gradient(params, s, step, batch, act);
            for (int i = 0; i < PARAMS; i++) sum[i] += g[i];
        }
        for (int i = 0; i < PARAMS; i++) sum[i] /= shards.length;
        return sum;
    }

    /** The dataset divided among {@code n} ranks, for each {@code n} seen (a rank needs every member's shard to check). */
    static final class Data {
        private final Map<Integer, Shard[]> byRanks = new HashMap<>();

        Shard[] shards(int n) {
            return byRanks.computeIfAbsent(n, k -> {
                Shard[] s = new Shard[k];
                for (int r = 0; r < k; r++) s[r] = Shard.of(r, k);
                return s;
            });
        }
    }

    /** Kills this JVM with SIGKILL, as a crash would: no shutdown hooks, no goodbye to the peers. */
    static void die(Communicator comm, int killRank, int killStep) throws Exception {
        say(comm, "step " + killStep + ": killing this process with SIGKILL (--kill-rank " + killRank + " --kill-step " + killStep + ")");
        System.out.flush();
        try {
            new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).inheritIO().start().waitFor();
            Thread.sleep(5_000); // the signal is on its way
        } finally {
            Runtime.getRuntime().halt(137); // no kill command: end the same way, without hooks, with the same code
        }
    }

    /** A progress line, {@code elastic rank R/N: ...} (never a result line: it does not end in OK or FAILED). */
    static void say(Communicator comm, String what) {
        System.out.println(NAME + " rank " + comm.rank() + "/" + comm.size() + ": " + what);
        System.out.flush();
    }
}
