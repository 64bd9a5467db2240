package io.hcomm4j;

import java.util.List;

/** One or more peers failed (connection lost, process died); the op that depended on them cannot complete. */
public class PeerFailedException extends HcommException {
    private static final long serialVersionUID = 1L;
    private final List<Integer> failedRanks;

    /**
     * @param message     what was being done
     * @param failedRanks ranks (in the communicator of the op) known to have failed
     * @param cause       the underlying I/O failure, or {@code null}
     */
    public PeerFailedException(String message, List<Integer> failedRanks, Throwable cause) {
        super(message, cause);
        this.failedRanks = List.copyOf(failedRanks);
    }

    /** Ranks known to have failed. */
    public List<Integer> failedRanks() {
        return failedRanks;
    }
}
