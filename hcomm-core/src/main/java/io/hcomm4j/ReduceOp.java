package io.hcomm4j;

/**
 * Reduction operators for collectives and one-sided accumulates. {@link #AVG} is the sum divided by the communicator
 * size (collectives only). {@link #REPLACE} and {@link #NO_OP} are for one-sided operations only ({@link Window}
 * accumulates and atomics, as MPI_REPLACE and MPI_NO_OP); collectives reject them.
 *
 * <p>Not every operator is defined on every type ({@link #accepts}): the bitwise ones ({@link #BAND}, {@link #BOR},
 * {@link #BXOR}) take the integer types (INT8, UINT8, INT16, INT32, INT64) and {@link DataType#BOOL BOOL}, not the
 * floating-point ones; {@link #AVG} takes every type but BOOL. A collective or accumulate called with an undefined pair
 * fails with an {@link IllegalArgumentException} naming the rank, the op and the type.
 *
 * <p>On {@link DataType#BOOL BOOL} (0 false, anything else true; results are 0 or 1), as in PyTorch's boolean
 * reductions: {@link #SUM}, {@link #MAX} and {@link #BOR} are a logical or, {@link #PROD}, {@link #MIN} and
 * {@link #BAND} a logical and, {@link #BXOR} an exclusive or (true where an odd number of ranks hold true).
 *
 * <p>New constants go last: the ordinals are wire format (collective fingerprints, one-sided frames).
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
    /** Element-wise sum divided by the number of ranks (collectives only; not for BOOL). */
    AVG,
    /** One-sided only: the target element becomes the origin's (an element-atomic put). */
    REPLACE,
    /** One-sided only: the target element stays as it is (an atomic read, with {@link Window#fetchAndOp}). */
    NO_OP,
    /** Element-wise bitwise and (integer types and BOOL; MPI_BAND). */
    BAND,
    /** Element-wise bitwise or (integer types and BOOL; MPI_BOR). */
    BOR,
    /** Element-wise bitwise exclusive or (integer types and BOOL; MPI_BXOR). */
    BXOR;

    /** True for the operators a collective takes (all but {@link #REPLACE} and {@link #NO_OP}). */
    public boolean collective() {
        return this != REPLACE && this != NO_OP;
    }

    /** True for {@link #BAND}, {@link #BOR} and {@link #BXOR}. */
    public boolean bitwise() {
        return this == BAND || this == BOR || this == BXOR;
    }

    /**
     * Whether this operator is defined on elements of {@code type}: the bitwise operators on every type but the
     * floating-point ones, {@link #AVG} on every type but {@link DataType#BOOL BOOL}, the others on every type.
     *
     * @param type an element type
     * @return whether a collective or one-sided accumulate may combine {@code type} elements with this operator
     * @throws NullPointerException if {@code type} is null
     */
    public boolean accepts(DataType type) {
        java.util.Objects.requireNonNull(type, "type");
        if (bitwise()) return !type.isFloatingPoint();
        return this != AVG || type != DataType.BOOL;
    }
}
