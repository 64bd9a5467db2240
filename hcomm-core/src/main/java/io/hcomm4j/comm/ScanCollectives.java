package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.comm.CollectiveFrame.Mode;
import java.lang.foreign.MemorySegment;

/**
 * The prefix reductions of a {@link CommunicatorImpl}, scan and exscan (MPI_Scan, MPI_Exscan): their arguments checked
 * and made into one {@link CollectiveCall}, run by {@link io.hcomm4j.algo.Scan} through the transport.
 */
final class ScanCollectives {
    private final CollectiveFrame frame;
    private final ArgumentChecks check;

    ScanCollectives(CollectiveFrame frame, ArgumentChecks check) {
        this.frame = frame;
        this.check = check;
    }

    /** {@code exclusive}: exscan, else scan. */
    CommFuture<Void> scan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, boolean exclusive,
                          Mode mode) {
        CollectiveOp o = exclusive ? CollectiveOp.EXSCAN : CollectiveOp.SCAN;
        var k = check.kernel(o, type, op);
        // AVG divides by the number of contributions, which differs from rank to rank in a prefix
        if (op == ReduceOp.AVG) throw check.refused(o, "op AVG has no prefix form; scan with SUM and divide by rank + 1");
        long n = check.bytes(o, "send", send, count, type);
        check.buffer(o, "recv", recv, n);
        check.writable(o, "recv", recv);
        CollectiveCall c = frame.call(mode).of(o, count, type, op, -1, n, send, recv);
        c.count = count;
        c.kernel = k;
        return frame.start(c, mode);
    }
}
