package io.hcomm4j.spark;

import io.hcomm4j.Communicator;
import io.hcomm4j.ReduceOp;
import java.util.Iterator;

/**
 * The task of {@link SparkHcomm#allReduceFloats} and {@link SparkHcomm#allReduceDoubles}: each partition's vector,
 * all-reduced; rank 0 returns the result (every rank holds the same bits).
 */
final class VectorAllReduce<T, V> implements RankTask<T, V> {
    private static final long serialVersionUID = 1L;
    private final RankTask<T, V> perPartition;
    private final ReduceOp op;
    private final Class<V> type;

    VectorAllReduce(RankTask<T, V> perPartition, ReduceOp op, Class<V> type) {
        this.perPartition = perPartition;
        this.op = op;
        this.type = type;
    }

    @Override
    public V run(SparkRank rank, Iterator<T> rows) throws Exception {
        V v = perPartition.run(rank, rows);
        Communicator world = rank.world();
        int length = v == null ? -1 : v instanceof float[] f ? f.length : ((double[]) v).length;
        // Every rank learns every length before any data moves, so all fail alike and the message names the culprits.
        int[] lengths = new int[world.size()];
        world.allGather(new int[] {length}, lengths);
        for (int r = 0; r < lengths.length; r++) {
            if (lengths[r] != lengths[0] || lengths[r] < 0) {
                throw new IllegalStateException(describe(lengths) + ": every partition must return a " + type.getSimpleName()
                        + " of the same length (seen by rank " + rank.rank() + ")");
            }
        }
        if (v instanceof float[] f) world.allReduce(f, op);
        else world.allReduce((double[]) v, op);
        return rank.rank() == 0 ? v : null;
    }

    private String describe(int[] lengths) {
        StringBuilder sb = new StringBuilder("the per-partition function returned ");
        for (int r = 0; r < lengths.length; r++) {
            if (r > 0) sb.append(", ");
            sb.append(lengths[r] < 0 ? "null" : lengths[r] + " elements").append(" on rank ").append(r);
        }
        return sb.toString();
    }
}
