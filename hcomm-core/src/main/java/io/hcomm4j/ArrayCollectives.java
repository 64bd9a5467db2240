package io.hcomm4j;

import java.lang.foreign.MemorySegment;

/**
 * The collectives of a {@link Communicator} on Java arrays, blocking and async ({@code float[]} FLOAT32,
 * {@code double[]} FLOAT64, {@code int[]} INT32, {@code long[]} INT64), for those the communicator itself does not
 * list (other types and the V forms: {@code MemorySegment.ofArray(bytes)} with the segment forms): counts come from the
 * arrays' lengths (a receive array must hold what the op delivers: checked on every rank, naming the argument), and an
 * array the op does not use on this rank (a non-root's receive array) may be null. Arrays are read and written in place
 * for the duration of the op; an async form's arrays must stay untouched until its future completes.
 */
public sealed interface ArrayCollectives permits Communicator {
    private Communicator self() {
        return (Communicator) this;
    }

    /** An array's memory, or an empty segment for null (an argument the op does not use on this rank). */
    private static MemorySegment of(Object array) {
        return switch (array) {
            case null -> MemorySegment.NULL;
            case float[] a -> MemorySegment.ofArray(a);
            case double[] a -> MemorySegment.ofArray(a);
            case int[] a -> MemorySegment.ofArray(a);
            case long[] a -> MemorySegment.ofArray(a);
            default -> throw new IllegalArgumentException("not a float[], double[], int[] or long[]: " + array.getClass());
        };
    }

    // ---------------------------------------------------------------------------------------------- float[] (FLOAT32)

    /** Asynchronous in-place all-reduce of a {@code float[]}. */
    default CommFuture<Void> allReduceAsync(float[] data, ReduceOp op) {
        return self().allReduceAsync(of(data), of(data), data.length, DataType.FLOAT32, op);
    }

    /** Reduce of {@code send} into {@code recv} on {@code root} ({@code recv} may be null on the others). */
    default void reduce(float[] send, float[] recv, ReduceOp op, int root) {
        self().reduce(of(send), of(recv), send.length, DataType.FLOAT32, op, root);
    }

    /** Reduce-scatter: {@code recv.length} elements per rank; {@code send} holds {@code size()} such blocks. */
    default void reduceScatter(float[] send, float[] recv, ReduceOp op) {
        self().reduceScatter(of(send), of(recv), recv.length, DataType.FLOAT32, op);
    }

    /** Asynchronous broadcast of a {@code float[]} from {@code root}. */
    default CommFuture<Void> broadcastAsync(float[] data, int root) {
        return self().broadcastAsync(of(data), data.length, DataType.FLOAT32, root);
    }

    /** Asynchronous all-gather: every rank's {@code send}, in rank order, into {@code recv}. */
    default CommFuture<Void> allGatherAsync(float[] send, float[] recv) {
        return self().allGatherAsync(of(send), of(recv), send.length, DataType.FLOAT32);
    }

    /** Gather of every rank's {@code send} into {@code recv} on {@code root} ({@code recv} may be null on the others). */
    default void gather(float[] send, float[] recv, int root) {
        self().gather(of(send), of(recv), send.length, DataType.FLOAT32, root);
    }

    /** Scatter of {@code root}'s {@code send} ({@code size()} blocks of {@code recv.length}; null on the others). */
    default void scatter(float[] send, float[] recv, int root) {
        self().scatter(of(send), of(recv), recv.length, DataType.FLOAT32, root);
    }

    /** All-to-all: block r of {@code send} to rank r; rank r's block into block r of {@code recv}. */
    default void allToAll(float[] send, float[] recv) {
        self().allToAll(of(send), of(recv), (send.length + self().size() - 1) / self().size(), DataType.FLOAT32); // rounded up: a ragged send is refused
    }

    /** Asynchronous {@link #reduce(float[], float[], ReduceOp, int)}. */
    default CommFuture<Void> reduceAsync(float[] send, float[] recv, ReduceOp op, int root) {
        return self().reduceAsync(of(send), of(recv), send.length, DataType.FLOAT32, op, root);
    }

