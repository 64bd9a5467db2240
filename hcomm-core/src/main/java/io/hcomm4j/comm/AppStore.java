package io.hcomm4j.comm;

import io.hcomm4j.KeyValueStore;
import io.hcomm4j.bootstrap.Store;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

/**
 * The job's store as the application sees it: every key under {@link #PREFIX}, so no application key can overwrite or
 * read one of the library's (session namespaces, addresses, statuses).
 */
final class AppStore implements KeyValueStore {
    static final String PREFIX = "app/";

    private final Store store;
    private final int rank;

    AppStore(Store store, int rank) {
        this.store = store;
        this.rank = rank;
    }

    private String key(String key) {
        Objects.requireNonNull(key, "key");
        if (key.isEmpty()) throw new IllegalArgumentException("rank " + rank + ": store: key must not be empty");
        return PREFIX + key;
    }

    private byte[] value(String arg, byte[] v) {
        return Objects.requireNonNull(v, arg);
    }

    @Override
    public void set(String key, byte[] value) {
        store.set(key(key), value(key + "'s value", value));
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        return store.get(key(key), Objects.requireNonNull(timeout, "timeout"));
    }

    @Override
    public byte[] tryGet(String key) {
        return store.tryGet(key(key));
    }

    @Override
    public void await(Collection<String> keys, Duration timeout) {
        List<String> full = new ArrayList<>(keys.size());
        for (String k : keys) full.add(key(k));
        store.await(full, Objects.requireNonNull(timeout, "timeout"));
    }

    @Override
    public long add(String key, long delta) {
        return store.add(key(key), delta);
    }

    @Override
    public byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        return store.compareAndSet(key(key), expected, value(key + "'s desired value", desired));
    }

    @Override
    public boolean delete(String key) {
        return store.delete(key(key));
    }
}
