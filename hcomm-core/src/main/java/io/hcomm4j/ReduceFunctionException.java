package io.hcomm4j;

/**
 * A collective with a user {@link ReduceFunction} failed because the function threw. On the rank where it threw, the
 * cause is the function's exception; on the ranks that were told of it, the message names that rank and the cause is
 * null.
 */
public class ReduceFunctionException extends HcommException {
    private static final long serialVersionUID = 1L;

    /** @param message what failed: the rank, the collective, the function and what it threw */
    public ReduceFunctionException(String message) {
        super(message);
    }

    /**
     * @param message what failed
     * @param cause   the function's exception
     */
    public ReduceFunctionException(String message, Throwable cause) {
        super(message, cause);
    }
}
