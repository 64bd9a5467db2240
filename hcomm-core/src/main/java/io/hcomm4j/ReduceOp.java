package io.hcomm4j;

/**
 * Reduction operators for collectives and one-sided accumulates. {@link #AVG} is the sum divided by the communicator
 * size (collectives only). {@link #REPLACE} and {@link #NO_OP} are for one-sided operations only ({@link Window}
 * accumulates and atomics, as MPI_REPLACE and MPI_NO_OP); collectives reject them.
 */
public enum ReduceOp {
    /** Element-wise sum; integer overflow wraps as in Java. */
    SUM,
    /** Element-wise product; integer overflow wraps as in Java. */
    PROD,
    /** Element-wise minimum. */
    MIN,
    /** Element-wise maximum. */
    MAX,
    /** Element-wise sum divided by the number of ranks (collectives only). */
    AVG,
    /** One-sided only: the target element becomes the origin's (an element-atomic put). */
    REPLACE,
    /** One-sided only: the target element stays as it is (an atomic read, with {@link Window#fetchAndOp}). */
    NO_OP;

    /** True for the operators a collective takes (all but {@link #REPLACE} and {@link #NO_OP}). */
    public boolean collective() {
        return this != REPLACE && this != NO_OP;
    }
}