    /** Asynchronous {@link #reduceScatter(float[], float[], ReduceOp)}. */
    default CommFuture<Void> reduceScatterAsync(float[] send, float[] recv, ReduceOp op) {
        return self().reduceScatterAsync(of(send), of(recv), recv.length, DataType.FLOAT32, op);
    }

    /** Asynchronous {@link #gather(float[], float[], int)}. */
    default CommFuture<Void> gatherAsync(float[] send, float[] recv, int root) {
        return self().gatherAsync(of(send), of(recv), send.length, DataType.FLOAT32, root);
    }

    /** Asynchronous {@link #scatter(float[], float[], int)}. */
    default CommFuture<Void> scatterAsync(float[] send, float[] recv, int root) {
        return self().scatterAsync(of(send), of(recv), recv.length, DataType.FLOAT32, root);
    }

    /** Asynchronous {@link #allToAll(float[], float[])}. */
    default CommFuture<Void> allToAllAsync(float[] send, float[] recv) {
        return self().allToAllAsync(of(send), of(recv), (send.length + self().size() - 1) / self().size(), DataType.FLOAT32);
    }

    /** Inclusive scan: {@code recv} gets the {@code op} of ranks 0..rank's {@code send} (same length). */
    default void scan(float[] send, float[] recv, ReduceOp op) {
        self().scan(of(send), of(recv), send.length, DataType.FLOAT32, op);
    }

    /** Asynchronous {@link #scan(float[], float[], ReduceOp)}. */
    default CommFuture<Void> scanAsync(float[] send, float[] recv, ReduceOp op) {
        return self().scanAsync(of(send), of(recv), send.length, DataType.FLOAT32, op);
    }

    /** Exclusive scan: {@code recv} gets the {@code op} of ranks 0..rank−1's {@code send} (rank 0's is left as it was). */
    default void exscan(float[] send, float[] recv, ReduceOp op) {
        self().exscan(of(send), of(recv), send.length, DataType.FLOAT32, op);
    }

    /** Asynchronous {@link #exscan(float[], float[], ReduceOp)}. */
    default CommFuture<Void> exscanAsync(float[] send, float[] recv, ReduceOp op) {
        return self().exscanAsync(of(send), of(recv), send.length, DataType.FLOAT32, op);
    }

    // ---------------------------------------------------------------------------------------------- double[] (FLOAT64)

    /** Asynchronous in-place all-reduce of a {@code double[]}. */
    default CommFuture<Void> allReduceAsync(double[] data, ReduceOp op) {
        return self().allReduceAsync(of(data), of(data), data.length, DataType.FLOAT64, op);
    }

    /** Reduce of {@code send} into {@code recv} on {@code root} ({@code recv} may be null on the others). */
    default void reduce(double[] send, double[] recv, ReduceOp op, int root) {
        self().reduce(of(send), of(recv), send.length, DataType.FLOAT64, op, root);
    }

    /** Reduce-scatter: {@code recv.length} elements per rank; {@code send} holds {@code size()} such blocks. */
    default void reduceScatter(double[] send, double[] recv, ReduceOp op) {
        self().reduceScatter(of(send), of(recv), recv.length, DataType.FLOAT64, op);
    }

    /** Asynchronous broadcast of a {@code double[]} from {@code root}. */
    default CommFuture<Void> broadcastAsync(double[] data, int root) {
        return self().broadcastAsync(of(data), data.length, DataType.FLOAT64, root);
    }

    /** Asynchronous all-gather: every rank's {@code send}, in rank order, into {@code recv}. */
    default CommFuture<Void> allGatherAsync(double[] send, double[] recv) {
        return self().allGatherAsync(of(send), of(recv), send.length, DataType.FLOAT64);
    }

    /** Gather of every rank's {@code send} into {@code recv} on {@code root} ({@code recv} may be null on the others). */
    default void gather(double[] send, double[] recv, int root) {
        self().gather(of(send), of(recv), send.length, DataType.FLOAT64, root);
    }

    /** Scatter of {@code root}'s {@code send} ({@code size()} blocks of {@code recv.length}; null on the others). */
    default void scatter(double[] send, double[] recv, int root) {
        self().scatter(of(send), of(recv), recv.length, DataType.FLOAT64, root);
    }

