package io.hcomm4j;

/** Reduction operators for collectives. {@link #AVG} is the sum divided by the communicator size. */
public enum ReduceOp {
    /** Element-wise sum; integer overflow wraps as in Java. */
    SUM,
    /** Element-wise product; integer overflow wraps as in Java. */
    PROD,
    /** Element-wise minimum. */
    MIN,
    /** Element-wise maximum. */
    MAX,
    /** Element-wise sum divided by the number of ranks. */
    AVG
}
