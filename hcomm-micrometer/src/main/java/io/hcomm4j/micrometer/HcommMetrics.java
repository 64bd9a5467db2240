package io.hcomm4j.micrometer;

import io.hcomm4j.Communicator;
import io.hcomm4j.Health;
import io.hcomm4j.OpStats;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * A Micrometer {@link MeterBinder} for one {@link Communicator}: its ops' counts, bytes and times
 * ({@link Communicator#metrics()}) and its {@link Communicator#health() health}, for any {@link MeterRegistry}
 * (Prometheus, OTLP, JMX, ...).
 *
 * <pre>{@code
 * Communicator world = hcomm.world();
 * HcommMetrics.of(world, "world").bindTo(registry);
 * }</pre>
 *
 * <h2>Meters</h2>
 * Every meter carries the tags {@code comm} (the name given to {@link #of(Communicator, String)}) and {@code rank}
 * (this rank in the communicator), plus any extra tags given; the per-op meters also {@code op}. All tags are bounded:
 * the op is one of {@link #OPS}, registered up front, so a meter exists (reading 0) before its op first runs and the
 * set of series never changes while the job runs.
 * <ul>
 *   <li>{@code hcomm.ops} (function counter): calls of the op, successful or not;</li>
 *   <li>{@code hcomm.op.failures} (function counter): of those, how many ended with an exception;</li>
 *   <li>{@code hcomm.op.bytes} (function counter, base unit bytes): bytes of those calls, as {@link OpStats#bytes()}
 *   counts them;</li>
 *   <li>{@code hcomm.op.time} (function timer): count = calls, total = their summed time;</li>
 *   <li>{@code hcomm.op.max} (gauge, seconds): the slowest call since the communicator was created (not a decaying
 *   window like a Micrometer {@code Timer}'s max);</li>
 *   <li>{@code hcomm.op.p50}, {@code hcomm.op.p99} (gauges, seconds): from the power-of-two histogram
 *   ({@link OpStats#percentileMicros(double)}): the upper bound of the bucket, so within a factor of two above the
 *   truth, never above the max; 0 until the op ran;</li>
 *   <li>{@code hcomm.health} (gauge, no op tag): 0 READY, 1 DEGRADED, 2 FAILED.</li>
 * </ul>
 * {@code send} and {@code recv} are not timed by the library (their completion is asynchronous), so they have the
 * three counters only, no time, max or percentile meters.
 *
 * <h2>Reading</h2>
 * Values are read when the registry asks for them (a scrape, a publish step): each read calls
 * {@link Communicator#metrics()}, a snapshot of a few atomic counters; there is no background thread and nothing is
 * recorded twice.
 *
 * <h2>After the communicator closes</h2>
 * The op meters keep reporting their final values (a counter never goes backwards, and the last scrapes still see the
 * totals); on the first read after the close this binder keeps that final snapshot and lets go of the communicator.
 * {@code hcomm.health} then reads {@code NaN}: a closed communicator has no health (NaN is also what Micrometer reports
 * for a gauge whose object is gone). Reading never throws. The meters stay registered until
 * {@link #unbindFrom(MeterRegistry)} removes them; do that before binding another communicator under the same name and
 * tags, since a registry hands back the meter it already has for an id.
 *
 * <p>The meters hold this binder's state weakly except {@code hcomm.health}, which holds it strongly: the binder
 * need not be kept by the caller, and its state is collectable once its meters are removed.
 */
public final class HcommMetrics implements MeterBinder {
    /** The op names the meters are registered for, in API order: the collectives, then {@code send} and {@code recv}. */
    public static final List<String> OPS = List.of("allReduce", "reduce", "reduceScatter", "reduceScatterV", "broadcast",
            "allGather", "allGatherV", "gather", "gatherV", "scatter", "scatterV", "allToAll", "allToAllV", "barrier",
            "scan", "exscan", "send", "recv");

    /** The ops the library counts but does not time ({@link OpStats}: point to point). */
    private static final java.util.Set<String> UNTIMED = java.util.Set.of("send", "recv");

    private final Source source;
    private final Tags tags;
    private final Map<MeterRegistry, List<Meter>> bound = new IdentityHashMap<>();

    private HcommMetrics(Communicator comm, Tags tags) {
        this.source = new Source(comm);
        this.tags = tags;
    }

    /**
     * A binder for the world communicator: as {@link #of(Communicator, String)} with the name {@code "world"}.
     *
     * @throws NullPointerException if comm is null
     */
    public static HcommMetrics of(Communicator comm) {
        return of(comm, "world");
    }

    /**
     * A binder for {@code comm}, its meters tagged {@code comm=name} and {@code rank=comm.rank()}. Give each
     * communicator of a process that you bind a name of its own ("world", "tensor-parallel", ...): a fixed, small set
     * of names keeps the series bounded.
     *
     * @throws NullPointerException if an argument is null
     */
    public static HcommMetrics of(Communicator comm, String name) {
        return of(comm, name, Tags.empty());
    }

    /**
     * As {@link #of(Communicator, String)}, with {@code extraTags} on every meter too (keep them bounded: a job name,
     * not an id per run).
     *
     * @throws NullPointerException if an argument is null
     */
    public static HcommMetrics of(Communicator comm, String name, Iterable<Tag> extraTags) {
        Objects.requireNonNull(comm, "comm");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(extraTags, "extraTags");
        Tags t = Tags.of(extraTags).and("comm", name).and("rank", String.valueOf(comm.rank()));
        return new HcommMetrics(comm, t);
    }

    /** The tags every meter of this binder carries ({@code comm}, {@code rank} and the extra ones). */
    public Tags tags() {
        return tags;
    }

    /**
     * Registers the meters listed in the class comment with {@code registry}. Binding to a registry this binder is
     * already bound to does nothing.
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        List<Meter> meters = new ArrayList<>();
        synchronized (bound) {
            if (bound.containsKey(registry)) return;
            bound.put(registry, meters);
        }
        // held strongly: keeps the source alive as long as this gauge is registered (the others hold it weakly)
        meters.add(Gauge.builder("hcomm.health", source, Source::health).strongReference(true).tags(tags)
                .description("Communicator health: 0 READY, 1 DEGRADED, 2 FAILED (NaN once closed)").register(registry));
        for (String op : OPS) {
            Tags t = tags.and("op", op);
            meters.add(FunctionCounter.builder("hcomm.ops", source, read(op, OpStats::calls)).tags(t)
                    .description("Calls of the op, successful or not").register(registry));
            meters.add(FunctionCounter.builder("hcomm.op.failures", source, read(op, OpStats::failures)).tags(t)
                    .description("Calls of the op that ended with an exception").register(registry));
            meters.add(FunctionCounter.builder("hcomm.op.bytes", source, read(op, OpStats::bytes)).tags(t).baseUnit("bytes")
                    .description("Bytes of the op's calls (a collective's largest buffer, a send's buffer, a receive's capacity)")
                    .register(registry));
            if (UNTIMED.contains(op)) continue;
            meters.add(FunctionTimer.builder("hcomm.op.time", source, s -> s.stats(op).calls(),
                            s -> s.stats(op).totalNanos(), TimeUnit.NANOSECONDS).tags(t)
                    .description("Time of the op's calls, from start to return on this rank").register(registry));
            meters.add(Gauge.builder("hcomm.op.max", source, read(op, s -> s.maxNanos() / 1e9)).tags(t).baseUnit("seconds")
                    .description("The slowest call of the op since the communicator was created").register(registry));
            meters.add(Gauge.builder("hcomm.op.p50", source, read(op, s -> percentileSeconds(s, 0.5))).tags(t)
                    .baseUnit("seconds").description("Median time of the op (power-of-two histogram bucket bound)")
                    .register(registry));
            meters.add(Gauge.builder("hcomm.op.p99", source, read(op, s -> percentileSeconds(s, 0.99))).tags(t)
                    .baseUnit("seconds").description("99th percentile time of the op (power-of-two histogram bucket bound)")
                    .register(registry));
        }
    }

    /** Removes from {@code registry} the meters {@link #bindTo(MeterRegistry)} registered there; nothing if none. */
    public void unbindFrom(MeterRegistry registry) {
        List<Meter> meters;
        synchronized (bound) {
            meters = bound.remove(registry);
        }
        if (meters != null) meters.forEach(registry::remove);
    }

    /**
     * {@link OpStats#percentileMicros(double)} in seconds, capped at the max in seconds as {@code hcomm.op.max} reports
     * it: the percentile is capped at the max in microseconds, and converting both again could put it one rounding
     * step above (0.16319429000000002 s over 0.16319429 s, seen).
     */
    private static double percentileSeconds(OpStats s, double q) {
        return Math.min(s.percentileMicros(q) / 1e6, s.maxNanos() / 1e9);
    }

    private static ToDoubleFunction<Source> read(String op, ToDoubleFunction<OpStats> f) {
        return s -> f.applyAsDouble(s.stats(op));
    }

    /**
     * What the meters read: the communicator while it is open, its final snapshot once it closed. Every read takes
     * a fresh snapshot ({@code metrics()} is a few atomic reads per op); the last one is kept for when a read fails.
     */
    private static final class Source {
        private volatile Communicator comm;
        private volatile List<OpStats> last = List.of();

        Source(Communicator comm) {
            this.comm = comm;
        }

        OpStats stats(String op) {
            for (OpStats s : snapshot()) {
                if (s.op().equals(op)) return s;
            }
            return new OpStats(op, 0, 0, 0, 0, 0, new long[0]);
        }

        private List<OpStats> snapshot() {
            Communicator c = comm;
            if (c == null) return last;
            try {
                boolean closed = c.isClosed();
                List<OpStats> now = c.metrics();
                last = now;
                if (closed) comm = null; // the final values: let go of the communicator
                return now;
            } catch (RuntimeException e) {
                return last;
            }
        }

        double health() {
            Communicator c = comm;
            if (c == null) return Double.NaN;
            try {
                if (c.isClosed()) return Double.NaN;
                Health.State s = c.health().state();
                return switch (s) {
                    case READY -> 0;
                    case DEGRADED -> 1;
                    case FAILED -> 2;
                };
            } catch (RuntimeException e) {
                return Double.NaN;
            }
        }
    }
}
