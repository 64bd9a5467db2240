package io.hcomm4j;

/** The communicator was closed or aborted while the op was pending. */
public class CommAbortedException extends HcommException {
    private static final long serialVersionUID = 1L;

    /** @param message what was pending and why it ended */
    public CommAbortedException(String message) {
        super(message);
    }
}
