package io.hcomm4j.spark;

import java.io.Serializable;
import java.util.Iterator;

/**
 * The body of one barrier task: runs on an executor as rank {@link SparkRank#rank()} of a communicator made of all the
 * stage's tasks, over the rows of its partition. Shipped to the executors with the stage, so it must be serializable
 * (a lambda is, when what it captures is).
 *
 * @param <T> the type of the partition's rows
 * @param <R> what the task returns to the driver (serializable; may be null)
 */
@FunctionalInterface
public interface RankTask<T, R> extends Serializable {
    /**
     * Runs this rank's part of the job. Every rank must call the same collectives in the same order, as in any job.
     *
     * @param rank the communicator and this task's place in it; valid until this method returns
     * @param rows this partition's rows, read once
     * @return this rank's result, collected on the driver in rank order
     * @throws Exception anything: the task fails, the other tasks of the stage attempt are aborted, and Spark retries
     *                   the whole stage (see {@link SparkHcomm})
     */
    R run(SparkRank rank, Iterator<T> rows) throws Exception;
}
