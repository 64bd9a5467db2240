package io.hcomm4j;

import java.time.Duration;

/**
 * The job's key-value store, for the application ({@link Communicator#store()}): the store every rank reached at init
 * (like torch.distributed's c10d Store), under a namespace of its own ({@code app/}), so application keys never meet
 * the library's. One store per job: every communicator of every rank sees the same keys, and they outlive
 * communicators. Values are bytes; counters are the decimal text of a long. Every call is thread-safe; a waiting call
 * has a deadline and throws {@link CommTimeoutException} naming the keys; a lost store throws {@link HcommException}.
 * Meant for small coordination data (addresses, flags, counters), not for tensors.
 */
public interface KeyValueStore {
    /** Sets {@code key} to {@code value}, replacing any value, and wakes ranks waiting for it. */
    void set(String key, byte[] value);

    /** The value of {@code key}, waiting up to {@code timeout} for another rank to set it. */
    byte[] get(String key, Duration timeout);

    /** The value of {@code key} now, or {@code null} if it is not set; never waits. */
    byte[] tryGet(String key);

    /** Waits up to {@code timeout} until every key of {@code keys} is set. */
    void await(java.util.Collection<String> keys, Duration timeout);

    /** Atomically adds {@code delta} to the counter {@code key} (absent: 0) and returns the new value. */
    long add(String key, long delta);

    /**
     * Atomically sets {@code key} to {@code desired} if its value equals {@code expected} ({@code null}: the key must be
     * absent); returns the value after the call.
     */
    byte[] compareAndSet(String key, byte[] expected, byte[] desired);

    /** Removes {@code key}; true if it was set. */
    boolean delete(String key);

    /** {@link #set} of a string (UTF-8). */
    default void setString(String key, String value) {
        set(key, value.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** {@link #get} of a string (UTF-8). */
    default String getString(String key, Duration timeout) {
        return new String(get(key, timeout), java.nio.charset.StandardCharsets.UTF_8);
    }
}
