package io.hcomm4j.ddp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.Communicator;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The data-parallel layer on ranks that are threads of this JVM, each its own session (real loopback sockets and
 * shared memory between them). Gradients are seeded per rank and step; every test checks every element on every rank.
 */
class DataParallelTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    /** Tensors in forward order: small and large, so that the 64 KiB caps below make several buckets. */
    private static final long[] COUNTS = {100, 30_000, 50, 10_000, 10, 7_000};

    private static DataParallel.Builder model(Communicator comm) {
        DataParallel.Builder b = DataParallel.builder(comm).firstBucketBytes(4 * 1024).bucketCapBytes(64 * 1024);
        for (int i = 0; i < COUNTS.length; i++) b.tensor("t" + i, COUNTS[i]);
        return b;
    }

    /** Rank {@code rank}'s gradient of element {@code i} at micro-batch {@code step}. */
    private static float grad(int rank, int step, long i) {
        return (float) new SplittableRandom(rank * 1_000_003L + step * 7919L + i).nextDouble(-1, 1);
    }

    /** Backward: adds this rank's micro-batch gradients, reporting each tensor last-to-first as it is done. */
    private static void backward(DataParallel ddp, int step) {
        int rank = ddp.communicator().rank();
        for (int t = ddp.tensorCount() - 1; t >= 0; t--) {
            MemorySegment g = ddp.gradient(t);
            long base = (g.address() - ddp.gradients().address()) / 4;
            for (long i = 0; i < g.byteSize() / 4; i++) {
                g.setAtIndex(F32, i, g.getAtIndex(F32, i) + grad(rank, step, base + i));
            }
            ddp.gradientReady(t);
        }
    }

    private static float[] copy(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_FLOAT);
    }

    /** Every rank's result must be the same bits, and each element the mean of the ranks' sums within rounding. */
    private static void assertMean(List<float[]> results, int n, int[] steps) {
        float[] first = results.getFirst();
        for (float[] r : results) assertThat(r).containsExactly(first);
        for (int i = 0; i < first.length; i++) {
            double sum = 0;
            double mag = 0;
            for (int r = 0; r < n; r++) {
                for (int s : steps) {
                    sum += grad(r, s, i);
                    mag += Math.abs(grad(r, s, i));
                }
            }
            double expected = sum / n;
            assertThat((double) first[i]).as("element %d", i).isCloseTo(expected, org.assertj.core.data.Offset.offset(1e-6 * mag + 1e-12));
        }
    }

    @Test
    void bucketsRunFromTheLastTensorBackWithinTheirCaps() throws Exception {
        ThreadRanks.run(2, comm -> {
            try (DataParallel ddp = model(comm).build()) {
                List<Bucket> b = ddp.buckets();
                // bytes {400, 120,000, 200, 40,000, 40, 28,000}; from the last tensor: t5 alone exceeds the 4 KiB first
                // cap (a bucket of its own); t4 + t3 + t2 = 40,240 B fit 64 KiB and t1 would not; t1 exceeds the cap
                // alone; t0 is left
                assertThat(b).extracting(Bucket::firstTensor, Bucket::lastTensor).containsExactly(
                        org.assertj.core.groups.Tuple.tuple(5, 5),
                        org.assertj.core.groups.Tuple.tuple(2, 4),
                        org.assertj.core.groups.Tuple.tuple(1, 1),
                        org.assertj.core.groups.Tuple.tuple(0, 0));
                long covered = 0;
                for (Bucket k : b) {
                    covered += k.count();
                    assertThat(k.gradients().address()).isEqualTo(ddp.gradients().address() + k.offset() * 4);
                    assertThat(k.gradients().byteSize()).isEqualTo(k.count() * 4);
                }
                assertThat(covered).isEqualTo(ddp.parameterCount());
                assertThat(ddp.parameterCount()).isEqualTo(java.util.Arrays.stream(COUNTS).sum());
            }
        });
    }

    @Test
    void overlappedBucketsAverageEveryElementIdenticallyOnEveryRank() throws Exception {
        for (int n : new int[] {2, 3}) {
            List<float[]> results = new CopyOnWriteArrayList<>();
            ThreadRanks.run(n, comm -> {
                try (DataParallel ddp = model(comm).build()) {
                    for (int step = 0; step < 3; step++) {
                        ddp.zeroGradients();
                        backward(ddp, step);
                        ddp.synchronize();
                    }
                    results.add(copy(ddp.gradients()));
                    assertThat(ddp.stats().steps()).isEqualTo(3);
                }
            });
            assertThat(results).hasSize(n);
            assertMean(results, n, new int[] {2});
        }
    }

    @Test
    void aBucketStartsOnceItAndEveryBucketBeforeItAreReported() throws Exception {
        ThreadRanks.run(2, comm -> {
            try (DataParallel ddp = model(comm).build()) {
                ddp.zeroGradients();
                assertThat(ddp.startedBuckets()).isZero();
                ddp.gradientReady(1);              // bucket 2: waits for buckets 0 and 1
                assertThat(ddp.startedBuckets()).isZero();
                ddp.gradientReady(5);              // bucket 0
                assertThat(ddp.startedBuckets()).isEqualTo(1);
                ddp.gradientReady(4);
                ddp.gradientReady(3);
                assertThat(ddp.startedBuckets()).isEqualTo(1);
                ddp.gradientReady(2);              // bucket 1, and with it the waiting bucket 2
                assertThat(ddp.startedBuckets()).isEqualTo(3);
                ddp.synchronize();                 // t0 never reported: reduced as it is
                assertThat(ddp.startedBuckets()).isZero();
            }
        });
    }

    @Test
    void withoutOverlapNothingStartsBeforeSynchronizeAndTheResultIsTheSame() throws Exception {
        List<float[]> over = new CopyOnWriteArrayList<>();
        List<float[]> blocking = new CopyOnWriteArrayList<>();
        ThreadRanks.run(2, comm -> {
            try (DataParallel a = model(comm).build(); DataParallel b = model(comm).overlap(false).build()) {
                a.zeroGradients();
                backward(a, 0);
                a.synchronize();
                b.zeroGradients();
                backward(b, 0);
                assertThat(b.startedBuckets()).isZero();
                b.synchronize();
                over.add(copy(a.gradients()));
                blocking.add(copy(b.gradients()));
            }
        });
        for (int r = 0; r < 2; r++) assertThat(blocking.get(r)).containsExactly(over.get(r));
        assertMean(blocking, 2, new int[] {0});
    }

    @Test
    void noSyncAccumulatesMicroBatchesLocallyAndTheNextSynchronizeAveragesTheSums() throws Exception {
        List<float[]> results = new CopyOnWriteArrayList<>();
        ThreadRanks.run(2, comm -> {
            try (DataParallel ddp = model(comm).build()) {
                ddp.zeroGradients();
                try (DataParallel.NoSync s = ddp.noSync()) {
                    backward(ddp, 10);
                    ddp.synchronize();                     // inside noSync: nothing
                    assertThat(ddp.startedBuckets()).isZero();
                    backward(ddp, 11);
                }
                // the local sums: nothing was exchanged yet
                float[] local = copy(ddp.gradients());
                int rank = comm.rank();
                for (int i = 0; i < local.length; i++) assertThat(local[i]).isEqualTo(grad(rank, 10, i) + grad(rank, 11, i));
                backward(ddp, 12);
                ddp.synchronize();
                results.add(copy(ddp.gradients()));
                assertThat(ddp.stats().steps()).isEqualTo(1);
            }
        });
        assertMean(results, 2, new int[] {10, 11, 12});
    }

    @Test
    void broadcastParametersGivesEveryRankRankZerosParameters() throws Exception {
        ThreadRanks.run(3, comm -> {
            try (DataParallel ddp = model(comm).build()) {
                MemorySegment p = ddp.parameters();
                for (long i = 0; i < ddp.parameterCount(); i++) p.setAtIndex(F32, i, grad(comm.rank(), 99, i));
                ddp.broadcastParameters();
                for (long i = 0; i < ddp.parameterCount(); i++) assertThat(p.getAtIndex(F32, i)).isEqualTo(grad(0, 99, i));
            }
        });
    }

    @Test
    void compressingHooksRoundOnTheWireAndGiveEveryRankTheSameBits() throws Exception {
        for (String kind : new String[] {"bf16", "fp16"}) {
            List<float[]> results = new CopyOnWriteArrayList<>();
            ThreadRanks.run(2, comm -> {
                CommHook hook = kind.equals("bf16") ? CommHook.bf16Compress() : CommHook.fp16Compress();
                try (DataParallel ddp = model(comm).hook(hook).build()) {
                    for (int step = 0; step < 2; step++) {
                        ddp.zeroGradients();
                        backward(ddp, step);
                        ddp.synchronize();
                    }
                    results.add(copy(ddp.gradients()));
                }
            });
            float[] first = results.getFirst();
            assertThat(results.get(1)).containsExactly(first);
            for (int i = 0; i < first.length; i++) {
                float a = grad(0, 1, i);
                float b = grad(1, 1, i);
                // the reference: each rank's value rounded, the sum rounded once, widened, and the mean
                float expected = kind.equals("bf16")
                        ? RefHalf.bf16(RefHalf.bf16(a) + RefHalf.bf16(b)) / 2f
                        : RefHalf.fp16(RefHalf.fp16(a / 2f) + RefHalf.fp16(b / 2f));
                assertThat(first[i]).as("%s element %d", kind, i).isEqualTo(expected);
                assertThat((double) first[i]).isCloseTo((a + b) / 2.0, org.assertj.core.data.Offset.offset(kind.equals("bf16") ? 1.6e-2 : 2e-3));
            }
        }
    }

    @Test
    void misuseIsAClearErrorNamingTheRankAndTheTensor() throws Exception {
        ThreadRanks.run(2, comm -> {
            int rank = comm.rank();
            assertThatThrownBy(() -> DataParallel.builder(comm).tensor("w", 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rank " + rank).hasMessageContaining("(w)");
            assertThatThrownBy(() -> DataParallel.builder(comm).build())
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("rank " + rank);
            assertThatThrownBy(() -> DataParallel.builder(comm).bucketCapBytes(0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bucketCapBytes");
            try (DataParallel ddp = model(comm).build()) {
                assertThatThrownBy(() -> ddp.gradientReady(6))
                        .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("rank " + rank).hasMessageContaining("tensor 6");
                ddp.gradientReady(5);
                assertThatThrownBy(() -> ddp.gradientReady(5))
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("rank " + rank).hasMessageContaining("(t5)");
                assertThatThrownBy(ddp::zeroGradients).isInstanceOf(IllegalStateException.class).hasMessageContaining("synchronize");
                assertThatThrownBy(ddp::noSync).isInstanceOf(IllegalStateException.class);
                ddp.synchronize();                 // the step still completes on both ranks
                ddp.zeroGradients();
            }
        });
    }

    @Test
    void aRankThatAbortsMidStepIsAnExceptionFromSynchronizeOnEveryRankNotAHang() throws Exception {
        ThreadRanks.run(2, comm -> {
            try (DataParallel ddp = model(comm).build()) {
                ddp.zeroGradients();
                backward(ddp, 0);
                ddp.synchronize();                      // one good step first
                ddp.zeroGradients();
                long t0 = System.nanoTime();
                // rank 0 meets the abort while backward starts its buckets, or in synchronize; rank 1 in synchronize
                Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(() -> {
                    if (comm.rank() == 1) {
                        ddp.gradientReady(5);           // bucket 0 in flight, then this rank gives up
                        comm.abort();
                    } else {
                        backward(ddp, 1);
                    }
                    ddp.synchronize();
                });
                assertThat(thrown).isInstanceOf(io.hcomm4j.HcommException.class).hasMessageContaining("rank 1 aborted");
                // well within the 60 s op timeout: the abort reached the peer, nobody waited it out
                assertThat(System.nanoTime() - t0).isLessThan(30_000_000_000L);
                if (comm.rank() == 0) assertThatThrownBy(ddp::synchronize).isInstanceOf(io.hcomm4j.HcommException.class);
                ddp.zeroGradients();                    // the failed step is over
                assertThat(ddp.startedBuckets()).isZero();
            }
        });
    }

    @Test
    void trainingOnTwoRanksMatchesOneProcessOnTheGlobalBatchAndKeepsReplicasIdentical() throws Exception {
        // linear regression y = w.x + b on 8 features; each rank takes 4 samples a step, the reference all 8
        int features = 8;
        int steps = 30;
        float lr = 0.05f;
        ConcurrentHashMap<Integer, float[]> finals = new ConcurrentHashMap<>();
        ThreadRanks.run(2, comm -> {
            try (DataParallel ddp = DataParallel.builder(comm).tensor("w", features).tensor("b", 1).build()) {
                MemorySegment p = ddp.parameters();
                for (int i = 0; i <= features; i++) p.setAtIndex(F32, i, comm.rank() == 0 ? 0.1f * i : 99f);
                ddp.broadcastParameters();
                for (int s = 0; s < steps; s++) {
                    ddp.zeroGradients();
                    Regression.addGradient(p, ddp.gradients(), features, s, comm.rank() * 4, 4);
                    ddp.gradientReady(1);
                    ddp.gradientReady(0);
                    ddp.synchronize();
                    for (int i = 0; i <= features; i++) {
                        p.setAtIndex(F32, i, p.getAtIndex(F32, i) - lr * ddp.gradients().getAtIndex(F32, i));
                    }
                }
                finals.put(comm.rank(), copy(p));
            }
        });
        float[] ref = new float[features + 1];
        for (int i = 0; i <= features; i++) ref[i] = 0.1f * i;
        MemorySegment rp = MemorySegment.ofArray(ref);
        float[] rg = new float[features + 1];
        MemorySegment rgs = MemorySegment.ofArray(rg);
        for (int s = 0; s < steps; s++) {
            java.util.Arrays.fill(rg, 0f);
            Regression.addGradient(rp, rgs, features, s, 0, 8);
            for (int i = 0; i <= features; i++) ref[i] -= lr * rg[i];
        }
        assertThat(finals.get(1)).containsExactly(finals.get(0));
        for (int i = 0; i <= features; i++) {
            assertThat((double) finals.get(0)[i]).as("parameter %d", i).isCloseTo(ref[i], org.assertj.core.data.Offset.offset(1e-5));
        }
        // and training went somewhere: the parameters moved from their start
        assertThat(finals.get(0)).isNotEqualTo(new float[] {0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f});
    }

    /** A seeded linear-regression problem: the gradient of the mean squared error over samples [from, from + k). */
    static final class Regression {
        static void addGradient(MemorySegment p, MemorySegment g, int features, int step, int from, int k) {
            for (int s = from; s < from + k; s++) {
                SplittableRandom r = new SplittableRandom(step * 131L + s);
                float[] x = new float[features];
                float y = 0.5f;
                for (int i = 0; i < features; i++) {
                    x[i] = (float) r.nextDouble(-1, 1);
                    y += (i % 3 - 1) * x[i];
                }
                float pred = p.getAtIndex(F32, features);
                for (int i = 0; i < features; i++) pred += p.getAtIndex(F32, i) * x[i];
                float d = 2f * (pred - y) / k;
                for (int i = 0; i < features; i++) g.setAtIndex(F32, i, g.getAtIndex(F32, i) + d * x[i]);
                g.setAtIndex(F32, features, g.getAtIndex(F32, features) + d);
            }
        }
    }
}
