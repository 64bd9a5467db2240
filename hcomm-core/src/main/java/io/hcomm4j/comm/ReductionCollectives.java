package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceFunction;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.comm.CollectiveFrame.Mode;
import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;

/**
 * The reducing collectives of a {@link CommunicatorImpl}: all-reduce, reduce and reduce-scatter(V), their arguments
 * checked and made into one {@link CollectiveCall}. A built-in {@link ReduceOp} and a user's {@link ReduceFunction}
 * differ only here: each becomes a kernel, a reduction code for the fingerprint and an AVG divisor, and from then on
 * the frame, the shared-memory path and the transport algorithms treat both alike (same chunks, same order).
 */
final class ReductionCollectives {
    private final CollectiveFrame frame;
    private final ArgumentChecks check;
    private final int rank;
    private final int size;

    ReductionCollectives(CollectiveFrame frame, ArgumentChecks check, int rank, int size) {
        this.frame = frame;
        this.check = check;
        this.rank = rank;
        this.size = size;
    }

    private int avgDivisor(ReduceOp op) {
        return op == ReduceOp.AVG ? size : 1;
    }

    // each collective: the op's entry, the function's entry, then the checks and the call they share

    CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, Mode mode) {
        ReduceKernel k = check.kernel(CollectiveOp.ALL_REDUCE, type, op);
        return allReduce(send, recv, count, type, k, CollectiveOp.redopCode(op), avgDivisor(op), mode);
    }

    CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction f, Mode mode) {
        ReduceKernel k = check.kernel(CollectiveOp.ALL_REDUCE, type, f);
        return allReduce(send, recv, count, type, k, CollectiveOp.redopCode(f), 1, mode);
    }

    private CommFuture<Void> allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceKernel k,
                                       int redop, int avg, Mode mode) {
        CollectiveOp o = CollectiveOp.ALL_REDUCE;
        long n = check.bytes(o, "send", send, count, type);
        check.buffer(o, "recv", recv, n);
        check.writable(o, "recv", recv);
        CollectiveCall c = frame.call(mode).of(o, count, type, redop, -1, n, send, recv);
        c.count = count;
        c.kernel = k;
        c.avg = avg;
        return frame.start(c, mode);
    }

    CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root, Mode mode) {
        ReduceKernel k = check.kernel(CollectiveOp.REDUCE, type, op);
        return reduce(send, recv, count, type, k, CollectiveOp.redopCode(op), avgDivisor(op), root, mode);
    }

    CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceFunction f, int root,
                            Mode mode) {
        ReduceKernel k = check.kernel(CollectiveOp.REDUCE, type, f);
        return reduce(send, recv, count, type, k, CollectiveOp.redopCode(f), 1, root, mode);
    }

    private CommFuture<Void> reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceKernel k, int redop,
                                    int avg, int root, Mode mode) {
        CollectiveOp o = CollectiveOp.REDUCE;
        check.root(o, root);
        long n = check.bytes(o, "send", send, count, type);
        if (rank == root) {
            check.buffer(o, "recv", recv, n);
            check.writable(o, "recv", recv);
        }
        CollectiveCall c = frame.call(mode).of(o, count, type, redop, root, n, send, recv);
        c.count = count;
        c.kernel = k;
        c.avg = avg;
        c.root = root;
        return frame.start(c, mode);
    }

    /** Equal blocks without arrays: the zero-copy path allocates nothing. */
    CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op, Mode mode) {
        check.checkCount(CollectiveOp.REDUCE_SCATTER, "recvCount", recvCount);
        ReduceKernel k = check.kernel(CollectiveOp.REDUCE_SCATTER, type, op);
        return reduceScatter(send, recv, recvCount, type, k, CollectiveOp.redopCode(op), avgDivisor(op), mode);
    }

    CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceFunction f,
                                   Mode mode) {
        check.checkCount(CollectiveOp.REDUCE_SCATTER, "recvCount", recvCount);
        ReduceKernel k = check.kernel(CollectiveOp.REDUCE_SCATTER, type, f);
        return reduceScatter(send, recv, recvCount, type, k, CollectiveOp.redopCode(f), 1, mode);
    }

    private CommFuture<Void> reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceKernel k,
                                           int redop, int avg, Mode mode) {
        CollectiveOp o = CollectiveOp.REDUCE_SCATTER;
        long blk = check.product(o, "recvCount", recvCount, type.byteSize());
        long total = check.product(o, "recvCount x ranks", blk, size);
        check.buffer(o, "send", send, total);
        check.buffer(o, "recv", recv, blk);
        check.writable(o, "recv", recv);
        return call(o, equalCountsHash(recvCount), type, redop, total, send, recv, recvCount, null, k, avg, mode);
    }

    /** {@code Arrays.hashCode} of {@code size} counts equal to {@code count}, without the array. */
    private int equalCountsHash(long count) {
        int h = 1;
        int e = (int) (count ^ (count >>> 32));
        for (int r = 0; r < size; r++) h = 31 * h + e;
        return h;
    }

    CommFuture<Void> reduceScatterV(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op,
                                    Mode mode) {
        CollectiveOp o = CollectiveOp.REDUCE_SCATTER_V;
        ReduceKernel k = check.kernel(o, type, op);
        long[] sizes = check.sizes(o, "recvCounts", recvCounts, type);
        long total = 0;
        for (long c : sizes) {
            total += c; // each size is below 2^63: a sum that overflows turns negative
            if (total < 0) throw check.refused(o, "the sum of recvCounts overflows a long");
        }
        check.buffer(o, "send", send, total);
        check.buffer(o, "recv", recv, sizes[rank]);
        check.writable(o, "recv", recv);
        return call(o, java.util.Arrays.hashCode(recvCounts), type, CollectiveOp.redopCode(op), total, send, recv, 0,
                recvCounts.clone(), k, avgDivisor(op), mode);
    }

    private CommFuture<Void> call(CollectiveOp o, long fpCount, DataType type, int redop, long bytes, MemorySegment send,
                                  MemorySegment recv, long blockCount, long[] counts, ReduceKernel k, int avg, Mode mode) {
        CollectiveCall c = frame.call(mode).of(o, fpCount, type, redop, -1, bytes, send, recv);
        c.blockCount = blockCount;
        c.counts = counts;
        c.kernel = k;
        c.avg = avg;
        return frame.start(c, mode);
    }
}
