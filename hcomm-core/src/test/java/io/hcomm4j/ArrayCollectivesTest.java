package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The array forms of {@link ArrayCollectives} on 1 to 8 ranks, shared memory and TCP: reduce, reduceScatter, gather,
 * scatter (null arrays where the op does not use them), allToAll, and the async all-reduce, broadcast and all-gather;
 * every element on every rank against values computed here from seeded inputs.
 */
class ArrayCollectivesTest {
    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"1, AUTO", "2, AUTO", "3, AUTO", "8, AUTO", "3, TCP", "5, TCP"})
    void everyArrayForm(int n, CommConfig.Transport transport) throws Exception {
        long seed = 104_729L * n + transport.ordinal();
        Ranks.runThreads(n, Duration.ofMinutes(2), b -> b.transport(transport), h -> {
            Communicator c = h.world();
            int rank = c.rank();
            int k = 1 + new Random(seed).nextInt(300);
            int root = new Random(seed + 1).nextInt(n);
            long[] mine = new long[k];
            for (int i = 0; i < k; i++) mine[i] = v(seed, rank, i);

            long[] reduced = rank == root ? new long[k] : null;
            c.reduce(mine, reduced, ReduceOp.SUM, root);
            if (rank == root) for (int i = 0; i < k; i++) assertThat(reduced[i]).as("reduce %d", i).isEqualTo(sum(seed, n, i));

            double[] blocks = new double[k * n];
            for (int i = 0; i < k * n; i++) blocks[i] = v(seed, rank, i);
            double[] myBlock = new double[k];
            c.reduceScatter(blocks, myBlock, ReduceOp.MAX);
            for (int i = 0; i < k; i++) {
                double max = Long.MIN_VALUE;
                for (int r = 0; r < n; r++) max = Math.max(max, v(seed, r, rank * k + i));
                assertThat(myBlock[i]).as("reduceScatter %d", i).isEqualTo(max);
            }

            int[] ints = new int[k];
            for (int i = 0; i < k; i++) ints[i] = (int) v(seed, rank, i);
            int[] gathered = rank == root ? new int[k * n] : null;
            c.gather(ints, gathered, root);
            if (rank == root) for (int i = 0; i < k * n; i++) assertThat(gathered[i]).isEqualTo((int) v(seed, i / k, i % k));

            float[] toScatter = null;
            if (rank == root) {
                toScatter = new float[k * n];
                for (int i = 0; i < k * n; i++) toScatter[i] = v(seed, root, i);
            }
            float[] piece = new float[k];
            c.scatter(toScatter, piece, root);
            for (int i = 0; i < k; i++) assertThat(piece[i]).isEqualTo((float) v(seed, root, rank * k + i));

            long[] out = new long[k * n];
            for (int i = 0; i < k * n; i++) out[i] = v(seed, rank, i);
            long[] in = new long[k * n];
            c.allToAll(out, in);
            for (int r = 0; r < n; r++) for (int i = 0; i < k; i++) assertThat(in[r * k + i]).isEqualTo(v(seed, r, rank * k + i));

            long[] summed = mine.clone();
            CommFuture<Void> ar = c.allReduceAsync(summed, ReduceOp.SUM);
            long[] bcast = rank == root ? mine.clone() : new long[k];
            CommFuture<Void> bc = c.broadcastAsync(bcast, root);
            long[] everyone = new long[k * n];
            CommFuture<Void> ag = c.allGatherAsync(mine, everyone);
            ar.await();
            bc.await();
            ag.await();
            for (int i = 0; i < k; i++) {
                assertThat(summed[i]).isEqualTo(sum(seed, n, i));
                assertThat(bcast[i]).isEqualTo(v(seed, root, i));
            }
            for (int i = 0; i < k * n; i++) assertThat(everyone[i]).isEqualTo(v(seed, i / k, i % k));
        });
    }

    private static long v(long seed, int rank, int i) {
        return (seed * 131 + rank * 1_000_003L + i * 7_919L) % 1_000_000;
    }

    private static long sum(long seed, int n, int i) {
        long s = 0;
        for (int r = 0; r < n; r++) s += v(seed, r, i);
        return s;
    }
}
