package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The primitive-array overloads of the collectives (heap memory end to end: the transport stages it, the kernels
 * reduce it in place), on real ranks: every element on every rank.
 */
class ArrayCollectivesTest {
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 3, 4})
    void arraysInAndOut(int n) throws Exception {
        Ranks.runThreads(n, Duration.ofMinutes(2), cfg -> cfg, h -> {
            Communicator c = h.world();
            int me = c.rank();
            int len = 100_003; // several ring chunks, not divisible by the rank count
            // out-of-place all-reduce, every primitive type
            float[] fs = new float[len];
            double[] ds = new double[len];
            int[] is = new int[len];
            long[] ls = new long[len];
            for (int i = 0; i < len; i++) {
                fs[i] = (me + 1) * (i % 7);
                ds[i] = (me + 1) * 0.5 * (i % 11);
                is[i] = (me + 1) * ((i % 13) - 6);
                ls[i] = (long) (me + 1) << 33 | i;
            }
            float[] fr = new float[len];
            double[] dr = new double[len];
            int[] ir = new int[len];
            long[] lr = new long[len];
            c.allReduce(fs, fr, ReduceOp.SUM);
            c.allReduce(ds, dr, ReduceOp.MAX);
            c.allReduce(is, ir, ReduceOp.MIN);
            c.allReduce(ls, lr, ReduceOp.SUM);
            long tri = (long) n * (n + 1) / 2;
            for (int i = 0; i < len; i++) {
                assertThat(fr[i]).as("float %d", i).isEqualTo((float) (tri * (i % 7)));
                assertThat(dr[i]).as("double %d", i).isEqualTo(n * 0.5 * (i % 11));
                assertThat(ir[i]).as("int %d", i).isEqualTo((i % 13) - 6 < 0 ? n * ((i % 13) - 6) : (i % 13) - 6);
                long sum = 0;
                for (int r = 0; r < n; r++) sum += (long) (r + 1) << 33 | i;
                assertThat(lr[i]).as("long %d", i).isEqualTo(sum);
            }
            // the inputs are untouched by an out-of-place call
            assertThat(fs[5]).isEqualTo((me + 1) * 5f);

            // broadcast from every root
            for (int root = 0; root < n; root++) {
                double[] b = new double[len];
                if (me == root) for (int i = 0; i < len; i++) b[i] = root * 1000.0 + i;
                c.broadcast(b, root);
                for (int i = 0; i < len; i++) assertThat(b[i]).as("broadcast from %d, %d", root, i).isEqualTo(root * 1000.0 + i);
                int[] bi = new int[3];
                if (me == root) bi = new int[] {root, -root, 7};
                c.broadcast(bi, root);
                assertThat(bi).containsExactly(root, -root, 7);
            }

            // all-gather: block r is rank r's array
            long[] mine = new long[1009];
            for (int i = 0; i < mine.length; i++) mine[i] = me * 1_000_000L + i;
            long[] all = new long[mine.length * n];
            c.allGather(mine, all);
            for (int r = 0; r < n; r++) {
                for (int i = 0; i < mine.length; i++) assertThat(all[r * mine.length + i]).isEqualTo(r * 1_000_000L + i);
            }
            float[] fmine = {me, me + 0.5f};
            float[] fall = new float[2 * n];
            c.allGather(fmine, fall);
            for (int r = 0; r < n; r++) assertThat(new float[] {fall[2 * r], fall[2 * r + 1]}).containsExactly(r, r + 0.5f);
        });
    }
}
