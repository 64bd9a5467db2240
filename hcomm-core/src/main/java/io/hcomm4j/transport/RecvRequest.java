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

    boolean matches(int msgSrc, int msgTag) {
        return Matching.matches(src, tag, msgSrc, msgTag);
    }

    void succeedMatched() {
        succeed(new Status(sourceMap == null ? matchedSrc : sourceMap[matchedSrc], matchedTag, matchedSize));
    }

    @Override
    int[] rankMap() {
        return sourceMap;
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
