package io.hcomm4j;

import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * One-sided communication (MPI-3 RMA): every member of a communicator exposes a block of memory, and any member reads
 * and writes any other's block while the target's application code does nothing. Made collectively with
 * {@link Communicator#allocateWindow(long)} (memory from the registered pool: same-host peers map it and move data with
 * plain loads and stores) or {@link Communicator#createWindow(MemorySegment)} (the caller's memory: reached through the
 * target's progress engine). Offsets are bytes from the start of the target's block.
 *
 * <p><b>Epochs.</b> Data ops are allowed only inside an access epoch to their target: between {@link #fence()}s, or
 * between {@link #lock}/{@link #unlock} of that target, or between {@link #lockAll()}/{@link #unlockAll()}. Outside one
 * they throw {@link IllegalStateException}.
 *
 * <p><b>Completion.</b> An async op's future completes when the origin buffer may be reused (local completion; for
 * get, fetchAndOp, compareAndSwap and getAccumulate when the result is in place). {@link #flush(int)} returns when
 * every op this rank issued to the target is applied at the target (remote completion); {@link #unlock},
 * {@link #unlockAll()} and {@link #fence()} flush too.
 *
 * <p><b>Atomicity.</b> {@link #accumulate}, {@link #getAccumulate}, {@link #fetchAndOp} and {@link #compareAndSwap}
 * are atomic per element with respect to each other (not to {@link #put}, nor to the target's own plain stores), and
 * those from one origin to one target are applied in the order they were issued. Their target offsets must be
 * multiples of the element size. docs/architecture.md ("One-sided memory model") says what a target sees when.
 *
 * <p>Thread-safe for ops; epoch calls ({@code fence}, {@code lock}, ...) of one window from one thread at a time.
 * {@link #close()} is collective.
 */
public interface Window extends AutoCloseable {
    /** Signal counters per origin that {@link #putSignal} can address ({@code signalIndex} in [0, SIGNALS)). */
    int SIGNALS = 16;

    /** This rank in the window's communicator. */
    int rank();

    /** Members of the window's communicator. */
    int size();

    /** This rank's block: what the others read and write. */
    MemorySegment segment();

    /** Bytes of rank {@code rank}'s block. */
    long byteSize(int rank);

    // ------------------------------------------------------------------------------------ data

    /** Writes {@code origin} into {@code target}'s block at {@code targetOffset}. */
    CommFuture<Void> putAsync(MemorySegment origin, int target, long targetOffset);

    /** Reads {@code result.byteSize()} bytes of {@code target}'s block at {@code targetOffset} into {@code result}. */
    CommFuture<Void> getAsync(MemorySegment result, int target, long targetOffset);

    /**
     * Combines {@code origin} (elements of {@code type}) into {@code target}'s block element by element:
     * {@code t[i] = t[i] op o[i]}; {@link ReduceOp#REPLACE} stores, {@link ReduceOp#NO_OP} does nothing;
     * {@link ReduceOp#AVG} is not allowed. The bitwise ops ({@link ReduceOp#BAND}, {@link ReduceOp#BOR},
     * {@link ReduceOp#BXOR}, like MPI_BAND ...) take the integer types and {@link DataType#BOOL}, which combines as in
     * collectives (0 or 1 results; REPLACE stores the origin's byte as it is); an op a type does not define
     * ({@link ReduceOp#accepts}) is refused with an {@link IllegalArgumentException}.
     */
    CommFuture<Void> accumulateAsync(MemorySegment origin, int target, long targetOffset, DataType type, ReduceOp op);

    /** As {@link #accumulateAsync}, and {@code result} receives the target's elements as they were just before. */
    CommFuture<Void> getAccumulateAsync(MemorySegment origin, MemorySegment result, int target, long targetOffset,
                                        DataType type, ReduceOp op);

    /**
     * One element of {@code type} ({@link DataType#INT32} or {@link DataType#INT64}) at {@code targetOffset}: becomes
     * {@code old op operand} and the future yields {@code old} ({@link ReduceOp#NO_OP}: an atomic read,
     * {@link ReduceOp#REPLACE}: an atomic swap, {@link ReduceOp#BAND}, {@link ReduceOp#BOR}, {@link ReduceOp#BXOR}: an
     * atomic fetch-and-and, -or, -xor).
     */
    CommFuture<Long> fetchAndOpAsync(long operand, int target, long targetOffset, DataType type, ReduceOp op);

    /**
     * One element of {@code type} ({@link DataType#INT32} or {@link DataType#INT64}) at {@code targetOffset}: if it
     * equals {@code expected} it becomes {@code desired}; the future yields the value found.
     */
    CommFuture<Long> compareAndSwapAsync(long expected, long desired, int target, long targetOffset, DataType type);

    /**
     * {@link #putAsync}, then adds one to the target's signal counter {@code signalIndex} for this origin once the data
     * has landed there, so the target learns it with {@link #waitSignal} and no message of its own (as NCCL's
     * ncclPutSignal).
     */
    CommFuture<Void> putSignalAsync(MemorySegment origin, int target, long targetOffset, int signalIndex);

    /**
     * Waits until the signal counter {@code signalIndex} of origin {@code peer} at this rank has reached {@code count},
     * then takes {@code count} off it: the data of those {@link #putSignal}s is in {@link #segment()}.
     *
     * @throws CommTimeoutException if the counter did not reach {@code count} within {@code timeout}
     * @throws PeerFailedException if {@code peer} failed before it did
     */
    void waitSignal(int peer, int signalIndex, long count, Duration timeout);

    default void put(MemorySegment origin, int target, long targetOffset) {
        putAsync(origin, target, targetOffset).await();
    }

    default void get(MemorySegment result, int target, long targetOffset) {
        getAsync(result, target, targetOffset).await();
    }

    default void accumulate(MemorySegment origin, int target, long targetOffset, DataType type, ReduceOp op) {
        accumulateAsync(origin, target, targetOffset, type, op).await();
    }

    default void getAccumulate(MemorySegment origin, MemorySegment result, int target, long targetOffset, DataType type,
                               ReduceOp op) {
        getAccumulateAsync(origin, result, target, targetOffset, type, op).await();
    }

    default long fetchAndOp(long operand, int target, long targetOffset, DataType type, ReduceOp op) {
        return fetchAndOpAsync(operand, target, targetOffset, type, op).await();
    }

    default long compareAndSwap(long expected, long desired, int target, long targetOffset, DataType type) {
        return compareAndSwapAsync(expected, desired, target, targetOffset, type).await();
    }

    default void putSignal(MemorySegment origin, int target, long targetOffset, int signalIndex) {
        putSignalAsync(origin, target, targetOffset, signalIndex).await();
    }

    // ------------------------------------------------------------------------------------ synchronisation

    /**
     * Collective: completes every op of every member issued since the last fence (remote completion), then opens the
     * next epoch: after it, each member sees in its block what the others wrote before it.
     */
    void fence();

    /** Opens a passive-target epoch to {@code target}: waits until its lock is granted. */
    void lock(int target, LockType type);

    /** Completes every op to {@code target} at the target, then releases its lock. */
    void unlock(int target);

    /** A {@link LockType#SHARED} lock on every member. */
    void lockAll();

    /** {@link #unlock} of every member locked by {@link #lockAll()}. */
    void unlockAll();

    /** Returns when every op this rank issued to {@code target} is applied at the target (remote completion). */
    void flush(int target);

    /** {@link #flush} of every member. */
    void flushAll();

    /** Returns when every op this rank issued to {@code target} no longer needs its origin buffer (local completion). */
    void flushLocal(int target);

    /** {@link #flushLocal} of every member. */
    void flushLocalAll();

    /** True once {@link #close()} was called. */
    boolean isClosed();

    /**
     * Collective: flushes, waits for every member, and frees the window (memory from {@code allocateWindow} returns to
     * the pool). Ops on a closed window throw {@link IllegalStateException}.
     */
    @Override
    void close();
}
