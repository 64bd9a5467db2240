package io.hcomm4j;

import java.lang.foreign.MemorySegment;

/**
 * Point-to-point ops gathered to start together: {@link Communicator#batch()}, then {@link #send}/{@link #recv}
 * in any order, then {@link #start()} or {@link #run()}. All receives are posted before any send starts, so
 * matching batches on several ranks (a halo exchange, a ring, a shuffle) cannot deadlock. A batch starts once.
 */
public interface Batch {
    /** Adds a send of {@code buf} to {@code peer} with {@code tag}. */
    Batch send(MemorySegment buf, int peer, int tag);

    /** Adds a receive into {@code buf} from {@code peer} (not ANY_SOURCE) with {@code tag}. */
    Batch recv(MemorySegment buf, int peer, int tag);

    /** Starts every op; the future completes when all have, or fails with the first failure. */
    CommFuture<Void> start();

    /** {@code start().await()}. */
    default void run() {
        start().await();
    }
}
