package io.hcomm4j.transport;

import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;

/** A posted receive: waits in its communicator's match table until a message matches, then takes its bytes. */
public final class RecvRequest extends Request<Status> {
    /** Source world rank, or {@link PeerTransport#ANY}. */
    final int src;
    /** World rank → communicator rank for the Status, or null when they are the same. */
    final int[] sourceMap;
    /** Filled in when matched. */
    int matchedSrc;
    int matchedTag;
    long matchedSize;
    /**
     * A rendezvous message whose payload comes in chunks ({@link Frame#DATA_PART}, poller only): bytes still to come, and
     * which chunks came (bit i: chunk i; past the first 64, {@link #moreChunks}), so a chunk sent again over another link
     * after a link failed is dropped if it came already.
     */
    long dataLeft;
    private long chunks;
    private long[] moreChunks;

    /**
     * Set while UCX may write into {@link #buf} (a large message through UCX's tag matching): it cancels that receive and
     * waits until UCX let go of the buffer, so a caller that frees the buffer after the failure is safe.
     */
    volatile Runnable stopWritesOnFailure;

    /** Whether a matched message must carry {@link #expectFlags} (collectives check their fingerprint). */
    final boolean checkFlags;
    final int expectFlags;

    RecvRequest(PeerTransport transport, long commId, int src, int tag, MemorySegment buf, int[] sourceMap,
                boolean checkFlags, int expectFlags) {
        super(transport, commId, tag, buf);
        this.src = src;
        this.sourceMap = sourceMap;
        this.checkFlags = checkFlags;
        this.expectFlags = expectFlags;
    }

    /** The mismatch failure if a message with {@code flags} from world rank {@code from} must not be taken, else null. */
    FingerprintMismatchException mismatch(int from, int flags) {
        return checkFlags && flags != expectFlags ? new FingerprintMismatchException(from, flags, expectFlags) : null;
    }

    /** The payload of {@code size} bytes comes in chunks from now on (its CTS goes out). */
    void expectChunks(long size) {
        dataLeft = size;
        chunks = 0;
        long n = (size + Frame.CHUNK - 1) / Frame.CHUNK;
        moreChunks = n > 64 ? new long[(int) ((n - 64 + 63) / 64)] : null;
    }

    /** Whether the chunk unit {@code index} ({@link Frame#CHUNK} bytes from {@code index * CHUNK}) came already. */
    boolean chunkCame(long index) {
        return index < 64 ? (chunks & (1L << index)) != 0 : (moreChunks[(int) ((index - 64) >>> 6)] & (1L << (index & 63))) != 0;
    }

    /** The {@code bytes} from unit {@code index} on came: true if they were the last. */
    boolean chunkDone(long index, long bytes) {
        long end = index + (bytes + Frame.CHUNK - 1) / Frame.CHUNK;
        for (long i = index; i < end; i++) {
            if (i < 64) chunks |= 1L << i;
            else moreChunks[(int) ((i - 64) >>> 6)] |= 1L << (i & 63);
        }
        dataLeft -= bytes;
        return dataLeft == 0;
    }

    boolean matches(int msgSrc, int msgTag) {
        return Matching.matches(src, tag, msgSrc, msgTag);
    }

    @Override
    void beforeFailure() {
        Runnable stop = stopWritesOnFailure;
        if (stop != null) stop.run();
    }

    void succeedMatched() {
        succeed(new Status(sourceMap == null ? matchedSrc : sourceMap[matchedSrc], matchedTag, matchedSize));
    }

    @Override
    int[] rankMap() {
        return sourceMap;
    }

    @Override
    int tracePeer() {
        return finished() && !isCompletedExceptionally() ? matchedSrc : src == PeerTransport.ANY ? -1 : src;
    }

    @Override
    String describe() {
        return "recv from " + (src == PeerTransport.ANY ? "any rank" : "rank " + src)
                + " (tag " + (tag == PeerTransport.ANY ? "any" : String.valueOf(tag)) + ", buffer " + buf.byteSize() + " bytes)";
    }

    @Override
    void abandon() {
        transport.abandonWaiting(this);
    }
}