    /** All-to-all: block r of {@code send} to rank r; rank r's block into block r of {@code recv}. */
    default void allToAll(double[] send, double[] recv) {
        self().allToAll(of(send), of(recv), (send.length + self().size() - 1) / self().size(), DataType.FLOAT64); // rounded up: a ragged send is refused
    }

    /** Asynchronous {@link #reduce(double[], double[], ReduceOp, int)}. */
    default CommFuture<Void> reduceAsync(double[] send, double[] recv, ReduceOp op, int root) {
        return self().reduceAsync(of(send), of(recv), send.length, DataType.FLOAT64, op, root);
    }

    /** Asynchronous {@link #reduceScatter(double[], double[], ReduceOp)}. */
    default CommFuture<Void> reduceScatterAsync(double[] send, double[] recv, ReduceOp op) {
        return self().reduceScatterAsync(of(send), of(recv), recv.length, DataType.FLOAT64, op);
    }

    /** Asynchronous {@link #gather(double[], double[], int)}. */
    default CommFuture<Void> gatherAsync(double[] send, double[] recv, int root) {
        return self().gatherAsync(of(send), of(recv), send.length, DataType.FLOAT64, root);
    }

    /** Asynchronous {@link #scatter(double[], double[], int)}. */
    default CommFuture<Void> scatterAsync(double[] send, double[] recv, int root) {
        return self().scatterAsync(of(send), of(recv), recv.length, DataType.FLOAT64, root);
    }

    /** Asynchronous {@link #allToAll(double[], double[])}. */
    default CommFuture<Void> allToAllAsync(double[] send, double[] recv) {
        return self().allToAllAsync(of(send), of(recv), (send.length + self().size() - 1) / self().size(), DataType.FLOAT64);
    }

    /** Inclusive scan: {@code recv} gets the {@code op} of ranks 0..rank's {@code send} (same length). */
    default void scan(double[] send, double[] recv, ReduceOp op) {
        self().scan(of(send), of(recv), send.length, DataType.FLOAT64, op);
    }

    /** Asynchronous {@link #scan(double[], double[], ReduceOp)}. */
    default CommFuture<Void> scanAsync(double[] send, double[] recv, ReduceOp op) {
        return self().scanAsync(of(send), of(recv), send.length, DataType.FLOAT64, op);
    }

    /** Exclusive scan: {@code recv} gets the {@code op} of ranks 0..rank−1's {@code send} (rank 0's is left as it was). */
    default void exscan(double[] send, double[] recv, ReduceOp op) {
        self().exscan(of(send), of(recv), send.length, DataType.FLOAT64, op);
    }

    /** Asynchronous {@link #exscan(double[], double[], ReduceOp)}. */
    default CommFuture<Void> exscanAsync(double[] send, double[] recv, ReduceOp op) {
        return self().exscanAsync(of(send), of(recv), send.length, DataType.FLOAT64, op);
    }

    // ---------------------------------------------------------------------------------------------- int[] (INT32)

    /** Asynchronous in-place all-reduce of a {@code int[]}. */
    default CommFuture<Void> allReduceAsync(int[] data, ReduceOp op) {
        return self().allReduceAsync(of(data), of(data), data.length, DataType.INT32, op);
    }

    /** Reduce of {@code send} into {@code recv} on {@code root} ({@code recv} may be null on the others). */
    default void reduce(int[] send, int[] recv, ReduceOp op, int root) {
        self().reduce(of(send), of(recv), send.length, DataType.INT32, op, root);
    }

    /** Reduce-scatter: {@code recv.length} elements per rank; {@code send} holds {@code size()} such blocks. */
    default void reduceScatter(int[] send, int[] recv, ReduceOp op) {
        self().reduceScatter(of(send), of(recv), recv.length, DataType.INT32, op);
    }

    /** Asynchronous broadcast of a {@code int[]} from {@code root}. */
    default CommFuture<Void> broadcastAsync(int[] data, int root) {
        return self().broadcastAsync(of(data), data.length, DataType.INT32, root);
    }

