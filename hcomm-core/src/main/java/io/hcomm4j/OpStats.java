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
    /** Mean time per op in microseconds, or 0 if none was timed. */
    public double meanMicros() {
        return calls == 0 ? 0 : totalNanos / 1e3 / calls;
    }
}
