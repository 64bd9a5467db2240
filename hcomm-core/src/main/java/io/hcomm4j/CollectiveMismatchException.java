package io.hcomm4j;

/**
 * Ranks of a communicator called different collectives, or the same one with a different count, type,
 * op or root, as their k-th collective. The message names the op and the rank that differs.
 */
public class CollectiveMismatchException extends HcommException {
    private static final long serialVersionUID = 1L;

    /** @param message what this rank called, and what the other rank sent */
    public CollectiveMismatchException(String message) {
        super(message);
    }
}