    /** Asynchronous all-gather: every rank's {@code send}, in rank order, into {@code recv}. */
    default CommFuture<Void> allGatherAsync(int[] send, int[] recv) {
        return self().allGatherAsync(of(send), of(recv), send.length, DataType.INT32);
    }

    /** Gather of every rank's {@code send} into {@code recv} on {@code root} ({@code recv} may be null on the others). */
    default void gather(int[] send, int[] recv, int root) {
        self().gather(of(send), of(recv), send.length, DataType.INT32, root);
    }

    /** Scatter of {@code root}'s {@code send} ({@code size()} blocks of {@code recv.length}; null on the others). */
    default void scatter(int[] send, int[] recv, int root) {
        self().scatter(of(send), of(recv), recv.length, DataType.INT32, root);
    }

    /** All-to-all: block r of {@code send} to rank r; rank r's block into block r of {@code recv}. */
    default void allToAll(int[] send, int[] recv) {
        self().allToAll(of(send), of(recv), (send.length + self().size() - 1) / self().size(), DataType.INT32); // rounded up: a ragged send is refused
    }

    /** Asynchronous {@link #reduce(int[], int[], ReduceOp, int)}. */
    default CommFuture<Void> reduceAsync(int[] send, int[] recv, ReduceOp op, int root) {
        return self().reduceAsync(of(send), of(recv), send.length, DataType.INT32, op, root);
    }

    /** Asynchronous {@link #reduceScatter(int[], int[], ReduceOp)}. */
    default CommFuture<Void> reduceScatterAsync(int[] send, int[] recv, ReduceOp op) {
        return self().reduceScatterAsync(of(send), of(recv), recv.length, DataType.INT32, op);
    }

    /** Asynchronous {@link #gather(int[], int[], int)}. */
    default CommFuture<Void> gatherAsync(int[] send, int[] recv, int root) {
        return self().gatherAsync(of(send), of(recv), send.length, DataType.INT32, root);
    }

    /** Asynchronous {@link #scatter(int[], int[], int)}. */
    default CommFuture<Void> scatterAsync(int[] send, int[] recv, int root) {
        return self().scatterAsync(of(send), of(recv), recv.length, DataType.INT32, root);
    }

    /** Asynchronous {@link #allToAll(int[], int[])}. */
    default CommFuture<Void> allToAllAsync(int[] send, int[] recv) {
        return self().allToAllAsync(of(send), of(recv), (send.length + self().size() - 1) / self().size(), DataType.INT32);
    }

    /** Inclusive scan: {@code recv} gets the {@code op} of ranks 0..rank's {@code send} (same length). */
    default void scan(int[] send, int[] recv, ReduceOp op) {
        self().scan(of(send), of(recv), send.length, DataType.INT32, op);
    }

    /** Asynchronous {@link #scan(int[], int[], ReduceOp)}. */
    default CommFuture<Void> scanAsync(int[] send, int[] recv, ReduceOp op) {
        return self().scanAsync(of(send), of(recv), send.length, DataType.INT32, op);
    }

    /** Exclusive scan: {@code recv} gets the {@code op} of ranks 0..rank−1's {@code send} (rank 0's is left as it was). */
    default void exscan(int[] send, int[] recv, ReduceOp op) {
        self().exscan(of(send), of(recv), send.length, DataType.INT32, op);
    }

    /** Asynchronous {@link #exscan(int[], int[], ReduceOp)}. */
    default CommFuture<Void> exscanAsync(int[] send, int[] recv, ReduceOp op) {
        return self().exscanAsync(of(send), of(recv), send.length, DataType.INT32, op);
    }

    // ---------------------------------------------------------------------------------------------- long[] (INT64)

    /** Asynchronous in-place all-reduce of a {@code long[]}. */
    default CommFuture<Void> allReduceAsync(long[] data, ReduceOp op) {
        return self().allReduceAsync(of(data), of(data), data.length, DataType.INT64, op);
    }

    /** Reduce of {@code send} into {@code recv} on {@code root} ({@code recv} may be null on the others). */
    default void reduce(long[] send, long[] recv, ReduceOp op, int root) {
        self().reduce(of(send), of(recv), send.length, DataType.INT64, op, root);
    }

