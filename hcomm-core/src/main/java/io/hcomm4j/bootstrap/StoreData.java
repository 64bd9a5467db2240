package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The key-value data of a {@link TcpStoreServer} and the requests waiting for keys. Thread-safe.
 *
 * <p>One lock guards the data and the waiters. Each waiting request has its own condition and is registered under the
 * keys it still misses, so a set wakes only the requests waiting for that key: with n ranks each awaiting all n keys, a
 * broadcast would cost O(n^2) wake-ups and O(n^3) key checks.
 *
 * <p>Stored arrays are never mutated after they are stored, so callers may write them out after the lock is released:
 * socket I/O never happens under the lock.
 */
final class StoreData {
    private final ReentrantLock lock = new ReentrantLock();
    private final Map<String, byte[]> data = new HashMap<>();
    private final Map<String, Set<Waiter>> waiters = new HashMap<>();
    private volatile boolean closed;

    /** A request blocked in GET or WAIT; {@code missing} are the keys it is registered under. Guarded by the lock. */
    private static final class Waiter {
        final Condition ready;
        final Set<String> missing;

        Waiter(Condition ready, Set<String> missing) {
            this.ready = ready;
            this.missing = missing;
        }
    }

    void put(String key, byte[] value) {
        lock.lock();
        try {
            store(key, value);
        } finally {
            lock.unlock();
        }
    }

    byte[] current(String key) {
        lock.lock();
        try {
            return data.get(key);
        } finally {
            lock.unlock();
        }
    }

    /** The value of {@code key} once it is set, or null if {@code waitMs} passes first. */
    byte[] awaitValue(String key, long waitMs) throws InterruptedException, ClosedChannelException {
        lock.lock();
        try {
            // Read under the same lock hold that saw the key, so a concurrent delete cannot slip in between.
            return awaitLocked(List.of(key), waitMs).isEmpty() ? data.get(key) : null;
        } finally {
            lock.unlock();
        }
    }

    /** Waits until every key is set or {@code waitMs} passes; returns the keys still missing. */
    List<String> awaitKeys(List<String> keys, long waitMs) throws InterruptedException, ClosedChannelException {
        lock.lock();
        try {
            return awaitLocked(keys, waitMs);
        } finally {
            lock.unlock();
        }
    }

    long add(String key, long delta) {
        lock.lock();
        try {
            long v = Math.addExact(decodeCounter(key, data.get(key)), delta);
            store(key, encodeCounter(v));
            return v;
        } finally {
            lock.unlock();
        }
    }

    /** Sets {@code key} to {@code desired} if it holds {@code expected} (null: absent); returns the value after. */
    byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        lock.lock();
        try {
            byte[] cur = data.get(key);
            boolean match = expected == null ? cur == null : cur != null && Arrays.equals(cur, expected);
            if (!match) return cur;
            store(key, desired);
            return desired;
        } finally {
            lock.unlock();
        }
    }

    /** Whether the key existed. */
    boolean delete(String key) {
        lock.lock();
        try {
            return data.remove(key) != null;
        } finally {
            lock.unlock();
        }
    }

    /** Wakes every waiting request, which then ends with {@link ClosedChannelException}; no request waits after. */
    void close() {
        lock.lock();
        try {
            closed = true;
            for (Set<Waiter> ws : waiters.values()) for (Waiter w : ws) w.ready.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Drops the data, once no connection uses it any more. */
    void clear() {
        lock.lock();
        try {
            data.clear();
            waiters.clear();
        } finally {
            lock.unlock();
        }
    }

    /** Stores and wakes the requests waiting for {@code key}. Lock held. */
    private void store(String key, byte[] value) {
        data.put(key, value);
        Set<Waiter> ws = waiters.remove(key);
        if (ws == null) return;
        for (Waiter w : ws) {
            w.missing.remove(key);
            if (w.missing.isEmpty()) w.ready.signal();
        }
    }

    /** Waits until every key is set or {@code waitMs} passes; returns the keys still missing. Lock held. */
    private List<String> awaitLocked(List<String> keys, long waitMs) throws InterruptedException, ClosedChannelException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
        while (true) {
            // Closing: end without a reply, so the client reports a lost store rather than a timeout.
            if (closed) throw new ClosedChannelException();
            Set<String> missing = new LinkedHashSet<>();
            for (String k : keys) if (!data.containsKey(k)) missing.add(k);
            long left = deadline - System.nanoTime();
            if (missing.isEmpty() || left <= 0) return new ArrayList<>(missing);
            Waiter w = new Waiter(lock.newCondition(), missing);
            for (String k : missing) waiters.computeIfAbsent(k, x -> new HashSet<>()).add(w);
            try {
                while (!w.missing.isEmpty() && !closed && left > 0) left = w.ready.awaitNanos(left);
            } finally {
                for (String k : w.missing) {
                    Set<Waiter> ws = waiters.get(k);
                    if (ws != null && ws.remove(w) && ws.isEmpty()) waiters.remove(k);
                }
            }
            // Re-checked from the data: a key may have been deleted again after it woke us.
        }
    }
}
