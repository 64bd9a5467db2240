package io.hcomm4j.bootstrap;

import java.time.Duration;
import java.util.Collection;

/**
 * The rendezvous: a small key-value store that every rank of a job reaches (like torch's c10d Store or
 * Gloo's rendezvous store). Keys are strings, values are bytes. Every waiting call has a deadline and
 * throws {@link io.hcomm4j.CommTimeoutException} naming the keys it waited for; a lost store connection
 * throws {@link io.hcomm4j.HcommException}. Implementations are thread-safe.
 */
public interface Store extends AutoCloseable {
    /** Sets {@code key} to {@code value}, replacing any value, and wakes waiters on it. */
    void set(String key, byte[] value);

    /** The value of {@code key}, waiting up to {@code timeout} for it to be set. */
    byte[] get(String key, Duration timeout);

    /** The value of {@code key} now, or {@code null} if it is not set. Never waits. */
    byte[] tryGet(String key);

    /** Waits up to {@code timeout} until every key in {@code keys} is set. */
    void await(Collection<String> keys, Duration timeout);

    /**
     * Atomically adds {@code delta} to the counter at {@code key} (absent counts as 0; the value is stored as
     * the decimal text of the number) and returns the new value.
     */
    long add(String key, long delta);

    /**
     * Atomically sets {@code key} to {@code desired} if its current value equals {@code expected}
     * ({@code expected == null}: the key must be absent). Returns the value after the call (the desired value
     * if it was set, otherwise the current one, or {@code null} if absent).
     */
    byte[] compareAndSet(String key, byte[] expected, byte[] desired);

    /** Removes {@code key}; returns true if it was set. */
    boolean delete(String key);

    /** Closes the connection (for a client) or the files (file store). Idempotent. */
    @Override
    void close();
}
