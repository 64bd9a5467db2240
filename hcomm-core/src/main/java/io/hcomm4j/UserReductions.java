package io.hcomm4j;

import java.lang.foreign.MemorySegment;

/**
 * The reducing collectives of a {@link Communicator} with a user-defined {@link ReduceFunction} in place of a
 * {@link ReduceOp} (like MPI's {@code MPI_Op_create}). They run the same algorithms, on the same paths (shared memory
 * between ranks of one host, the transport otherwise), and call the function where a built-in op would combine, in the
 * same fixed order: every rank receives bit-identical results for a deterministic function. See {@link ReduceFunction}
 * for what the function must do and what happens when it throws. Every rank passes the same function.
 *
 * <p>Arguments are checked as for the built-in ops, and a bad one is refused on every rank
 * ({@link IllegalArgumentException} here, {@link CollectiveMismatchException} on the others).
 */
public interface UserReductions {
    /**
     * Element-wise reduction of every rank's {@code send} ({@code count} elements of {@code type}) with
     * {@code function}; every rank receives the result in {@code recv}, bit-identical on every rank. {@code send} may
     * equal {@code recv} (in place).
     *
     * @param send     this rank's contribution
     * @param recv     the result
     * @param count    elements
     * @param type     element type (its size cuts the buffers into elements; the function interprets them)
     * @param function the reduction
     * @throws ReduceFunctionException if the function threw on this rank (its exception is the cause) or, told over the
     *         transport, on another
     */
    void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function);

    /**
     * Asynchronous {@link #allReduce(MemorySegment, MemorySegment, long, DataType, ReduceFunction)}.
     *
     * @param send     this rank's contribution
     * @param recv     the result
     * @param count    elements
     * @param type     element type
     * @param function the reduction
     * @return completes when {@code recv} holds the result
     */
    CommFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function);

    /**
     * Like {@link #allReduce(MemorySegment, MemorySegment, long, DataType, ReduceFunction)} but only {@code root}
     * receives the result in {@code recv} (ignored elsewhere).
     *
     * @param send     this rank's contribution
     * @param recv     the result, on {@code root}
     * @param count    elements
     * @param type     element type
     * @param function the reduction
     * @param root     the rank that receives the result
     */
    void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function, int root);

    /**
     * Asynchronous {@link #reduce(MemorySegment, MemorySegment, long, DataType, ReduceFunction, int)}.
     *
     * @param send     this rank's contribution
     * @param recv     the result, on {@code root}
     * @param count    elements
     * @param type     element type
     * @param function the reduction
     * @param root     the rank that receives the result
     * @return completes when this rank's part is done
     */
    CommFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function,
                                 int root);

    /**
     * Reduces every rank's {@code send} ({@code size() * recvCount} elements) with {@code function} and scatters the
     * result: rank r receives block r ({@code recvCount} elements) in {@code recv}.
     *
     * @param send      this rank's contribution, every rank's block in rank order
     * @param recv      this rank's block of the result
     * @param recvCount elements of one block
     * @param type      element type
     * @param function  the reduction
     */
    void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceFunction function);

    /**
     * Asynchronous {@link #reduceScatter(MemorySegment, MemorySegment, long, DataType, ReduceFunction)}.
     *
     * @param send      this rank's contribution, every rank's block in rank order
     * @param recv      this rank's block of the result
     * @param recvCount elements of one block
     * @param type      element type
     * @param function  the reduction
     * @return completes when {@code recv} holds this rank's block
     */
    CommFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type,
                                        ReduceFunction function);
}
