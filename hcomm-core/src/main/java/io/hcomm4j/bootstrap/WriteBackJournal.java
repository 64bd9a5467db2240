package io.hcomm4j.bootstrap;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a {@link TcpStore} with a reconnect budget wrote to the store and has not deleted since, so that a restarted
 * server (a new incarnation, empty) gets it back: the last value of each key the client set (or won with a
 * compare-and-set), and the client's own contribution to each counter (the sum of its add deltas since its last set of
 * the key). After a restart, {@link #restarted} queues the write-back requests, which the client sends before any
 * other request.
 *
 * <p>Not thread-safe: the client uses it under its lock only.
 */
final class WriteBackJournal {
    /** The client's logger: a write-back is the client's doing, and its log settings should cover it. */
    private static final Logger LOG = LoggerFactory.getLogger(TcpStore.class);

    /** Keys this client set (or won with a CAS), with the value. */
    private final Map<String, Written> written = new LinkedHashMap<>();
    /** This client's contribution to each counter since its last set of the key. */
    private final Map<String, Long> added = new LinkedHashMap<>();
    /** What is still to be written again to a restarted server, before any other request. */
    private final ArrayDeque<StoreRequest<?>> restore = new ArrayDeque<>();

    private record Written(byte[] value, boolean byCas) {
    }

    /** {@code value} (not copied: the caller's own copy) was set on {@code key}. */
    void set(String key, byte[] value) {
        written.put(key, new Written(value, false));
        added.remove(key);
    }

    /** A CAS of {@code key} to {@code desired} left {@code after} in the store: a win is remembered as a decision. */
    void compareAndSet(String key, byte[] desired, byte[] after) {
        if (Arrays.equals(after, desired)) {
            written.put(key, new Written(desired, true));
            added.remove(key);
        }
    }

    void add(String key, long delta) {
        added.merge(key, delta, Long::sum);
    }

    void delete(String key) {
        written.remove(key);
        added.remove(key);
    }

    /** The next write-back request, or null when nothing is left to write back. */
    StoreRequest<?> nextRestore() {
        return restore.peek();
    }

    /** The head write-back request was answered (or refused): on to the next. */
    void restoreDone() {
        restore.poll();
    }

    /**
     * The server is a new incarnation, so it lost everything: queues what this client wrote, to be written again before
     * anything else: the keys it set (CAS wins as a CAS on the absent key), then its counter contributions.
     * {@code client} and the incarnations are for the log.
     */
    void restarted(Object client, long was, long now) {
        restore.clear();
        for (Map.Entry<String, Written> e : written.entrySet()) {
            String key = e.getKey();
            Written w = e.getValue();
            if (w.byCas) {
                // A decision (shrink's): taken back only if nobody decided otherwise on the new server meanwhile.
                restore.add(StoreRequest.compareAndSet(key, null, w.value, after -> {
                    if (!Arrays.equals(after, w.value)) {
                        written.remove(key);
                        LOG.warn("{}: after the store restarted another client decided key '{}' before this client could "
                                + "write its own decision back; the store keeps the other one", client, key);
                    }
                }));
            } else {
                restore.add(StoreRequest.set(key, w.value, null));
            }
        }
        for (Map.Entry<String, Long> e : added.entrySet()) restore.add(StoreRequest.add(e.getKey(), e.getValue(), null));
        if (restore.isEmpty()) {
            LOG.info("{}: the store restarted (incarnation {} -> {}); this client wrote nothing to take back", client,
                    Long.toHexString(was), Long.toHexString(now));
            return;
        }
        LOG.warn("{}: the store restarted (incarnation {} -> {}) and lost its data; writing back the {} keys and {} counter "
                + "contributions of this client", client, Long.toHexString(was), Long.toHexString(now),
                written.size(), added.size());
    }
}
