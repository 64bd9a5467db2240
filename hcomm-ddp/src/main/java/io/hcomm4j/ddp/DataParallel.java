package io.hcomm4j.ddp;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.RegisteredBuffer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Data-parallel training, as PyTorch's {@code DistributedDataParallel}: every rank holds a replica of the model and
 * trains on its own batch, and the ranks average their gradients before each optimizer step, so the replicas stay
 * bit-identical.
 *
 * <p>The model's parameters and gradients live in two flat float32 buffers of registered memory that this class owns
 * ({@link #parameters()}, {@link #gradients()}); tensor {@code i} is the slice {@link #parameter(int)} /
 * {@link #gradient(int)}. Tensors are declared in forward order. Their gradients are grouped into {@link Bucket}s in
 * reverse order (bucket 0 holds the last tensors, whose gradients backward finishes first): the first bucket at most
 * {@link Builder#firstBucketBytes} (1 MiB by default, so communication starts early), the others at most
 * {@link Builder#bucketCapBytes} (25 MiB, DDP's default); a tensor larger than the cap gets a bucket of its own.
 *
 * <pre>{@code
 * try (DataParallel ddp = DataParallel.builder(comm).tensor("w1", n1).tensor("b1", m1) ... .build()) {
 *     model.init(seed, ddp.parameters());
 *     ddp.broadcastParameters();                        // every replica starts from rank 0's parameters
 *     for (int step = 0; step < steps; step++) {
 *         ddp.zeroGradients();
 *         model.forwardBackward(ddp.parameters(), ddp.gradients(), batch(step), ddp::gradientReady);
 *         ddp.synchronize();                            // the one wait: gradients are the mean over the ranks
 *         optimizer.step(ddp.parameters(), ddp.gradients());
 *     }
 * }
 * }</pre>
 *
 * <p>Backward tells the layer when tensor {@code i}'s gradient is final with {@link #gradientReady(int)}; when every
 * tensor of the next bucket is ready, the bucket's collective starts ({@link CommHook#start}) and runs on the
 * communicator's collective thread while backward goes on. Buckets start strictly in bucket order, on every rank the
 * same, so the ranks' collectives always match. {@link #synchronize()} starts whatever has not started (tensors never
 * reported count as ready, with the gradient they hold: an unused parameter contributes zeros), waits for every bucket
 * and finishes it ({@link CommHook#finish}). With {@link Builder#overlap overlap(false)} nothing starts before
 * {@code synchronize}.
 *
 * <p>Gradient accumulation: inside {@link #noSync()} reports are ignored and {@code synchronize} does nothing, so
 * gradients add up locally over several backward passes; the first {@code synchronize} after it averages the sums.
 *
 * <p>Determinism: the collectives give every rank the same bits, so with the same seeds the replicas hold
 * bit-identical parameters after every step. Against one process training on the global batch (the ranks' batches
 * together) the result agrees within float rounding: the mean over ranks of per-rank mean gradients equals the
 * global mean gradient up to the order of the additions.
 *
 * <p>Not thread-safe: one training thread calls it. Errors of a collective (a peer failed, a timeout) are thrown by
 * {@code synchronize}.
 */
public final class DataParallel implements AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private final Communicator comm;
    private final int rank;
    private final String[] names;
    private final long[] offsets;
    private final long[] counts;
    private final RegisteredBuffer params;
    private final RegisteredBuffer grads;
    private final MemorySegment[] paramSlices;
    private final MemorySegment[] gradSlices;
    private final Bucket[] buckets;
    /** Tensor to bucket. */
    private final int[] bucketOf;
    /** Per bucket: tensors of it not yet reported in this step. */
    private final int[] pending;
    private final boolean[] ready;
    private final CommFuture<?>[] inFlight;
    private final List<Map<DataType, RegisteredBuffer>> wires;
    private final boolean overlap;
    private final CommHook hook;
    /** The next bucket to start; every bucket before it is in flight. */
    private int nextStart;
    private int noSyncDepth;
    private boolean closed;
    private long steps;
    private long waitNanos;
    private long lastWaitNanos;
    private long bytesReduced;

    private DataParallel(Builder b) {
        this.comm = b.comm;
        this.rank = comm.rank();
        int n = b.names.size();
        this.names = b.names.toArray(String[]::new);
        this.counts = b.counts.stream().mapToLong(Long::longValue).toArray();
        this.offsets = new long[n];
        long total = 0;
        for (int i = 0; i < n; i++) {
            offsets[i] = total;
            total = Math.addExact(total, counts[i]);
        }
        this.overlap = b.overlap;
        this.hook = b.hook;
        RegisteredBuffer p = comm.memory().allocate(DataType.FLOAT32, total);
        RegisteredBuffer g;
        try {
            g = comm.memory().allocate(DataType.FLOAT32, total);
        } catch (RuntimeException e) {
            p.close();
            throw e;
        }
        this.params = p;
        this.grads = g;
        this.paramSlices = new MemorySegment[n];
        this.gradSlices = new MemorySegment[n];
        for (int i = 0; i < n; i++) {
            paramSlices[i] = params.segment().asSlice(offsets[i] * 4, counts[i] * 4);
            gradSlices[i] = grads.segment().asSlice(offsets[i] * 4, counts[i] * 4);
        }
        this.bucketOf = new int[n];
        this.buckets = assign(b.firstBucketBytes, b.bucketCapBytes);
        this.pending = new int[buckets.length];
        this.ready = new boolean[n];
        this.inFlight = new CommFuture<?>[buckets.length];
        this.wires = new ArrayList<>(buckets.length);
        for (int i = 0; i < buckets.length; i++) wires.add(new EnumMap<>(DataType.class));
        resetStep();
        zeroGradients();
    }

    /** Buckets from the last tensor back to the first, each as many consecutive tensors as its cap holds. */
    private Bucket[] assign(long firstCap, long cap) {
        List<Bucket> out = new ArrayList<>();
        int hi = names.length - 1;
        while (hi >= 0) {
            long limit = out.isEmpty() ? firstCap : cap;
            int lo = hi;
            long bytes = counts[hi] * 4;
            while (lo > 0 && bytes + counts[lo - 1] * 4 <= limit) bytes += counts[--lo] * 4;
            int index = out.size();
            long count = offsets[hi] + counts[hi] - offsets[lo];
            out.add(new Bucket(index, lo, hi, offsets[lo], count,
                    grads.segment().asSlice(offsets[lo] * 4, count * 4), this));
            for (int t = lo; t <= hi; t++) bucketOf[t] = index;
            hi = lo - 1;
        }
        return out.toArray(Bucket[]::new);
    }

    /**
     * A builder for a data-parallel layer over {@code comm}'s ranks.
     *
     * @param comm the communicator of the replicas
     * @return a new builder
     */
    public static Builder builder(Communicator comm) {
        return new Builder(comm);
    }

    /** The communicator of the replicas. */
    public Communicator communicator() {
        return comm;
    }

    /** The flat float32 parameter buffer: every tensor, in forward order. */
    public MemorySegment parameters() {
        return params.segment();
    }

    /** The flat float32 gradient buffer, laid out as {@link #parameters()}. */
    public MemorySegment gradients() {
        return grads.segment();
    }

    /** Float32 elements of the parameter (and gradient) buffer. */
    public long parameterCount() {
        return params.byteSize() / 4;
    }

    /** Tensors declared. */
    public int tensorCount() {
        return names.length;
    }

    /** Tensor {@code i}'s name. */
    public String tensorName(int i) {
        return names[checkTensor(i)];
    }

    /** Tensor {@code i}'s parameters: a slice of {@link #parameters()}. */
    public MemorySegment parameter(int i) {
        return paramSlices[checkTensor(i)];
    }

    /** Tensor {@code i}'s gradient: a slice of {@link #gradients()}. */
    public MemorySegment gradient(int i) {
        return gradSlices[checkTensor(i)];
    }

    /** The buckets, in the order they are reduced. */
    public List<Bucket> buckets() {
        return Collections.unmodifiableList(java.util.Arrays.asList(buckets));
    }

    /** Copies rank 0's parameters to every rank (a blocking broadcast); call it once after initializing them. */
    public void broadcastParameters() {
        checkOpen();
        comm.broadcast(params.segment(), parameterCount(), DataType.FLOAT32, 0);
    }

    /**
     * Sets every gradient to zero, for the next step's backward to add into.
     *
     * @throws IllegalStateException if buckets of this step are still in flight (a missing {@link #synchronize()})
     */
    public void zeroGradients() {
        checkOpen();
        if (nextStart > 0) {
            throw new IllegalStateException("rank " + rank + ": zeroGradients while " + nextStart
                    + " bucket(s) of this step are being reduced; call synchronize() first");
        }
        grads.segment().fill((byte) 0);
    }

    /**
     * Backward's report that tensor {@code tensor}'s gradient is final for this step. Starts the reduction of every
     * bucket, in bucket order, whose tensors are all reported. Ignored inside {@link #noSync()}. A collective that
     * cannot start (the communicator failed or was aborted) throws here, in backward; {@link #synchronize()} then
     * ends the step (it throws too) and the layer takes a new step after it.
     *
     * @param tensor the tensor's index, in forward order
     * @throws IndexOutOfBoundsException if there is no such tensor
     * @throws IllegalStateException     if the tensor was reported already in this step
     */
    public void gradientReady(int tensor) {
        checkTensor(tensor);
        if (noSyncDepth > 0) return;
        checkOpen();
        if (ready[tensor]) {
            throw new IllegalStateException("rank " + rank + ": gradient of tensor " + tensor + " (" + names[tensor]
                    + ") reported ready twice in one step");
        }
        ready[tensor] = true;
        int b = bucketOf[tensor];
        pending[b]--;
        if (overlap) {
            while (nextStart < buckets.length && pending[nextStart] == 0) startNext();
        }
    }

    /**
     * Ends the step's communication: starts every bucket not started yet, waits for all, and finishes them. Afterwards
     * {@link #gradients()} holds the mean over the ranks (as the hook computes it) on every rank. Inside
     * {@link #noSync()} it does nothing.
     *
     * @throws io.hcomm4j.HcommException what a bucket's collective failed with (a peer failed, a timeout, an abort)
     */
    public void synchronize() {
        if (noSyncDepth > 0) return;
        checkOpen();
        long t0 = System.nanoTime();
        try {
            while (nextStart < buckets.length) startNext();
            for (int b = 0; b < buckets.length; b++) {
                inFlight[b].await();
                inFlight[b] = null;
                hook.finish(comm, buckets[b]);
            }
        } finally {
            // a failed step leaves the layer ready for another try (or for close) rather than stuck mid-step
            for (int b = 0; b < buckets.length; b++) {
                if (inFlight[b] != null) {
                    try {
                        inFlight[b].await();
                    } catch (RuntimeException ignored) {
                        // the first failure is the one thrown
                    }
                    inFlight[b] = null;
                }
            }
            resetStep();
        }
        lastWaitNanos = System.nanoTime() - t0;
        waitNanos += lastWaitNanos;
        steps++;
        bytesReduced += parameterCount() * 4;
    }

    /**
     * Starts gradient accumulation: until the returned scope is closed, {@link #gradientReady} and
     * {@link #synchronize} do nothing, so backward passes add their gradients up locally. Scopes nest.
     *
     * <pre>{@code
     * try (var s = ddp.noSync()) { model.forwardBackward(..., ddp::gradientReady); }   // micro-batch 1, local
     * model.forwardBackward(..., ddp::gradientReady);                                  // micro-batch 2, reduced
     * ddp.synchronize();
     * }</pre>
     *
     * @return the scope; close it to end the accumulation
     * @throws IllegalStateException if buckets of this step are already in flight
     */
    public NoSync noSync() {
        checkOpen();
        if (nextStart > 0) {
            throw new IllegalStateException("rank " + rank + ": noSync() while " + nextStart
                    + " bucket(s) of this step are being reduced");
        }
        noSyncDepth++;
        return new NoSync();
    }

    /** A {@link #noSync()} scope. */
    public final class NoSync implements AutoCloseable {
        private boolean open = true;

        private NoSync() {
        }

        /** Ends this scope (idempotent). */
        @Override
        public void close() {
            if (open) {
                open = false;
                noSyncDepth--;
            }
        }
    }

    /** What the layer has done so far. */
    public Stats stats() {
        return new Stats(steps, buckets.length, bytesReduced, waitNanos, lastWaitNanos);
    }

    /**
     * The layer's counters.
     *
     * @param steps          {@link #synchronize()} calls that reduced gradients
     * @param buckets        buckets per step
     * @param bytesReduced   float32 gradient bytes reduced, over all steps
     * @param waitNanos      time spent in {@code synchronize}, over all steps: the communication that backward did
     *                       not hide (plus the hooks' finishing work)
     * @param lastWaitNanos  the same, of the last step
     */
    public record Stats(long steps, int buckets, long bytesReduced, long waitNanos, long lastWaitNanos) {
    }

    /** Releases the buffers (parameters, gradients, wire buffers). Waits for buckets in flight first. Idempotent. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        for (int b = 0; b < buckets.length; b++) {
            if (inFlight[b] != null) {
                try {
                    inFlight[b].await();
                } catch (RuntimeException ignored) {
                    // closing: the collective's failure was or will be reported by whoever waits for it
                }
            }
        }
        for (Map<DataType, RegisteredBuffer> m : wires) m.values().forEach(RegisteredBuffer::close);
        grads.close();
        params.close();
    }

    /** Buckets started in this step so far (for the tests). */
    int startedBuckets() {
        return nextStart;
    }

    MemorySegment wire(Bucket b, DataType type) {
        checkOpen();
        return wires.get(b.index()).computeIfAbsent(type, t -> comm.memory().allocate(t, b.count())).segment();
    }

    /** Starts bucket {@link #nextStart}; if the hook throws (an aborted communicator), the bucket stays unstarted. */
    private void startNext() {
        inFlight[nextStart] = hook.start(comm, buckets[nextStart]);
        nextStart++;
    }

    private void resetStep() {
        nextStart = 0;
        java.util.Arrays.fill(ready, false);
        for (int b = 0; b < buckets.length; b++) pending[b] = buckets[b].lastTensor() - buckets[b].firstTensor() + 1;
    }

    private int checkTensor(int i) {
        if (i < 0 || i >= names.length) {
            throw new IndexOutOfBoundsException("rank " + rank + ": tensor " + i + " is out of range [0, " + names.length + ")");
        }
        return i;
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("rank " + rank + ": the DataParallel is closed");
    }

    /** Settings of a {@link DataParallel}; tensors are declared in forward order. */
    public static final class Builder {
        private final Communicator comm;
        private final List<String> names = new ArrayList<>();
        private final List<Long> counts = new ArrayList<>();
        private long bucketCapBytes = 25L << 20;
        private long firstBucketBytes = 1L << 20;
        private boolean overlap = true;
        private CommHook hook = CommHook.average();

        private Builder(Communicator comm) {
            this.comm = Objects.requireNonNull(comm, "comm");
        }

        /**
         * Declares the next parameter tensor, in forward order.
         *
         * @param name  its name (for messages)
         * @param count its float32 elements, at least 1
         * @return this builder
         */
        public Builder tensor(String name, long count) {
            Objects.requireNonNull(name, "name");
            if (count < 1) {
                throw new IllegalArgumentException("rank " + comm.rank() + ": tensor " + names.size() + " (" + name
                        + "): count must be at least 1, was " + count);
            }
            names.add(name);
            counts.add(count);
            return this;
        }

        /** The largest bucket, in bytes of float32 gradients (default 25 MiB, PyTorch DDP's {@code bucket_cap_mb}). */
        public Builder bucketCapBytes(long bytes) {
            if (bytes < 4) throw new IllegalArgumentException("rank " + comm.rank() + ": bucketCapBytes must be at least 4, was " + bytes);
            this.bucketCapBytes = bytes;
            return this;
        }

        /** The largest first bucket (default 1 MiB): small, so that communication starts early in backward. */
        public Builder firstBucketBytes(long bytes) {
            if (bytes < 4) throw new IllegalArgumentException("rank " + comm.rank() + ": firstBucketBytes must be at least 4, was " + bytes);
            this.firstBucketBytes = bytes;
            return this;
        }

        /** Whether buckets are reduced while backward goes on (default) or all in {@link #synchronize()}. */
        public Builder overlap(boolean overlap) {
            this.overlap = overlap;
            return this;
        }

        /** How buckets are reduced (default {@link CommHook#average()}). */
        public Builder hook(CommHook hook) {
            this.hook = Objects.requireNonNull(hook, "hook");
            return this;
        }

        /**
         * Allocates the buffers (zeroed gradients; parameters unspecified until initialized) and assigns the buckets.
         *
         * @throws IllegalStateException if no tensor was declared
         */
        public DataParallel build() {
            if (names.isEmpty()) throw new IllegalStateException("rank " + comm.rank() + ": no tensor declared");
            return new DataParallel(this);
        }
    }
}
