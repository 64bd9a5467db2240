package io.hcomm4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.ddp.CommHook;
import io.hcomm4j.ddp.DataParallel;
import io.hcomm4j.examples.gpt.Gpt;
import io.hcomm4j.examples.gpt.GptConfig;
import io.hcomm4j.examples.gpt.Optimizer;
import io.hcomm4j.examples.gpt.Sgd;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The GPT trained data-parallel with hcomm-ddp on 2 ranks (threads of this JVM, each its own session over real
 * sockets and shared memory): bit-identical replicas, and the same parameters as one process on the global batch.
 *
 * <p>The comparison uses SGD: its update is linear in the gradient, so a difference in the last bits of the averaged
 * gradient (the ranks' mean gradients added in another order than the single process adds them) stays a difference
 * of float rounding. AdamW divides by the root of the second moment and turns the rounding noise of a near-zero
 * gradient into a step of up to the learning rate, so it is compared for identical replicas only.
 */
class GptDataParallelTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final GptConfig SHAPE = new GptConfig(256, 16, 32, 4, 2, 2, true, 7);
    private static final int STEPS = 4;
    private static final float LR = 0.05f;
    /** Float rounding after 4 SGD steps of parameters of order 0.02-1: a lost or doubled gradient is 1e-3 or more. */
    private static final double TOLERANCE = 2e-6;

    @Test
    void twoRanksKeepIdenticalReplicasAndMatchOneProcessOnTheGlobalBatch() throws Exception {
        Map<Integer, float[]> finals = new ConcurrentHashMap<>();
        runRanks(2, comm -> finals.put(comm.rank(), train(comm, CommHook.average(), n -> new Sgd(n, LR))));
        assertThat(finals.get(1)).as("replicas bit-identical").containsExactly(finals.get(0));

        // one process: the gradient of the global batch (both ranks' windows) is the mean of the two batch gradients
        Gpt model = new Gpt(SHAPE);
        long count = model.parameterCount();
        MemorySegment p = Arena.ofAuto().allocate(count * 4, 64);
        MemorySegment g = Arena.ofAuto().allocate(count * 4, 64);
        model.init(1, p);
        float[] start = p.toArray(ValueLayout.JAVA_FLOAT);
        Optimizer opt = new Sgd(count, LR);
        for (int s = 0; s < STEPS; s++) {
            g.fill((byte) 0);
            model.forwardBackward(p, g, model.batch(s, 0), t -> { });
            model.forwardBackward(p, g, model.batch(s, 1), t -> { });
            for (long i = 0; i < count; i++) g.setAtIndex(F32, i, g.getAtIndex(F32, i) / 2);
            opt.step(p, g);
        }
        float[] ref = p.toArray(ValueLayout.JAVA_FLOAT);
        double maxDiff = 0;
        double maxMove = 0;
        for (int i = 0; i < ref.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(finals.get(0)[i] - ref[i]));
            maxMove = Math.max(maxMove, Math.abs(ref[i] - start[i]));
        }
        System.out.printf("GptDataParallelTest: max |2 ranks - 1 process| = %.3g after %d SGD steps (parameters moved up to %.3g)%n",
                maxDiff, STEPS, maxMove);
        assertThat(maxDiff).as("max |2 ranks - 1 process|").isLessThanOrEqualTo(TOLERANCE);
        assertThat(maxMove).as("training moved the parameters").isGreaterThan(1e-3);
    }

    @Test
    void everyHookKeepsTheReplicasBitIdenticalUnderAdamW() throws Exception {
        for (CommHook hook : List.of(CommHook.average(), CommHook.bf16Compress(), CommHook.fp16Compress())) {
            Map<Integer, float[]> finals = new ConcurrentHashMap<>();
            runRanks(2, comm -> finals.put(comm.rank(),
                    train(comm, hook, n -> new io.hcomm4j.examples.gpt.AdamW(n, 1e-3f))));
            assertThat(finals.get(1)).as("replicas bit-identical with hook %s", hook).containsExactly(finals.get(0));
        }
    }

    /** {@link #STEPS} data-parallel steps of the GPT on this rank, in small buckets (many, started during backward). */
    private static float[] train(Communicator comm, CommHook hook, java.util.function.LongFunction<Optimizer> optimizer) {
        Gpt model = new Gpt(SHAPE);
        DataParallel.Builder b = DataParallel.builder(comm).hook(hook).firstBucketBytes(4096).bucketCapBytes(16384);
        model.tensors().forEach(t -> b.tensor(t.name(), t.count()));
        try (DataParallel ddp = b.build()) {
            assertThat(ddp.buckets().size()).isGreaterThan(3);
            model.init(1, ddp.parameters());
            ddp.broadcastParameters();
            Optimizer opt = optimizer.apply(ddp.parameterCount());
            for (int s = 0; s < STEPS; s++) {
                ddp.zeroGradients();
                model.forwardBackward(ddp.parameters(), ddp.gradients(), model.batch(s, comm.rank()), ddp::gradientReady);
                ddp.synchronize();
                opt.step(ddp.parameters(), ddp.gradients());
            }
            return ddp.parameters().toArray(ValueLayout.JAVA_FLOAT);
        }
    }

    /** A rank's part of a test. */
    interface Body {
        void run(Communicator comm) throws Exception;
    }

    private static void runRanks(int n, Body body) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                fs.add(pool.submit(() -> {
                    CommConfig config = CommConfig.builder().initMethod("tcp://127.0.0.1:" + port).rank(rank).worldSize(n)
                            .secret("gpt-test-job-secret").timeout(Duration.ofSeconds(60)).initTimeout(Duration.ofSeconds(60)).build();
                    try (Hcomm h = Hcomm.init(config)) {
                        body.run(h.world());
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                try {
                    f.get(180, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) throw ex;
                    throw e;
                }
            }
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(30, TimeUnit.SECONDS);
        }
    }
}
