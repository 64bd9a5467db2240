package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The array forms of {@link ArrayCollectives} on 1 to 8 ranks, shared memory and TCP: reduce, reduceScatter, gather,
 * scatter (null arrays where the op does not use them), allToAll, scan and exscan, blocking and async (several async
 * ones in flight at once), over every element type; every element on every rank against values computed here from
 * seeded inputs.
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

            // the async forms of the others, all in flight at once, and the scans
            double[] reducedAsync = rank == root ? new double[k] : null;
            double[] minesD = new double[k];
            for (int i = 0; i < k; i++) minesD[i] = v(seed, rank, i);
            CommFuture<Void> rd = c.reduceAsync(minesD, reducedAsync, ReduceOp.SUM, root);
            int[] intBlocks = new int[k * n];
            for (int i = 0; i < k * n; i++) intBlocks[i] = (int) v(seed, rank, i);
            int[] intBlock = new int[k];
            CommFuture<Void> rs = c.reduceScatterAsync(intBlocks, intBlock, ReduceOp.MIN);
            float[] floats = new float[k];
            for (int i = 0; i < k; i++) floats[i] = v(seed, rank, i);
            float[] gatheredF = rank == root ? new float[k * n] : null;
            CommFuture<Void> ga = c.gatherAsync(floats, gatheredF, root);
            long[] toScatterL = rank == root ? out.clone() : null;
            long[] pieceL = new long[k];
            CommFuture<Void> sc = c.scatterAsync(toScatterL, pieceL, root);
            int[] inAsync = new int[k * n];
            CommFuture<Void> aa = c.allToAllAsync(intBlocks, inAsync);
            long[] scanned = new long[k];
            CommFuture<Void> sa = c.scanAsync(mine, scanned, ReduceOp.SUM);
            double[] exscanned = new double[k];
            java.util.Arrays.fill(exscanned, -7);
            c.exscan(minesD, exscanned, ReduceOp.MAX);
            for (CommFuture<Void> f : java.util.List.of(rd, rs, ga, sc, aa, sa)) f.await();
            if (rank == root) for (int i = 0; i < k; i++) assertThat(reducedAsync[i]).as("reduceAsync %d", i).isEqualTo((double) sum(seed, n, i));
            for (int i = 0; i < k; i++) {
                int min = Integer.MAX_VALUE;
                for (int r = 0; r < n; r++) min = Math.min(min, (int) v(seed, r, rank * k + i));
                assertThat(intBlock[i]).as("reduceScatterAsync %d", i).isEqualTo(min);
                assertThat(pieceL[i]).as("scatterAsync %d", i).isEqualTo(v(seed, root, rank * k + i));
                long prefix = 0;
                double before = -7;
                for (int r = 0; r <= rank; r++) {
                    prefix += v(seed, r, i);
                    if (r < rank) before = r == 0 ? v(seed, 0, i) : Math.max(before, v(seed, r, i));
                }
                assertThat(scanned[i]).as("scanAsync %d", i).isEqualTo(prefix);
                assertThat(exscanned[i]).as("exscan %d", i).isEqualTo(before);
            }
            if (rank == root) for (int i = 0; i < k * n; i++) assertThat(gatheredF[i]).as("gatherAsync %d", i).isEqualTo((float) v(seed, i / k, i % k));
            for (int r = 0; r < n; r++) {
                for (int i = 0; i < k; i++) assertThat(inAsync[r * k + i]).as("allToAllAsync").isEqualTo((int) v(seed, r, rank * k + i));
            }
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
