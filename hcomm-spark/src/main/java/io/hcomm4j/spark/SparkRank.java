package io.hcomm4j.spark;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import org.apache.spark.BarrierTaskContext;

/**
 * One barrier task as a rank, as a {@link RankTask} sees it: the session made of all tasks of the stage attempt, and
 * where this task stands in it. Rank = partition id, size = number of tasks (partitions). Valid while the task body
 * runs; {@link SparkHcomm} closes the session afterwards.
 */
public final class SparkRank {
    private final Hcomm hcomm;
    private final BarrierTaskContext context;

    SparkRank(Hcomm hcomm, BarrierTaskContext context) {
        this.hcomm = hcomm;
        this.context = context;
    }

    /** The communicator of every task of the stage attempt: {@code world().rank()} is {@link #rank()}. */
    public Communicator world() {
        return hcomm.world();
    }

    /** The session, for {@link Hcomm#memory()} (registered memory) and the other session-wide calls. */
    public Hcomm hcomm() {
        return hcomm;
    }

    /** This task's rank: its partition id. */
    public int rank() {
        return context.partitionId();
    }

    /** The number of ranks: the stage's tasks, one per partition. */
    public int size() {
        return hcomm.world().size();
    }

    /** Spark's id of the barrier stage. */
    public int stageId() {
        return context.stageId();
    }

    /** The attempt of the stage, 0 for the first; a retried stage runs every task again with the next number. */
    public int stageAttempt() {
        return context.stageAttemptNumber();
    }

    /** Spark's context of this task (for {@code barrier()}, {@code allGather}, task metrics, local properties). */
    public BarrierTaskContext taskContext() {
        return context;
    }

    @Override
    public String toString() {
        return "rank " + rank() + " of " + size() + " (stage " + stageId() + " attempt " + stageAttempt() + ")";
    }
}
