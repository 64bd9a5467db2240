package io.hcomm4j;

/** The lock a passive-target access epoch takes on a target's {@link Window} memory (as MPI_LOCK_SHARED/EXCLUSIVE). */
public enum LockType {
    /** Other origins may hold the target's lock too (shared ones); accumulates and atomics stay element-atomic. */
    SHARED,
    /** No other origin holds the target's lock meanwhile. */
    EXCLUSIVE
}
