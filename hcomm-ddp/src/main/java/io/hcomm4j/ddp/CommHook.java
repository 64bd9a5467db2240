package io.hcomm4j.ddp;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;

/**
 * How a {@link DataParallel} reduces one bucket of gradients across the ranks, as PyTorch DDP's communication hooks:
 * {@link #start} launches the reduction as soon as backward has finished the bucket, {@link #finish} completes it on
 * the training thread once the collective is done. After {@code finish} every rank's bucket must hold the same values:
 * the mean of the ranks' gradients, in whatever precision the hook chose. Hooks are called from the one training
 * thread, bucket by bucket in bucket order; a hook instance serves one {@code DataParallel}.
 *
 * <p>The built-in hooks and their numerics:
 * <ul>
 *   <li>{@link #average()}, the default: a float32 all-reduce with {@link io.hcomm4j.ReduceOp#AVG}: the sum in rank
 *       order, divided once by the rank count. Float32 throughout.</li>
 *   <li>{@link #bf16Compress()}: each gradient rounded to bfloat16 (8 significant bits, float32's range: nothing
 *       overflows), summed on the wire in bfloat16 (each addition in float32, rounded once to bfloat16: one rounding
 *       per rank after the first), then widened to float32 and divided by the rank count in float32. Half the bytes;
 *       each gradient carries a relative error of about 2^-9 per rounding (2^-8 on 2 ranks, in the worst case).</li>
 *   <li>{@link #fp16Compress()}: as PyTorch's {@code fp16_compress_hook}, each gradient divided by the rank count
 *       first (so the sum cannot overflow float16's 65504), rounded to float16 (11 significant bits), summed in
 *       float16 (each addition in float32, rounded once), widened to float32. Half the bytes; relative error about
 *       2^-11 per rounding, and gradients below 2^-24 (after the division) flush to zero.</li>
 * </ul>
 * Every hook gives every rank bit-identical results (each element is reduced by one rank, in rank order, and copied to
 * the others), so replicas never drift apart whichever hook is used.
 */
public interface CommHook {
    /**
     * Starts reducing {@code bucket}'s gradients across {@code comm}'s ranks; returns the collective's future.
     *
     * @param comm   the communicator of the data-parallel ranks
     * @param bucket the bucket, its gradients final for this step
     * @return the future of the collective that reduces it
     */
    CommFuture<Void> start(Communicator comm, Bucket bucket);

    /**
     * Completes the reduction after {@code start}'s future completed: afterwards {@code bucket.gradients()} holds the
     * mean over the ranks. Called on the training thread, in bucket order.
     *
     * @param comm   the communicator of the data-parallel ranks
     * @param bucket the bucket
     */
    default void finish(Communicator comm, Bucket bucket) {
    }

    /** The default hook: the float32 mean, reduced in place. */
    static CommHook average() {
        return Hooks.AVERAGE;
    }

    /** Gradients on the wire in bfloat16, averaged in float32 at the end (see the class comment for the numerics). */
    static CommHook bf16Compress() {
        return new Hooks.Compressing(io.hcomm4j.DataType.BFLOAT16);
    }

    /** Gradients on the wire in float16, pre-divided by the rank count (see the class comment for the numerics). */
    static CommHook fp16Compress() {
        return new Hooks.Compressing(io.hcomm4j.DataType.FLOAT16);
    }
}
