package io.hcomm4j;

/**
 * What one communicator's ops of one kind did since the communicator was created ({@link Communicator#metrics()}).
 * Collectives are timed from the moment they start running to the moment they return on this rank; point-to-point
 * ops ({@code send}, {@code recv}) count the calls and bytes posted on this rank (their completion is not timed).
 *
 * @param op               the op's name as in the API ({@code allReduce}, {@code broadcast}, …, {@code send}, {@code recv})
 * @param calls            ops that ran (successful or not)
 * @param failures         of those, how many ended with an exception
 * @param bytes            bytes of all those ops (a collective's largest buffer, as {@code hcomm perf} counts it; a
 *                         send its buffer; a receive its buffer's capacity)
 * @param totalNanos       the ops' time summed (0 for point-to-point)
 * @param maxNanos         the slowest op's time (0 for point-to-point)
 * @param latencyHistogram bucket i counts ops that took at least 2^i µs and less than 2^(i+1) µs (bucket 0 also
 *                         takes those under 1 µs; the last one everything from 2^31 µs on); empty for point-to-point
 */
public record OpStats(String op, long calls, long failures, long bytes, long totalNanos, long maxNanos,
                      long[] latencyHistogram) {
    /** Keeps its own copy of the histogram: a record that shares its caller's array is not a value. */
    public OpStats {
        java.util.Objects.requireNonNull(op, "op");
        latencyHistogram = latencyHistogram.clone();
    }

    /** A copy of the histogram (see the class comment). */
    @Override
    public long[] latencyHistogram() {
        return latencyHistogram.clone();
    }

    /** Mean time per op in microseconds, or 0 if none was timed. */
    public double meanMicros() {
        return calls == 0 ? 0 : totalNanos / 1e3 / calls;
    }

    /**
     * The time under which a fraction {@code q} of the timed ops ran, in microseconds, from the histogram: the upper
     * bound of the bucket where that fraction is reached (so within a factor of two above the truth), never above the
     * slowest op; 0 if none was timed.
     *
     * @throws IllegalArgumentException if q is not in (0, 1]
     */
    public double percentileMicros(double q) {
        if (!(q > 0 && q <= 1)) throw new IllegalArgumentException("q must be in (0, 1], was " + q);
        long timed = 0;
        for (long c : latencyHistogram) timed += c;
        if (timed == 0) return 0;
        long want = (long) Math.ceil(q * timed);
        long seen = 0;
        for (int i = 0; i < latencyHistogram.length; i++) {
            seen += latencyHistogram[i];
            if (seen >= want) return Math.min(1L << (i + 1), maxNanos / 1e3);
        }
        return maxNanos / 1e3;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OpStats s && op.equals(s.op) && calls == s.calls && failures == s.failures && bytes == s.bytes
                && totalNanos == s.totalNanos && maxNanos == s.maxNanos && java.util.Arrays.equals(latencyHistogram, s.latencyHistogram);
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(op, calls, failures, bytes, totalNanos, maxNanos) * 31 + java.util.Arrays.hashCode(latencyHistogram);
    }

    /** For a log line: {@code allReduce: 12 calls, 0 failed, 1572864 bytes, mean 34.2 us, max 80.1 us, [16, 32) us: 3, [32, 64) us: 9}. */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder(op).append(": ").append(calls).append(" calls, ").append(failures)
                .append(" failed, ").append(bytes).append(" bytes");
        if (totalNanos > 0) {
            b.append(String.format(java.util.Locale.ROOT, ", mean %.1f us, max %.1f us", meanMicros(), maxNanos / 1e3));
        }
        for (int i = 0; i < latencyHistogram.length; i++) {
            if (latencyHistogram[i] == 0) continue;
            String from = i == 0 ? "0" : String.valueOf(1L << i);
            String to = i == latencyHistogram.length - 1 ? "..." : String.valueOf(1L << (i + 1));
            b.append(", [").append(from).append(", ").append(to).append(") us: ").append(latencyHistogram[i]);
        }
        return b.toString();
    }
}
