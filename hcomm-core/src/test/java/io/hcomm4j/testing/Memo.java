package io.hcomm4j.testing;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.function.Supplier;

/**
 * Results of a pure function kept for other callers with the same arguments: the ranks of a thread job that check the
 * same elements against one reference compute it once between them instead of once each. The newest results are kept up
 * to a size budget (units of the caller's choosing); a caller that finds its result pushed out computes it again.
 *
 * @param <K> the function's arguments, with value equality
 * @param <V> its result, which callers only read
 */
public final class Memo<K, V> {
    private final long budget;
    /** Kept results, oldest first, with their sizes; guarded by itself. */
    private final Map<K, Map.Entry<Long, FutureTask<V>>> kept = new LinkedHashMap<>();
    private long size;

    /** Keeps results of up to {@code budget} units in all (one larger result is still kept, alone). */
    public Memo(long budget) {
        this.budget = budget;
    }

    /** The result for {@code key}, of {@code size} units: a kept one, or {@code compute}'s, run here once for all callers. */
    public V get(K key, long size, Supplier<V> compute) {
        FutureTask<V> task;
        boolean mine = false;
        synchronized (kept) {
            Map.Entry<Long, FutureTask<V>> e = kept.get(key);
            if (e != null) {
                task = e.getValue();
            } else {
                task = new FutureTask<>(compute::get);
                kept.put(key, Map.entry(size, task));
                this.size += size;
                mine = true;
                var it = kept.entrySet().iterator();
                while (this.size > budget && kept.size() > 1) {
                    var oldest = it.next();
                    this.size -= oldest.getValue().getKey();
                    it.remove();
                }
            }
        }
        if (mine) task.run();
        try {
            return task.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Error err) throw err;
            if (e.getCause() instanceof RuntimeException re) throw re;
            throw new IllegalStateException(e.getCause());
        }
    }
}
