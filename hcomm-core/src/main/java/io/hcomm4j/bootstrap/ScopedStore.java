package io.hcomm4j.bootstrap;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * A store seen through a scope ({@code HCOMM_STORE_SCOPE}): every key is {@code scope/key} in the store underneath.
 * Sessions of different scopes on one store (the attempts of a Spark barrier stage on the driver's store) start their
 * numbering, counters and waits afresh and never read each other's keys.
 */
final class ScopedStore implements Store {
    private final Store store;
    private final String prefix;

    ScopedStore(Store store, String scope) {
        this.store = store;
        this.prefix = scope + "/";
    }

    private String key(String key) {
        return prefix + key;
    }

    @Override
    public void set(String key, byte[] value) {
        store.set(key(key), value);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        return store.get(key(key), timeout);
    }

    @Override
    public byte[] tryGet(String key) {
        return store.tryGet(key(key));
    }

    @Override
    public void await(Collection<String> keys, Duration timeout) {
        List<String> scoped = new ArrayList<>(keys.size());
        for (String k : keys) scoped.add(key(k));
        store.await(scoped, timeout);
    }

    @Override
    public long add(String key, long delta) {
        return store.add(key(key), delta);
    }

    @Override
    public byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        return store.compareAndSet(key(key), expected, desired);
    }

    @Override
    public boolean delete(String key) {
        return store.delete(key(key));
    }

    @Override
    public void close() {
        store.close();
    }

    @Override
    public String toString() {
        return store + " (scope " + prefix.substring(0, prefix.length() - 1) + ")";
    }
}