    /** Reduce-scatter: {@code recv.length} elements per rank; {@code send} holds {@code size()} such blocks. */
    default void reduceScatter(long[] send, long[] recv, ReduceOp op) {
        self().reduceScatter(of(send), of(recv), recv.length, DataType.INT64, op);
    }

    /** Asynchronous broadcast of a {@code long[]} from {@code root}. */
    default CommFuture<Void> broadcastAsync(long[] data, int root) {
        return self().broadcastAsync(of(data), data.length, DataType.INT64, root);
    }

    /** Asynchronous all-gather: every rank's {@code send}, in rank order, into {@code recv}. */
    default CommFuture<Void> allGatherAsync(long[] send, long[] recv) {
        return self().allGatherAsync(of(send), of(recv), send.length, DataType.INT64);
    }

    /** Gather of every rank's {@code send} into {@code recv} on {@code root} ({@code recv} may be null on the others). */
    default void gather(long[] send, long[] recv, int root) {
        self().gather(of(send), of(recv), send.length, DataType.INT64, root);
    }

    /** Scatter of {@code root}'s {@code send} ({@code size()} blocks of {@code recv.length}; null on the others). */
    default void scatter(long[] send, long[] recv, int root) {
        self().scatter(of(send), of(recv), recv.length, DataType.INT64, root);
    }

    /** All-to-all: block r of {@code send} to rank r; rank r's block into block r of {@code recv}. */
    default void allToAll(long[] send, long[] recv) {
        self().allToAll(of(send), of(recv), (send.length + self().size() - 1) / self().size(), DataType.INT64); // rounded up: a ragged send is refused
    }

    /** Asynchronous {@link #reduce(long[], long[], ReduceOp, int)}. */
    default CommFuture<Void> reduceAsync(long[] send, long[] recv, ReduceOp op, int root) {
        return self().reduceAsync(of(send), of(recv), send.length, DataType.INT64, op, root);
    }

    /** Asynchronous {@link #reduceScatter(long[], long[], ReduceOp)}. */
    default CommFuture<Void> reduceScatterAsync(long[] send, long[] recv, ReduceOp op) {
        return self().reduceScatterAsync(of(send), of(recv), recv.length, DataType.INT64, op);
    }

    /** Asynchronous {@link #gather(long[], long[], int)}. */
    default CommFuture<Void> gatherAsync(long[] send, long[] recv, int root) {
        return self().gatherAsync(of(send), of(recv), send.length, DataType.INT64, root);
    }

    /** Asynchronous {@link #scatter(long[], long[], int)}. */
    default CommFuture<Void> scatterAsync(long[] send, long[] recv, int root) {
        return self().scatterAsync(of(send), of(recv), recv.length, DataType.INT64, root);
    }

    /** Asynchronous {@link #allToAll(long[], long[])}. */
    default CommFuture<Void> allToAllAsync(long[] send, long[] recv) {
        return self().allToAllAsync(of(send), of(recv), (send.length + self().size() - 1) / self().size(), DataType.INT64);
    }

    /** Inclusive scan: {@code recv} gets the {@code op} of ranks 0..rank's {@code send} (same length). */
    default void scan(long[] send, long[] recv, ReduceOp op) {
        self().scan(of(send), of(recv), send.length, DataType.INT64, op);
    }

    /** Asynchronous {@link #scan(long[], long[], ReduceOp)}. */
    default CommFuture<Void> scanAsync(long[] send, long[] recv, ReduceOp op) {
        return self().scanAsync(of(send), of(recv), send.length, DataType.INT64, op);
    }

    /** Exclusive scan: {@code recv} gets the {@code op} of ranks 0..rank−1's {@code send} (rank 0's is left as it was). */
    default void exscan(long[] send, long[] recv, ReduceOp op) {
        self().exscan(of(send), of(recv), send.length, DataType.INT64, op);
    }

    /** Asynchronous {@link #exscan(long[], long[], ReduceOp)}. */
    default CommFuture<Void> exscanAsync(long[] send, long[] recv, ReduceOp op) {
        return self().exscanAsync(of(send), of(recv), send.length, DataType.INT64, op);
    }
}
