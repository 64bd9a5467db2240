package io.hcomm4j;

/** A blocking call passed its deadline ({@code HCOMM_TIMEOUT}); the message names the op and the peer. */
public class CommTimeoutException extends HcommException {
    private static final long serialVersionUID = 1L;

    /** @param message the op, the peer and how long it waited */
    public CommTimeoutException(String message) {
        super(message);
    }
}
