package io.hcomm4j.examples;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Memory;
import io.hcomm4j.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Inference fan-out, as one rank of a job: rank 0 is the front end that receives batches of requests, the other
 * ranks are workers that run a model on their part of each batch.
 *
 * <p>The model is a toy 2-layer perceptron (64 inputs, 128 ReLU units, 16 outputs) that rank 0 loads and broadcasts
 * once. A request is a row of 65 floats (its id, then its 64 inputs), a result a row of 17 (the id, then 16 scores).
 * Batches have uneven sizes (300 to 1499 requests), and a batch rarely divides evenly among the workers, so each
 * batch moves with the variable-size collectives:
 * <ol>
 *   <li>{@code broadcast} of a 2-int header: the batch's size and first request id (size 0: stop);</li>
 *   <li>{@code scatterV}: worker w gets its share of the rows (rank 0 keeps none: its share is 0);</li>
 *   <li>each worker runs the model on its rows;</li>
 *   <li>{@code gatherV}: rank 0 collects every worker's result rows, in request order.</li>
 * </ol>
 * Rank 0 does not wait for a batch before it takes the next: it issues the three collectives of batch b as
 * {@code *Async} calls, which run in call order on the communicator's collective thread, and while they run it
 * fills batch b + 1 and checks the results of batch b − 1. Two batches are in flight at a time, each in its own pair
 * of registered buffers ({@code comm.memory()}), which rank 0 reuses only after it has checked that batch.
 *
 * <p>Checks (exit code 1 if one fails): rank 0 runs the model on every request itself and compares each result row,
 * bit for bit, with the one a worker sent; each worker checks that the rows it received carry exactly the request
 * ids of its share (a misplaced or lost row would show).
 *
 * <p>Run: {@code scripts/example.sh inference -n 4}, or as the command of any launcher
 * ({@code java -cp hcomm-examples.jar io.hcomm4j.examples.InferenceFanOut [--batches 12]}). It needs at least 2 ranks.
 */
public final class InferenceFanOut {
    static final String NAME = "inference";

    static final int IN = 64;
    static final int HIDDEN = 128;
    static final int OUT = 16;
    /** Floats per request row: the request id, then the inputs. Ids stay below 2^24, where floats are exact integers. */
    static final int REQUEST = 1 + IN;
    /** Floats per result row: the request id, then the scores. */
    static final int RESULT = 1 + OUT;
    static final int MAX_BATCH = 1499;
    static final long SEED = 4242L;

    // The model, one flat array: [ W1: HIDDEN x IN | b1: HIDDEN | W2: OUT x HIDDEN | b2: OUT ]
    static final int W1 = 0;
    static final int B1 = W1 + HIDDEN * IN;
    static final int W2 = B1 + HIDDEN;
    static final int B2 = W2 + OUT * HIDDEN;
    static final int MODEL = B2 + OUT;

    private InferenceFanOut() {
    }

