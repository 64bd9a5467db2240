package io.hcomm4j.comm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The layout of a zero-copy communicator's control mapping: one slot per rank, each written only by its rank (apart
 * from the sleeping flag, which peers clear), fields that different ranks write on separate 128-byte lines so no two
 * writers share a cache line (two lines: the adjacent-line prefetcher pairs them).
 *
 * <pre>
 *   0                   64                  128                                 256
 *   +-------------------+-------------------+-----------------------------------+
 *   | magic i64 @0, version i32 @8, ranks i32 @12, communicator id i64 @16      |  header, HEADER_LENGTH
 *   +---------------------------------------------------------------------------+
 *   slot r at HEADER_LENGTH + r * SLOT_LENGTH:
 *     +0    descriptor of even tickets  (DESCRIPTOR_LENGTH)
 *     +128  descriptor of odd tickets
 *           each: seq i64 @0, fingerprint i32 @8, flags i32 @12, send file i64 @16, send offset i64 @24,
 *                 recv file i64 @32, recv offset i64 @40
 *     +256  done i64 (seq of the last op this rank finished), +264 error i64 (seq of an op this rank failed in),
 *           +272 step i64 (how far this rank is in a pipelined op: seq &lt;&lt; STEP_BITS | step)
 *     +384  sleeping i32 (1: the rank blocks; whoever changes a word it waits for clears it and rings its doorbell)
 *   block table of rank r, ticket parity p, at HEADER_LENGTH + n * SLOT_LENGTH + (2 r + p) * 16 n:
 *     n i64 offsets, then n i64 lengths (the V forms: where a rank's block for each rank lies in its buffer)
 * </pre>
 *
 * The descriptor's seq is written last with release semantics and read with acquire: it publishes the other fields.
 */
final class ControlLayout {
    static final long MAGIC = 0x59504F4352455A48L; // "HZEROCPY" little-endian
    static final int VERSION = 3;

    static final long MAGIC_OFFSET = 0;
    static final long VERSION_OFFSET = 8;
    static final long RANKS_OFFSET = 12;
    static final long COMMUNICATOR_OFFSET = 16;
    static final long HEADER_LENGTH = 256;

    static final long SLOT_LENGTH = 512;
    static final long DESCRIPTOR_LENGTH = 128;
    static final long SEQ_OFFSET = 0;
    static final long FINGERPRINT_OFFSET = 8;
    static final long FLAGS_OFFSET = 12;
    static final long SEND_FILE_OFFSET = 16;
    static final long SEND_BUFFER_OFFSET = 24;
    static final long RECV_FILE_OFFSET = 32;
    static final long RECV_BUFFER_OFFSET = 40;
    static final long DONE_OFFSET = 256;
    static final long ERROR_OFFSET = 264;
    static final long STEP_OFFSET = 272;
    /** Low bits of a step word that count the steps of one op; the op's seq is above them. */
    static final int STEP_BITS = 24;
    static final long SLEEPING_OFFSET = 384;

    // the bits of a descriptor's flags (every rank's are ANDed: the op runs here if the bits it needs are set on all)
    /** This rank is attached: its connections to every peer go through shared memory. */
    static final int F_CAPABLE = 1;
    /** This rank may run the op here (HCOMM_ALGO forces no other algorithm for it). */
    static final int F_WANT = 2;
    /** The op's send buffer (broadcast: its buffer) lies in the memory pool. */
    static final int F_SEND = 4;
    /** The op's receive buffer lies in the memory pool. */
    static final int F_RECV = 8;
    /** The op's buffers of this rank are the same memory or do not overlap in a way that would race. */
    static final int F_SAFE = 16;
    /** The op's send and receive buffer of this rank are the same memory (in place). */
    static final int F_IN_PLACE = 32;
    /**
     * This rank's buffers are not registered: what it published is its staging ring, which its data goes through
     * chunk by chunk ({@link ZeroCopyPipeline}).
     */
    static final int F_STAGED = 64;
    /** This rank runs the small all-reduce in one step ({@link ZeroCopyReductions}): every rank must. */
    static final int F_ONE_STEP = 128;
    /**
     * This rank runs the all-reduce in the usual steps: every rank must. With {@link #F_ONE_STEP}, ranks that disagree on
     * the path (their one-step limits differ) all fall back to the transport instead of each running its own.
     */
    static final int F_SLICED = 256;

    /** One block-table entry pair (offset and length), per rank. */
    private static final long TABLE_ENTRY_LENGTH = 16;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private ControlLayout() {
    }

    /** Bytes of the control mapping of {@code n} ranks: header, slots, block tables. */
    static long length(int n) {
        return HEADER_LENGTH + n * SLOT_LENGTH + 2L * n * TABLE_ENTRY_LENGTH * n;
    }

    /** Where rank {@code r}'s slot begins. */
    static long slot(int r) {
        return HEADER_LENGTH + r * SLOT_LENGTH;
    }

    /** Where rank {@code r}'s descriptor of the op with {@code ticket} begins (descriptors alternate by ticket parity). */
    static long descriptor(int r, long ticket) {
        return slot(r) + (ticket & 1) * DESCRIPTOR_LENGTH;
    }

    /** Where rank {@code r}'s block table of the op with {@code ticket} begins, among {@code n} ranks. */
    static long table(int n, int r, long ticket) {
        return HEADER_LENGTH + n * SLOT_LENGTH + (2L * r + (ticket & 1)) * TABLE_ENTRY_LENGTH * n;
    }

    /** Writes the header of a fresh mapping; the magic last, with release, so a reader that sees it sees the rest. */
    static void writeHeader(MemorySegment ctrl, int n, long commId) {
        ctrl.set(ValueLayout.JAVA_INT, VERSION_OFFSET, VERSION);
        ctrl.set(ValueLayout.JAVA_INT, RANKS_OFFSET, n);
        ctrl.set(ValueLayout.JAVA_LONG, COMMUNICATOR_OFFSET, commId);
        LONG.setRelease(ctrl, MAGIC_OFFSET, MAGIC);
    }

    /**
     * Checks that {@code ctrl} (the file {@code name}) is the control mapping of communicator {@code commId} of
     * {@code n} ranks; the message names every value that differs.
     */
    static void verifyHeader(MemorySegment ctrl, String name, int n, long commId) throws java.io.IOException {
        long need = length(n);
        if (ctrl.byteSize() < need) {
            throw new java.io.IOException(name + " is not the control file of this communicator: " + ctrl.byteSize()
                    + " bytes, " + n + " ranks need " + need);
        }
        long magic = (long) LONG.getAcquire(ctrl, MAGIC_OFFSET);
        int version = ctrl.get(ValueLayout.JAVA_INT, VERSION_OFFSET);
        int ranks = ctrl.get(ValueLayout.JAVA_INT, RANKS_OFFSET);
        long id = ctrl.get(ValueLayout.JAVA_LONG, COMMUNICATOR_OFFSET);
        if (magic != MAGIC || version != VERSION || ranks != n || id != commId) {
            throw new java.io.IOException(name + " is not the control file of this communicator: magic 0x"
                    + Long.toHexString(magic) + " (want 0x" + Long.toHexString(MAGIC) + "), version " + version + " (want "
                    + VERSION + "), ranks " + ranks + " (want " + n + "), communicator " + id + " (want " + commId + ")");
        }
    }
}
