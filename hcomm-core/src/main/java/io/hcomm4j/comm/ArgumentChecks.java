package io.hcomm4j.comm;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceFunction;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.kernel.ReduceKernel;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;

/**
 * The argument checks of one communicator's calls: every message names the rank, the op and the offending value.
 * A point-to-point check fails before anything is sent. A collective's check fails the call here with the caller's
 * exception ({@link IllegalArgumentException}, or {@link NullPointerException} for a null) and, through
 * {@link CollectiveFrame#refuse}, the same collective on every other rank, which would otherwise wait for this one
 * until the timeout.
 */
final class ArgumentChecks {
    private final PeerTransport transport;
    private final int rank;
    private final int size;
    /** Tells the other ranks of a refused collective; null until the frame exists. */
    private CollectiveFrame frame;

    ArgumentChecks(PeerTransport transport, int rank, int size) {
        this.transport = transport;
        this.rank = rank;
        this.size = size;
    }

    /** From now on a refused collective is refused on every rank through {@code frame}. */
    void refuseThrough(CollectiveFrame frame) {
        this.frame = frame;
    }

    /** The caller's exception for a bad argument {@code what} of collective {@code op}; the other ranks are told. */
    IllegalArgumentException refused(CollectiveOp op, String what) {
        if (frame != null) frame.refuse(op, what);
        return new IllegalArgumentException("rank " + rank + ": " + op.label() + ": " + what);
    }

    /** {@code value}, or the caller's NullPointerException naming {@code arg}; the other ranks are told. */
    <T> T present(CollectiveOp op, String arg, T value) {
        if (value == null) {
            if (frame != null) frame.refuse(op, arg + " is null");
            throw new NullPointerException("rank " + rank + ": " + op.label() + ": " + arg + " is null");
        }
        return value;
    }

    /**
     * {@code a * b} (bytes of elements, or of blocks), or the caller's exception naming {@code what} (a constant: this runs
     * on every call and must not build a string) if it overflows a long; the other ranks are told.
     */
    long product(CollectiveOp op, String what, long a, long b) {
        long hi = Math.multiplyHigh(a, b);
        long lo = a * b;
        if ((hi == 0 && lo >= 0) || (hi == -1 && lo < 0)) return lo;
        throw refused(op, "the bytes of " + what + " overflow a long: " + a + " x " + b);
    }

    /** Bytes of {@code count} elements of {@code type}, checked against {@code buf} (named {@code arg}). */
    long bytes(CollectiveOp op, String arg, MemorySegment buf, long count, DataType type) {
        present(op, "type", type);
        checkCount(op, "count", count);
        long need = product(op, "count", count, type.byteSize());
        buffer(op, arg, buf, need);
        return need;
    }

    void checkCount(CollectiveOp op, String arg, long count) {
        if (count < 0) throw refused(op, arg + " " + count + " must be >= 0");
    }

    void buffer(CollectiveOp op, String arg, MemorySegment buf, long need) {
        present(op, arg, buf);
        if (buf.byteSize() < need) throw refused(op, arg + " holds " + buf.byteSize() + " bytes, the call needs " + need);
        String unusable = unusable(buf);
        if (unusable != null) throw refused(op, arg + unusable);
    }

    void writable(CollectiveOp op, String arg, MemorySegment buf) {
        if (buf.isReadOnly()) throw refused(op, arg + " is read-only");
    }

    void root(CollectiveOp op, int root) {
        if (root < 0 || root >= size) throw refused(op, "root " + root + " is out of range [0, " + size + ")");
    }

    ReduceKernel kernel(CollectiveOp collective, DataType type, ReduceOp op) {
        present(collective, "type", type);
        present(collective, "op", op);
        if (!op.collective()) throw refused(collective, "op " + op + " is for one-sided operations only (Window)");
        if (!op.accepts(type)) {
            throw refused(collective, "op " + op + " is not defined on type " + type + (op == ReduceOp.AVG
                    ? " (use SUM for a logical or, PROD for a logical and)"
                    : " (bitwise ops take the integer types INT8, UINT8, INT16, INT32, INT64 and BOOL)"));
        }
        return ReduceKernel.of(type, op);
    }

    /** A user's reduction as a kernel: a new one per call (it is a small object; the built-in ops' path allocates nothing). */
    ReduceKernel kernel(CollectiveOp collective, DataType type, ReduceFunction function) {
        present(collective, "type", type);
        present(collective, "function", function);
        return ReduceKernel.of(type, function);
    }

    /** Byte offsets and sizes of variable blocks, {@code {off, len}}, checked against the buffer. */
    long[][] blocks(CollectiveOp op, String arg, MemorySegment buf, long[] counts, long[] displs, DataType type) {
        present(op, arg + "Counts", counts);
        present(op, arg + "Displs", displs);
        present(op, "type", type);
        if (counts.length != size || displs.length != size) {
            throw refused(op, arg + "Counts and " + arg + "Displs need " + size + " entries (one per rank), have "
                    + counts.length + " and " + displs.length);
        }
        long[] off = new long[size];
        long[] len = new long[size];
        long need = 0;
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0 || displs[r] < 0) {
                throw refused(op, arg + "Counts[" + r + "] = " + counts[r] + " and " + arg + "Displs[" + r + "] = " + displs[r]
                        + " must be >= 0");
            }
            off[r] = product(op, "displs", displs[r], type.byteSize());
            len[r] = product(op, "counts", counts[r], type.byteSize());
            need = Math.max(need, off[r] + len[r]);
        }
        buffer(op, arg, buf, need);
        return new long[][] {off, len};
    }

    /** Byte sizes of per-rank counts. */
    long[] sizes(CollectiveOp op, String arg, long[] counts, DataType type) {
        present(op, arg, counts);
        present(op, "type", type);
        if (counts.length != size) throw refused(op, arg + " needs " + size + " entries (one per rank), has " + counts.length);
        long[] len = new long[size];
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0) throw refused(op, arg + "[" + r + "] = " + counts[r] + " must be >= 0");
            len[r] = product(op, "counts", counts[r], type.byteSize());
        }
        return len;
    }

    /** A point-to-point peer and tag (ANY_SOURCE and ANY_TAG allowed). */
    void source(int peer, int tag, String op) {
        if (peer != io.hcomm4j.Communicator.ANY_SOURCE && (peer < 0 || peer >= size)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": peer " + peer + " is out of range [0, " + size
                    + ") and is not ANY_SOURCE");
        }
        if (tag < 0 && tag != io.hcomm4j.Communicator.ANY_TAG) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": tag " + tag + " must be >= 0 or ANY_TAG");
        }
    }

    /** The library's threads move the data: {@code buf} must be alive and usable from any thread. */
    void shared(MemorySegment buf, String op) {
        String unusable = unusable(buf);
        if (unusable != null) throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf" + unusable);
    }

    /** Why the library's threads cannot use {@code buf} (" belongs to a closed arena"), or null. */
    private String unusable(MemorySegment buf) {
        if (!buf.scope().isAlive()) return " belongs to a closed arena";
        if (!transport.usableFromAnyThread(buf)) {
            return " is confined to the thread that allocated it (Arena.ofConfined()); the library's threads move the data, "
                    + "so allocate it with Arena.ofShared(), Arena.ofAuto() or Arena.global()";
        }
        return null;
    }
}
