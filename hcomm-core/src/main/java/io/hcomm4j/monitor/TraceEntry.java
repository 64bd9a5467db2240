package io.hcomm4j.monitor;

import java.util.List;

/**
 * One op of a rank's flight record, as a dump holds it (see docs/observability.md for the JSON names).
 *
 * @param recordId       the op's place in its communicator's record (0, 1, 2 … over every kind of op)
 * @param commId         its communicator (0: world)
 * @param kind           collective, point to point or one-sided
 * @param op             {@code allReduce}, {@code send}, {@code put} …
 * @param seq            a collective's sequence number on its communicator (what every rank numbers alike), else -1
 * @param peer           a point-to-point op's peer (the matched source of a receive from any source), a rooted
 *                       collective's root, a one-sided op's target; -1: none or not yet known
 * @param tag            a point-to-point tag (-1: any or none)
 * @param type           the data type's name, or null
 * @param reduction      the reduction's name, or null
 * @param count          elements (-1 if the op has no one count)
 * @param bytes          its size in bytes (-1 if not known)
 * @param fingerprint    what ranks compare to find a mismatched collective (0: none)
 * @param stream         the stream it was queued on (0: none)
 * @param algorithm      the algorithm it ran ({@code ring}, {@code halving_doubling} …), null: its op has one
 * @param path           how its data moved ({@code zero_copy}, {@code transport} …), null while it runs
 * @param channels       the most links (TCP connections to one peer: interfaces x HCOMM_CHANNELS) one of its messages
 *                       went over: 1 unless a large message was striped; 0 if it used no link (zero-copy shared
 *                       memory, a direct one-sided op) or has not ended
 * @param state          scheduled, started, completed or failed
 * @param calledEpochNanos  when it was called, epoch nanoseconds
 * @param startedEpochNanos when it began to run (0: not yet)
 * @param endedEpochNanos   when it ended (0: not yet)
 * @param durationNanos  from start (or call) to end, or to the dump while it runs
 * @param error          the exception's class and message, or null
 * @param failedRanks    the ranks a {@code PeerFailedException} named
 */
public record TraceEntry(long recordId, long commId, OpTrace.Kind kind, String op, long seq, int peer, int tag, String type,
                         String reduction, long count, long bytes, int fingerprint, int stream, String algorithm, String path, int channels,
                         OpTrace.State state, long calledEpochNanos, long startedEpochNanos, long endedEpochNanos,
                         long durationNanos, String error, List<Integer> failedRanks) {
    /** @throws NullPointerException if kind, op, state or failedRanks is null */
    public TraceEntry {
        java.util.Objects.requireNonNull(kind, "kind");
        java.util.Objects.requireNonNull(op, "op");
        java.util.Objects.requireNonNull(state, "state");
        failedRanks = List.copyOf(failedRanks);
    }

    /** Whether it ended (well or not). */
    public boolean ended() {
        return state == OpTrace.State.COMPLETED || state == OpTrace.State.FAILED;
    }
}
