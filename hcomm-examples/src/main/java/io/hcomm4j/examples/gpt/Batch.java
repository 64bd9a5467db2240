package io.hcomm4j.examples.gpt;

/**
 * One rank's input for one step, as its {@link Model} made it with {@link Model#batch}; opaque to everything else.
 * Implementations ({@link TokenBatch}, {@link RowBatch}) are immutable values.
 */
public interface Batch {
}