    /** Runs one rank; see the class comment for the options. */
    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(new Examples.Options(args, "batches")));
    }

    static boolean run(Examples.Options options) {
        int batches = options.intValue("batches", 12);
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            if (comm.size() < 2) throw new IllegalArgumentException("inference fan-out needs a front end and at least one worker: 2 or more ranks");

            // "Loading" the model: rank 0 makes it, everyone gets it by broadcast (the array overload).
            float[] model = new float[MODEL];
            if (comm.rank() == 0) loadModel(model);
            comm.broadcast(model, 0);

            return comm.rank() == 0 ? frontEnd(comm, model, batches) : worker(comm, model);
        }
    }

    /** Requests in batch {@code b}: uneven on purpose, 300 to 1499. */
    static int batchSize(int b) {
        return 300 + (b * 977) % 1200;
    }

    /**
     * How a batch of {@code n} requests is shared: rank 0 takes none, the workers (ranks 1 ..) take n / workers each
     * and the first n % workers one more. Counts and displacements are in requests; {@link #elements} scales them to
     * floats for a row of a given width, which is what scatterV and gatherV count.
     */
    record Split(long[] counts, long[] displs) {
        static Split of(int n, int size) {
            int workers = size - 1;
            long[] counts = new long[size];
            long[] displs = new long[size];
            long next = 0;
            for (int r = 1; r < size; r++) {
                counts[r] = n / workers + (r - 1 < n % workers ? 1 : 0);
                displs[r] = next;
                next += counts[r];
            }
            return new Split(counts, displs);
        }

        static long[] elements(long[] requests, int rowWidth) {
            long[] e = new long[requests.length];
            for (int r = 0; r < e.length; r++) e[r] = requests[r] * rowWidth;
            return e;
        }
    }

    // --------------------------------------------------------------------------------------------------- front end

    /** One batch in flight: its buffers, header and pending collectives. */
    private static final class Slot implements AutoCloseable {
        final RegisteredBuffer requests;
        final RegisteredBuffer results;
        final int[] header = new int[2];                     // {size, first request id}
        final List<CommFuture<Void>> pending = new ArrayList<>();

        Slot(Memory pool) {
            requests = pool.allocate(DataType.FLOAT32, (long) MAX_BATCH * REQUEST);
            results = pool.allocate(DataType.FLOAT32, (long) MAX_BATCH * RESULT);
        }

        @Override
        public void close() {
            requests.close();
            results.close();
        }
    }

    private static boolean frontEnd(Communicator comm, float[] model, int batches) {
        int size = comm.size();
        Memory pool = comm.memory();
        long served = 0;
        int wrong = 0;
        long start = System.nanoTime();
        long waited = 0;
        try (Slot a = new Slot(pool); Slot b = new Slot(pool)) {
            Slot[] slots = {a, b};
            Slot inFlight = null;
            int nextId = 0;
            for (int batch = 0; batch < batches; batch++) {
                // This slot held batch - 2, which was checked in the previous iteration: its buffers are free.
                Slot slot = slots[batch % 2];
                int n = batchSize(batch);
                receiveRequests(slot.requests.segment(), nextId, n);
                slot.header[0] = n;
                slot.header[1] = nextId;
                nextId += n;

                Split split = Split.of(n, size);
                slot.pending.clear();
                slot.pending.add(comm.broadcastAsync(MemorySegment.ofArray(slot.header), 2, DataType.INT32, 0));
                slot.pending.add(comm.scatterVAsync(slot.requests.segment(), Split.elements(split.counts(), REQUEST),
                        Split.elements(split.displs(), REQUEST), MemorySegment.NULL, DataType.FLOAT32, 0));
                slot.pending.add(comm.gatherVAsync(MemorySegment.NULL, slot.results.segment(),
                        Split.elements(split.counts(), RESULT), Split.elements(split.displs(), RESULT), DataType.FLOAT32, 0));

                // Batch `batch` now travels and is computed; meanwhile check the one before it.
                if (inFlight != null) {
                    long t = System.nanoTime();
                    for (CommFuture<Void> f : inFlight.pending) f.await();
                    waited += System.nanoTime() - t;
                    wrong += check(model, inFlight);
                    served += inFlight.header[0];
                }
                inFlight = slot;
            }
            if (inFlight != null) {
                long t = System.nanoTime();
                for (CommFuture<Void> f : inFlight.pending) f.await();
                waited += System.nanoTime() - t;
                wrong += check(model, inFlight);
                served += inFlight.header[0];
            }
        }
        comm.broadcast(new int[] {0, 0}, 0);                  // size 0: the workers stop
        double seconds = (System.nanoTime() - start) / 1e9;

        boolean ok = wrong == 0 && served > 0;
        String detail = Examples.fmt("%d batches, %d requests (%d to %d per batch) fanned out to %d worker%s, 2 batches in"
                        + " flight, %.0f requests/s, waited %.0f%% of the time, %s",
                batches, served, 300, MAX_BATCH, size - 1, size == 2 ? "" : "s", served / seconds, 100 * waited / 1e9 / seconds,
                wrong == 0 ? "every result equals the local computation" : wrong + " results DIFFER from the local computation");
        return Examples.result(NAME, comm.rank(), size, "(front end)", detail, ok);
    }

    /** Stands in for a request queue: writes {@code n} requests with ids {@code firstId ..} into {@code rows}. */
    static void receiveRequests(MemorySegment rows, int firstId, int n) {
        for (int i = 0; i < n; i++) {
            int id = firstId + i;
            SplittableRandom random = new SplittableRandom(SEED + id);
            long row = (long) i * REQUEST;
            rows.setAtIndex(JAVA_FLOAT, row, id);
            for (int f = 0; f < IN; f++) rows.setAtIndex(JAVA_FLOAT, row + 1 + f, (float) random.nextGaussian());
        }
    }

    /** Runs the model on the slot's requests here and counts the result rows that differ from the workers'. */
    private static int check(float[] model, Slot slot) {
        int n = slot.header[0];
        MemorySegment expected = MemorySegment.ofArray(new float[n * RESULT]);
        infer(model, slot.requests.segment(), n, expected);
        int wrong = 0;
        for (int i = 0; i < n; i++) {
            long from = (long) i * RESULT * Float.BYTES;
            long to = from + RESULT * Float.BYTES;
            if (MemorySegment.mismatch(expected, from, to, slot.results.segment(), from, to) >= 0) wrong++;
        }
        return wrong;
    }

    // ------------------------------------------------------------------------------------------------------ worker

    private static boolean worker(Communicator comm, float[] model) {
        int rank = comm.rank();
        int size = comm.size();
        int maxShare = MAX_BATCH / (size - 1) + 1;
        long served = 0;
        int batches = 0;
        int misplaced = 0;
        try (RegisteredBuffer requests = comm.memory().allocate(DataType.FLOAT32, (long) maxShare * REQUEST);
             RegisteredBuffer results = comm.memory().allocate(DataType.FLOAT32, (long) maxShare * RESULT)) {
            int[] header = new int[2];
            while (true) {
                comm.broadcast(header, 0);                   // what comes next: {size, first id}, or size 0 to stop
                int n = header[0];
                if (n == 0) break;
                Split split = Split.of(n, size);
                int mine = (int) split.counts()[rank];
                MemorySegment in = requests.segment().asSlice(0, (long) mine * REQUEST * Float.BYTES);
                MemorySegment out = results.segment().asSlice(0, (long) mine * RESULT * Float.BYTES);

                // The send buffer of scatterV and the receive buffer of gatherV matter only at the root.
                comm.scatterV(MemorySegment.NULL, Split.elements(split.counts(), REQUEST),
                        Split.elements(split.displs(), REQUEST), in, DataType.FLOAT32, 0);
                long firstId = header[1] + split.displs()[rank];
                for (int i = 0; i < mine; i++) {
                    if (in.getAtIndex(JAVA_FLOAT, (long) i * REQUEST) != firstId + i) misplaced++;
                }
                infer(model, in, mine, out);
                comm.gatherV(out, MemorySegment.NULL, Split.elements(split.counts(), RESULT),
                        Split.elements(split.displs(), RESULT), DataType.FLOAT32, 0);
                served += mine;
                batches++;
            }
        }
        boolean ok = misplaced == 0 && served > 0;
        String detail = Examples.fmt("served %d requests in %d batches, %s", served, batches,
                misplaced == 0 ? "every row carried the id of its place in the batch" : misplaced + " rows MISPLACED");
        return Examples.result(NAME, rank, size, "(worker)", detail, ok);
    }

    // ------------------------------------------------------------------------------------------------------- model

    /** Makes the model's weights (a stand-in for reading a checkpoint). */
    static void loadModel(float[] model) {
        SplittableRandom random = new SplittableRandom(SEED);
        for (int i = W1; i < B1; i++) model[i] = (float) (random.nextGaussian() / Math.sqrt(IN));
        for (int i = B1; i < W2; i++) model[i] = (float) (0.1 * random.nextGaussian());
        for (int i = W2; i < B2; i++) model[i] = (float) (random.nextGaussian() / Math.sqrt(HIDDEN));
        for (int i = B2; i < MODEL; i++) model[i] = (float) (0.1 * random.nextGaussian());
    }

    /** Runs the model on {@code n} request rows and writes {@code n} result rows (id, then scores). */
    static void infer(float[] m, MemorySegment requests, int n, MemorySegment results) {
        float[] x = new float[IN];
        float[] h = new float[HIDDEN];
        for (int i = 0; i < n; i++) {
            long in = (long) i * REQUEST;
            MemorySegment.copy(requests, JAVA_FLOAT, (in + 1) * Float.BYTES, x, 0, IN);
            for (int j = 0; j < HIDDEN; j++) {
                float z = m[B1 + j];
                for (int f = 0; f < IN; f++) z += m[W1 + j * IN + f] * x[f];
                h[j] = Math.max(z, 0f);                        // ReLU
            }
            long out = (long) i * RESULT;
            results.setAtIndex(JAVA_FLOAT, out, requests.getAtIndex(JAVA_FLOAT, in));   // the request id
            for (int c = 0; c < OUT; c++) {
                float z = m[B2 + c];
                for (int j = 0; j < HIDDEN; j++) z += m[W2 + c * HIDDEN + j] * h[j];
                results.setAtIndex(JAVA_FLOAT, out + 1 + c, z);
            }
        }
    }
}
