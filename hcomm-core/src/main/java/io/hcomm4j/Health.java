package io.hcomm4j;

import java.util.List;

/**
 * The health of a communicator ({@link Communicator#health()}): whether its members are alive and whether it may be
 * used, with the members known to have failed.
 *
 * <ul>
 *   <li>{@link State#READY}: no member is known to be gone.</li>
 *   <li>{@link State#DEGRADED}: some members are gone ({@link #failedRanks()}): they failed, or closed their session
 *   in order ({@link #reason()} says which). After a failure, collectives on this communicator fail at once with
 *   {@link PeerFailedException} (they need every member), and so did those pending when it became known; after a
 *   member only closed, a collective still runs and fails where it needs that member (what it sent before closing is
 *   delivered). Point-to-point ops with the live members still work, those with gone members fail.</li>
 *   <li>{@link State#FAILED}: nothing works any more: the communicator was aborted ({@link Communicator#abort()} here or
 *   on another member), or another rank declared this rank failed (it was silent longer than
 *   {@code HCOMM_HEARTBEAT_TIMEOUT}). Every op fails with {@link CommAbortedException}. Close it.</li>
 * </ul>
 *
 * States only move forward: READY → DEGRADED → FAILED (or READY → FAILED).
 *
 * @param state       READY, DEGRADED or FAILED
 * @param failedRanks members (ranks of this communicator) known to be gone (failed or closed), ascending; empty when READY
 * @param reason      how the last change came about ("rank 2 failed: ...", "rank 1 closed its session", who aborted); empty when READY
 */
public record Health(State state, List<Integer> failedRanks, String reason) {
    /** See {@link Health}. */
    public enum State {
        /** Every member is alive as far as this rank knows. */
        READY,
        /** Some members failed: collectives fail, point-to-point with live members works. */
        DEGRADED,
        /** Aborted, or this rank was declared failed: every op fails. */
        FAILED
    }

    /** A healthy communicator. */
    public static final Health READY = new Health(State.READY, List.of(), "");

    /** @throws NullPointerException if an argument is null */
    public Health {
        java.util.Objects.requireNonNull(state, "state");
        failedRanks = List.copyOf(failedRanks);
        java.util.Objects.requireNonNull(reason, "reason");
    }
}
