package io.hcomm4j.ddp;

import io.hcomm4j.DataType;
import java.lang.foreign.MemorySegment;

/**
 * One bucket of a {@link DataParallel}: a run of consecutive parameter tensors whose gradients are reduced by one
 * collective. Buckets are numbered in the order they are reduced, which is the reverse of the forward pass (bucket 0
 * holds the last tensors, whose gradients backward finishes first), and each one's gradients are one contiguous slice
 * of the flat gradient buffer, so a bucket is reduced in place, with no copy into a separate buffer.
 */
public final class Bucket {
    private final int index;
    private final int firstTensor;
    private final int lastTensor;
    private final long offset;
    private final long count;
    private final MemorySegment gradients;
    private final DataParallel owner;

    Bucket(int index, int firstTensor, int lastTensor, long offset, long count, MemorySegment gradients, DataParallel owner) {
        this.index = index;
        this.firstTensor = firstTensor;
        this.lastTensor = lastTensor;
        this.offset = offset;
        this.count = count;
        this.gradients = gradients;
        this.owner = owner;
    }

    /** The bucket's place in the order of reduction: 0 is reduced first. */
    public int index() {
        return index;
    }

    /** The first tensor (in forward order) whose gradient this bucket holds. */
    public int firstTensor() {
        return firstTensor;
    }

    /** The last tensor (in forward order) whose gradient this bucket holds. */
    public int lastTensor() {
        return lastTensor;
    }

    /** Where the bucket begins in the flat gradient buffer, in float32 elements. */
    public long offset() {
        return offset;
    }

    /** Float32 elements of the bucket. */
    public long count() {
        return count;
    }

    /** The bucket's gradients: {@link #count()} float32 values in native order, a slice of registered memory. */
    public MemorySegment gradients() {
        return gradients;
    }

    /**
     * A registered buffer of {@link #count()} elements of {@code type} that belongs to this bucket, for a
     * {@link CommHook} to put the bucket on the wire in another form (e.g. compressed). Allocated at the first call
     * for a type, the same memory at every later call, released with the {@link DataParallel}.
     *
     * @param type the element type of the wire form
     * @return the bucket's wire buffer of that type
     */
    public MemorySegment wire(DataType type) {
        return owner.wire(this, type);
    }

    @Override
    public String toString() {
        return "bucket " + index + " (tensors " + firstTensor + ".." + lastTensor + ", " + count + " floats)";
    }
}
