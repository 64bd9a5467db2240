package io.hcomm4j;

/** Base of every exception HComm4J throws for a communication failure. Unchecked. */
public class HcommException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message what failed, naming the op, the argument or the peer */
    public HcommException(String message) {
        super(message);
    }

    /**
     * @param message what failed
     * @param cause   the underlying failure
     */
    public HcommException(String message, Throwable cause) {
        super(message, cause);
    }
}
