package io.hcomm4j.comm;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.kernel.ReduceKernel;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The argument checks of one communicator's calls: every message names the rank, the op and the offending value,
 * and a check fails before anything is numbered or sent, so a bad call never disturbs the other ranks.
 */
final class ArgumentChecks {
    private final PeerTransport transport;
    private final int rank;
    private final int size;

    ArgumentChecks(PeerTransport transport, int rank, int size) {
        this.transport = transport;
        this.rank = rank;
        this.size = size;
    }

    /** Bytes of {@code count} elements of {@code type}, checked against {@code buf} (named {@code arg}). */
    long bytes(CollectiveOp op, String arg, MemorySegment buf, long count, DataType type) {
        Objects.requireNonNull(type, "type");
        checkCount(op, "count", count);
        long need = Math.multiplyExact(count, type.byteSize());
        buffer(op, arg, buf, need);
        return need;
    }

    void checkCount(CollectiveOp op, String arg, long count) {
        if (count < 0) throw new IllegalArgumentException("rank " + rank + ": " + op.label() + ": " + arg + " " + count + " must be >= 0");
    }

    void buffer(CollectiveOp op, String arg, MemorySegment buf, long need) {
        Objects.requireNonNull(buf, arg);
        if (buf.byteSize() < need) {
            throw new IllegalArgumentException("rank " + rank + ": " + op.label() + ": " + arg + " holds " + buf.byteSize()
                    + " bytes, the call needs " + need);
        }
        shared(buf, op.label());
    }

    void writable(CollectiveOp op, String arg, MemorySegment buf) {
        if (buf.isReadOnly()) throw new IllegalArgumentException("rank " + rank + ": " + op.label() + ": " + arg + " is read-only");
    }

    void root(CollectiveOp op, int root) {
        if (root < 0 || root >= size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op.label() + ": root " + root + " is out of range [0, " + size + ")");
        }
    }

    ReduceKernel kernel(DataType type, ReduceOp op) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
        if (!op.collective()) {
            throw new IllegalArgumentException("rank " + rank + ": op " + op + " is for one-sided operations only (Window)");
        }
        return ReduceKernel.of(type, op);
    }

    /** Byte offsets and sizes of variable blocks, {@code {off, len}}, checked against the buffer. */
    long[][] blocks(CollectiveOp op, String arg, MemorySegment buf, long[] counts, long[] displs, DataType type) {
        Objects.requireNonNull(counts, arg + "Counts");
        Objects.requireNonNull(displs, arg + " displs");
        if (counts.length != size || displs.length != size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op.label() + ": counts and displs need " + size
                    + " entries (one per rank), have " + counts.length + " and " + displs.length);
        }
        long[] off = new long[size];
        long[] len = new long[size];
        long need = 0;
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0 || displs[r] < 0) {
                throw new IllegalArgumentException("rank " + rank + ": " + op.label() + ": counts[" + r + "] = " + counts[r]
                        + " and displs[" + r + "] = " + displs[r] + " must be >= 0");
            }
            off[r] = Math.multiplyExact(displs[r], type.byteSize());
            len[r] = Math.multiplyExact(counts[r], type.byteSize());
            need = Math.max(need, off[r] + len[r]);
        }
        buffer(op, arg, buf, need);
        return new long[][] {off, len};
    }

    /** Byte sizes of per-rank counts. */
    long[] sizes(CollectiveOp op, long[] counts, DataType type) {
        if (counts.length != size) {
            throw new IllegalArgumentException("rank " + rank + ": " + op.label() + ": counts need " + size + " entries, have " + counts.length);
        }
        long[] len = new long[size];
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0) {
                throw new IllegalArgumentException("rank " + rank + ": " + op.label() + ": counts[" + r + "] = " + counts[r] + " must be >= 0");
            }
            len[r] = Math.multiplyExact(counts[r], type.byteSize());
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
        if (!buf.scope().isAlive()) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf belongs to a closed arena");
        }
        if (!transport.usableFromAnyThread(buf)) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": buf is confined to the thread that allocated it "
                    + "(Arena.ofConfined()); the library's threads move the data, so allocate it with Arena.ofShared(), "
                    + "Arena.ofAuto() or Arena.global()");
        }
    }
}
