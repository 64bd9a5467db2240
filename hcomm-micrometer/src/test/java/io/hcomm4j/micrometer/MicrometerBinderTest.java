package io.hcomm4j.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.MonitorConfig;
import io.hcomm4j.ReduceOp;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link HcommMetrics} on a real job: three ranks as threads of this JVM (each its own session, over loopback TCP),
 * a known number of all-reduces, broadcasts, sends and receives, all bound to one {@link SimpleMeterRegistry} (the
 * {@code rank} tag tells them apart). The meters equal the calls and bytes made, the timer counts the calls with a
 * positive total, p50 <= p99 <= max, health 0, ops that never ran read 0, and after the session closed the op meters
 * keep their final values while health reads NaN, without throwing.
 */
class MicrometerBinderTest {
    private static final int N = 3;
    private static final int ALL_REDUCES = 7;
    private static final int BROADCASTS = 5;
    private static final int MESSAGES = 3;
    private static final long REDUCE_BYTES = 1024 * 8;
    private static final long BROADCAST_BYTES = 256 * 8;
    private static final long MESSAGE_BYTES = 100;
    /** The health gauge, then per op three counters, and for the 16 timed ops a timer and three gauges. */
    private static final int METERS_PER_RANK = 1 + HcommMetrics.OPS.size() * 3 + (HcommMetrics.OPS.size() - 2) * 4;

    @Test
    void metersFollowTheCommunicator() throws Exception {
        int port = freePort();
        MeterRegistry registry = new SimpleMeterRegistry();
        ExecutorService pool = Executors.newFixedThreadPool(N);
        try {
            List<Future<?>> ranks = new ArrayList<>();
            for (int r = 0; r < N; r++) {
                int rank = r;
                ranks.add(pool.submit(() -> {
                    rank(rank, port, registry);
                    return null;
                }));
            }
            // every rank's failure: the first one to fail closes its session and fails the others' ops in turn
            Throwable failed = null;
            for (Future<?> f : ranks) {
                try {
                    f.get(2, TimeUnit.MINUTES);
                } catch (ExecutionException e) {
                    if (failed == null) failed = e.getCause();
                    else failed.addSuppressed(e.getCause());
                }
            }
            if (failed instanceof Exception ex) throw ex;
            if (failed instanceof Error err) throw err;
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(30, TimeUnit.SECONDS);
        }
        assertThat(registry.getMeters()).as("every rank unbound its meters").isEmpty();
    }

    private static void rank(int rank, int port, MeterRegistry registry) {
        CommConfig config = CommConfig.builder().initMethod("tcp://127.0.0.1:" + port).rank(rank).worldSize(N)
                .secret("micrometer-test-secret-1").timeout(Duration.ofSeconds(60)).initTimeout(Duration.ofSeconds(60))
                .monitor(MonitorConfig.DEFAULT.withTraceDir(Path.of("target", "hcomm-trace", "job-" + port))).build();
        HcommMetrics binder;
        Communicator world;
        try (Hcomm h = Hcomm.init(config); Arena arena = Arena.ofShared()) {
            world = h.world();
            MemorySegment vec = arena.allocate(REDUCE_BYTES);
            for (int i = 0; i < ALL_REDUCES; i++) world.allReduce(vec, vec, 1024, DataType.FLOAT64, ReduceOp.SUM);
            MemorySegment block = arena.allocate(BROADCAST_BYTES);
            for (int i = 0; i < BROADCASTS; i++) world.broadcast(block, 256, DataType.FLOAT64, 0);
            // a ring: even ranks send first, odd ranks receive first
            MemorySegment out = arena.allocate(MESSAGE_BYTES);
            MemorySegment in = arena.allocate(MESSAGE_BYTES);
            int next = (rank + 1) % N;
            int prev = (rank + N - 1) % N;
            for (int i = 0; i < MESSAGES; i++) {
                if (rank % 2 == 0) {
                    world.send(out, next, i);
                    world.recv(in, prev, i);
                } else {
                    world.recv(in, prev, i);
                    world.send(out, next, i);
                }
            }

            binder = HcommMetrics.of(world, "world");
            binder.bindTo(registry);
            binder.bindTo(registry); // a second bind of the same registry adds nothing
            Tags mine = Tags.of("comm", "world", "rank", String.valueOf(rank));
            assertThat(binder.tags()).isEqualTo(mine);
            assertThat(registry.find("hcomm.ops").tags(mine).meters()).hasSize(HcommMetrics.OPS.size());
            assertThat(registry.getMeters().stream().filter(m -> m.getId().getTag("rank").equals(String.valueOf(rank))))
                    .hasSize(METERS_PER_RANK);

            assertOps(registry, rank);
            assertThat(registry.get("hcomm.health").tags(mine).gauge().value()).isEqualTo(0);
            // timed: the percentiles within the slowest call, the timer counts every call
            for (String op : List.of("allReduce", "broadcast")) {
                double p50 = gauge(registry, rank, "hcomm.op.p50", op);
                double p99 = gauge(registry, rank, "hcomm.op.p99", op);
                double max = gauge(registry, rank, "hcomm.op.max", op);
                assertThat(p50).as(op + " p50").isPositive().isLessThanOrEqualTo(p99);
                assertThat(p99).as(op + " p99").isLessThanOrEqualTo(max);
                assertThat(max).as(op + " max, seconds").isLessThan(60);
                FunctionTimer t = registry.get("hcomm.op.time").tags(mine).tag("op", op).functionTimer();
                assertThat(t.totalTime(TimeUnit.SECONDS)).as(op + " total").isPositive().isGreaterThanOrEqualTo(max);
            }
            // not timed by the library: no time meters for point to point
            assertThat(registry.find("hcomm.op.time").tags(mine).tag("op", "send").meter()).isNull();
            assertThat(registry.find("hcomm.op.p99").tags(mine).tag("op", "recv").meter()).isNull();
            // every op that never ran is there, reading 0
            for (String op : HcommMetrics.OPS) {
                if (List.of("allReduce", "broadcast", "send", "recv").contains(op)) continue;
                assertThat(counter(registry, rank, "hcomm.ops", op)).as(op).isZero();
                assertThat(counter(registry, rank, "hcomm.op.bytes", op)).as(op).isZero();
                assertThat(registry.get("hcomm.op.time").tags(mine).tag("op", op).functionTimer().count()).as(op).isZero();
                assertThat(gauge(registry, rank, "hcomm.op.max", op)).as(op).isZero();
                assertThat(gauge(registry, rank, "hcomm.op.p50", op)).as(op).isZero();
            }
            world.barrier(); // nobody closes (which would make the others DEGRADED) before everyone read health
            assertThat(counter(registry, rank, "hcomm.ops", "barrier")).as("read lazily: the barrier counts").isEqualTo(1);
        }
        // closed: the op meters keep their final values, health has none
        assertThat(world.isClosed()).isTrue();
        assertOps(registry, rank);
        assertThat(counter(registry, rank, "hcomm.ops", "barrier")).isEqualTo(1);
        assertThat(gauge(registry, rank, "hcomm.op.p99", "allReduce")).isPositive();
        assertThat(registry.get("hcomm.health").tag("rank", String.valueOf(rank)).gauge().value()).isNaN();
        binder.unbindFrom(registry);
        assertThat(registry.find("hcomm.ops").tag("rank", String.valueOf(rank)).meters()).isEmpty();
    }

