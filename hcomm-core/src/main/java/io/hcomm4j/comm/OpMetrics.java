package io.hcomm4j.comm;

import io.hcomm4j.OpStats;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Counters of one communicator's ops, by op: fixed arrays of atomics, so recording an op allocates nothing and
 * takes no lock (several threads may run ops of one communicator at once).
 */
final class OpMetrics {
    static final int BUCKETS = 32;
    private final List<String> names;
    private final AtomicLongArray calls;
    private final AtomicLongArray failures;
    private final AtomicLongArray bytes;
    private final AtomicLongArray totalNanos;
    private final AtomicLongArray maxNanos;
    private final AtomicLongArray histogram;

    OpMetrics(List<String> names) {
        this.names = List.copyOf(names);
        int n = names.size();
        calls = new AtomicLongArray(n);
        failures = new AtomicLongArray(n);
        bytes = new AtomicLongArray(n);
        totalNanos = new AtomicLongArray(n);
        maxNanos = new AtomicLongArray(n);
        histogram = new AtomicLongArray(n * BUCKETS);
    }

    /** Records a timed op ({@code op}: its position in the names given); {@code bytes} below 0 count as 0. */
    void record(int op, long opBytes, long nanos, boolean failed) {
        if (op < 0) return;
        calls.incrementAndGet(op);
        if (failed) failures.incrementAndGet(op);
        if (opBytes > 0) bytes.addAndGet(op, opBytes);
        totalNanos.addAndGet(op, nanos);
        long max;
        while (nanos > (max = maxNanos.get(op)) && !maxNanos.compareAndSet(op, max, nanos)) {
            Thread.onSpinWait();
        }
        histogram.incrementAndGet(op * BUCKETS + bucket(nanos));
    }

    /** Records an untimed op (point to point: calls and bytes posted). */
    void count(int op, long opBytes) {
        if (op < 0) return;
        calls.incrementAndGet(op);
        if (opBytes > 0) bytes.addAndGet(op, opBytes);
    }

    static int bucket(long nanos) {
        // without a branch: a "micros <= 1" test that profiling never saw true became an uncommon trap in C2's code,
        // and the first op under 2 µs then deoptimized the whole inlined collective path (seen in -Xlog:deoptimization)
        long micros = Math.max(0, nanos / 1000) | 1; // 0 and 1 both land in bucket 0
        return Math.min(BUCKETS - 1, 63 - Long.numberOfLeadingZeros(micros));
    }

    /** The ops with at least one call, in the order of the names given. */
    List<OpStats> snapshot(java.util.Set<String> untimed) {
        List<OpStats> out = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            long c = calls.get(i);
            if (c == 0) continue;
            long[] h = new long[untimed.contains(names.get(i)) ? 0 : BUCKETS];
            for (int b = 0; b < h.length; b++) h[b] = histogram.get(i * BUCKETS + b);
            out.add(new OpStats(names.get(i), c, failures.get(i), bytes.get(i), totalNanos.get(i), maxNanos.get(i), h));
        }
        return out;
    }
}
