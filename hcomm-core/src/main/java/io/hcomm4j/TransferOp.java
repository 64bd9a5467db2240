package io.hcomm4j;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One op of a transfer batch ({@link TransferEngine#transfer}): {@code length} bytes between {@code local} at
 * {@code localOffset} and the remote engine's segment named {@code remoteSegment} at {@code remoteOffset}.
 * {@link Kind#WRITE} copies local to remote, {@link Kind#READ} remote to local. The offsets and the length are checked
 * when the batch is issued (an op outside either segment throws {@link IndexOutOfBoundsException} naming it).
 *
 * @param kind          READ or WRITE
 * @param local         this process's memory: any segment usable from any thread (heap, global, shared or automatic
 *                      arena; a confined arena's is refused); not read-only for a READ
 * @param localOffset   byte offset in {@code local}
 * @param remoteSegment the name the remote engine registered its segment under ({@link TransferEngine#register})
 * @param remoteOffset  byte offset in the remote segment
 * @param length        bytes to move, at least 0
 */
public record TransferOp(Kind kind, MemorySegment local, long localOffset, String remoteSegment, long remoteOffset, long length) {
    /** Which way the bytes go. */
    public enum Kind {
        /** Remote segment to local memory. */
        READ,
        /** Local memory to remote segment. */
        WRITE
    }

    /** Checks that nothing is null. */
    public TransferOp {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(local, "local");
        Objects.requireNonNull(remoteSegment, "remoteSegment");
    }

    /** Reads {@code length} bytes of remote segment {@code remoteSegment} at {@code remoteOffset} into {@code local} at {@code localOffset}. */
    public static TransferOp read(MemorySegment local, long localOffset, String remoteSegment, long remoteOffset, long length) {
        return new TransferOp(Kind.READ, local, localOffset, remoteSegment, remoteOffset, length);
    }

    /** Writes {@code length} bytes of {@code local} at {@code localOffset} into remote segment {@code remoteSegment} at {@code remoteOffset}. */
    public static TransferOp write(MemorySegment local, long localOffset, String remoteSegment, long remoteOffset, long length) {
        return new TransferOp(Kind.WRITE, local, localOffset, remoteSegment, remoteOffset, length);
    }
}