    /** The counters and the timers' counts equal the calls made, the bytes the bytes, no failures. */
    private static void assertOps(MeterRegistry registry, int rank) {
        assertThat(counter(registry, rank, "hcomm.ops", "allReduce")).isEqualTo(ALL_REDUCES);
        assertThat(counter(registry, rank, "hcomm.ops", "broadcast")).isEqualTo(BROADCASTS);
        assertThat(counter(registry, rank, "hcomm.ops", "send")).isEqualTo(MESSAGES);
        assertThat(counter(registry, rank, "hcomm.ops", "recv")).isEqualTo(MESSAGES);
        assertThat(counter(registry, rank, "hcomm.op.bytes", "allReduce")).isEqualTo(ALL_REDUCES * REDUCE_BYTES);
        assertThat(counter(registry, rank, "hcomm.op.bytes", "broadcast")).isEqualTo(BROADCASTS * BROADCAST_BYTES);
        assertThat(counter(registry, rank, "hcomm.op.bytes", "send")).isEqualTo(MESSAGES * MESSAGE_BYTES);
        assertThat(counter(registry, rank, "hcomm.op.bytes", "recv")).isEqualTo(MESSAGES * MESSAGE_BYTES);
        for (String op : HcommMetrics.OPS) assertThat(counter(registry, rank, "hcomm.op.failures", op)).as(op).isZero();
        assertThat(registry.get("hcomm.op.bytes").tags("rank", String.valueOf(rank)).meter().getId().getBaseUnit())
                .isEqualTo("bytes");
        for (String op : List.of("allReduce", "broadcast")) {
            FunctionTimer t = registry.get("hcomm.op.time").tags("rank", String.valueOf(rank), "op", op).functionTimer();
            assertThat(t.count()).as(op).isEqualTo(op.equals("allReduce") ? ALL_REDUCES : BROADCASTS);
            assertThat(t.totalTime(TimeUnit.NANOSECONDS)).as(op).isPositive();
        }
    }

    private static double counter(MeterRegistry registry, int rank, String name, String op) {
        return registry.get(name).tags("comm", "world", "rank", String.valueOf(rank), "op", op).functionCounter().count();
    }

    private static double gauge(MeterRegistry registry, int rank, String name, String op) {
        return registry.get(name).tags("comm", "world", "rank", String.valueOf(rank), "op", op).gauge().value();
    }

    /**
     * A free loopback port for the store, below Linux's ephemeral range (32768-60999), where outgoing connections
     * draw their local ports: checked by binding it.
     */
    private static int freePort() {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        for (int i = 0; i < 200; i++) {
            int port = rnd.nextInt(20000, 32768);
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
                return port;
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IllegalStateException("no free port in [20000, 32768) on loopback after 200 attempts");
    }
}
