package io.hcomm4j;

import java.lang.foreign.MemorySegment;

/**
 * An ordered queue of ops on one communicator: ops enqueued on a stream run in the background one
 * after the other, in FIFO order; ops on different streams may overlap. {@link #synchronize()} waits for all
 * of them and rethrows the first failure. After a failure the remaining queued ops fail too
 * ({@link CommAbortedException}), so a stream never runs an op whose predecessor did not happen.
 */
public interface Stream extends AutoCloseable {
    /**
     * How a stream's sends share a link with other messages to the same peer ({@link Communicator#newStream(Priority)}):
     * the chunks of a large message of {@code HIGH} priority go before those of {@code NORMAL} ones, and a small message
     * of either waits for at most the chunk being written.
     */
    enum Priority { NORMAL, HIGH }

    /** This stream's priority. */
    default Priority priority() {
        return Priority.NORMAL;
    }

    /** Enqueues a send of {@code buf} to {@code peer}; the buffer must not change until it completes. */
    CommFuture<Void> send(MemorySegment buf, int peer, int tag);

    /** Enqueues a receive into {@code buf} from {@code peer} (or ANY_SOURCE) with {@code tag} (or ANY_TAG). */
    CommFuture<Status> recv(MemorySegment buf, int peer, int tag);

    /** Enqueues a send of an array (byte elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> send(byte[] data, int peer, int tag) {
        return send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a receive into an array (byte elements; the message may be shorter than the array). */
    default CommFuture<Status> recv(byte[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a send of an array (short elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> send(short[] data, int peer, int tag) {
        return send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a receive into an array (short elements; the message may be shorter than the array). */
    default CommFuture<Status> recv(short[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a send of an array (int elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> send(int[] data, int peer, int tag) {
        return send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a receive into an array (int elements; the message may be shorter than the array). */
    default CommFuture<Status> recv(int[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a send of an array (long elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> send(long[] data, int peer, int tag) {
        return send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a receive into an array (long elements; the message may be shorter than the array). */
    default CommFuture<Status> recv(long[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a send of an array (float elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> send(float[] data, int peer, int tag) {
        return send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a receive into an array (float elements; the message may be shorter than the array). */
    default CommFuture<Status> recv(float[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a send of an array (double elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> send(double[] data, int peer, int tag) {
        return send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Enqueues a receive into an array (double elements; the message may be shorter than the array). */
    default CommFuture<Status> recv(double[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /**
     * Enqueues an all-reduce (see {@link Communicator#allReduce}). Like every collective on a stream, it takes
     * its place in the communicator's collective order when it is enqueued, not when it runs.
     */
    CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /** Enqueues a broadcast (see {@link Communicator#broadcast}). */
    CommFuture<Void> broadcast(MemorySegment buf, long count, DataType type, int root);

    /** Enqueues a reduce (see {@link Communicator#reduce}). */
    CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root);

    /** Enqueues an all-gather (see {@link Communicator#allGather}). */
    CommFuture<Void> allGather(MemorySegment send, MemorySegment recv, long count, DataType type);

    /** Enqueues a reduce-scatter (see {@link Communicator#reduceScatter}). */
    CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op);

    /** Enqueues an all-to-all (see {@link Communicator#allToAll}). */
    CommFuture<Void> allToAll(MemorySegment send, MemorySegment recv, long count, DataType type);

    /** Enqueues an all-gather of different counts (see {@link Communicator#allGatherV}). */
    CommFuture<Void> allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type);

    /** Enqueues a reduce-scatter of different counts (see {@link Communicator#reduceScatterV}). */
    CommFuture<Void> reduceScatterV(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op);

    /** Enqueues a gather (see {@link Communicator#gather}). */
    CommFuture<Void> gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root);

    /** Enqueues a gather of different counts (see {@link Communicator#gatherV}). */
    CommFuture<Void> gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type, int root);

    /** Enqueues a scatter (see {@link Communicator#scatter}). */
    CommFuture<Void> scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root);

    /** Enqueues a scatter of different counts (see {@link Communicator#scatterV}). */
    CommFuture<Void> scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv, DataType type, int root);

    /** Enqueues an all-to-all of different counts (see {@link Communicator#allToAllV}). */
    CommFuture<Void> allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv, long[] recvCounts,
                               long[] recvDispls, DataType type);

    /**
     * Enqueues an all-reduce with a user's reduce function (see
     * {@link UserReductions#allReduce(MemorySegment, MemorySegment, long, DataType, ReduceFunction)}); the future fails
     * with {@link ReduceFunctionException} if the function threw on any rank.
     */
    CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function);

    /** Enqueues a reduce with a user's reduce function (see {@link UserReductions#reduce}). */
    CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction function, int root);

    /** Enqueues a reduce-scatter with a user's reduce function (see {@link UserReductions#reduceScatter}). */
    CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceFunction function);

    /** Enqueues an inclusive scan (see {@link Communicator#scan}). */
    CommFuture<Void> scan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /** Enqueues an exclusive scan (see {@link Communicator#exscan}). */
    CommFuture<Void> exscan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /** Enqueues a barrier. */
    CommFuture<Void> barrier();

    /**
     * Waits until every op enqueued so far has completed (up to {@code HCOMM_TIMEOUT}), then rethrows the
     * first failure, if any, and clears it.
     */
    void synchronize();

    /**
     * Waits for the queued ops (up to {@code HCOMM_TIMEOUT}) and releases the stream; then throws the first failure of
     * an op that no {@link #synchronize()} reported (or the timeout), so that a try-with-resources block does not lose
     * it. Closing a stream of a closed session waits for nothing and throws nothing.
     */
    @Override
    void close();
}
