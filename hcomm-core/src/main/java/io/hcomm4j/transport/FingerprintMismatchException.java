package io.hcomm4j.transport;

import io.hcomm4j.HcommException;

/**
 * A message matched a receive whose expected fingerprint (the op and arguments of a collective, carried in
 * the frame's flags) differs from the sender's: the ranks called different collectives, or the same one with
 * other arguments. The collective layer turns it into a {@link io.hcomm4j.CollectiveMismatchException}.
 */
public final class FingerprintMismatchException extends HcommException {
    private static final long serialVersionUID = 1L;
    private final int source;
    private final int sent;
    private final int expected;
    private final boolean late;

    FingerprintMismatchException(int source, int sent, int expected) {
        this(source, sent, expected, false);
    }

    FingerprintMismatchException(int source, int sent, int expected, boolean late) {
        super("rank " + source + " sent fingerprint 0x" + Integer.toHexString(sent) + ", expected 0x" + Integer.toHexString(expected)
                + (late ? ", after this rank had finished the op" : ""));
        this.source = source;
        this.sent = sent;
        this.expected = expected;
        this.late = late;
    }

    /**
     * The message came after this rank had finished the op it belongs to: the sender ran the op differently (another
     * root or algorithm), even when the fingerprints agree.
     */
    public boolean late() {
        return late;
    }

    /** World rank that sent the message. */
    public int source() {
        return source;
    }

    /** The sender's fingerprint. */
    public int sent() {
        return sent;
    }

    /** The receiver's fingerprint. */
    public int expected() {
        return expected;
    }
}
