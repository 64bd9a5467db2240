package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** split/dup reuse connections; sub-communicators rank, route and reduce within their group; batches and stream collectives. */
class SubCommunicatorTest {
    @Test
    void splitDupAndConcurrentCollectivesOnSeveralCommunicators() throws Exception {
        int n = 8;
        AtomicLong slowestSplit = new AtomicLong();
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator world = h.world();
            int me = world.rank();
            long t0 = System.nanoTime();
            Communicator half = world.split(me % 2, -me); // evens and odds, ranked in reverse
            slowestSplit.accumulateAndGet(System.nanoTime() - t0, Math::max);
            assertThat(half.size()).isEqualTo(4);
            int[] members = me % 2 == 0 ? new int[] {6, 4, 2, 0} : new int[] {7, 5, 3, 1};
            assertThat(members[half.rank()]).isEqualTo(me);

            Communicator none = world.split(me < 3 ? Communicator.UNDEFINED : 0, me);
            if (me < 3) assertThat(none).isNull();
            else assertThat(none.size()).isEqualTo(5);

            Communicator copy = world.dup();
            assertThat(copy.rank()).isEqualTo(me);
            assertThat(copy.size()).isEqualTo(n);

            // point to point inside the group, in group ranks; the Status names the group rank
            int next = (half.rank() + 1) % 4, prev = (half.rank() + 3) % 4;
            int[] in = new int[1];
            CommFuture<Status> r = half.recvAsync(in, Communicator.ANY_SOURCE, 5);
            half.send(new int[] {me}, next, 5);
            Status st = r.await();
            assertThat(st.source()).isEqualTo(prev);
            assertThat(in[0]).isEqualTo(members[prev]);

            // collectives on three communicators at once from three threads
            List<Throwable> errors = new CopyOnWriteArrayList<>();
            List<Thread> threads = new ArrayList<>();
            threads.add(Thread.ofPlatform().start(() -> run(errors, () -> {
                for (int i = 0; i < 20; i++) {
                    long[] v = {me, 1};
                    half.allReduce(v, ReduceOp.SUM);
                    long want = 0;
                    for (int m : members) want += m;
                    assertThat(v).containsExactly(want, 4);
                }
            })));
            threads.add(Thread.ofPlatform().start(() -> run(errors, () -> {
                for (int i = 0; i < 20; i++) {
                    double[] v = new double[10_000];
                    java.util.Arrays.fill(v, me + i);
                    copy.allReduce(v, ReduceOp.MAX);
                    for (double x : v) assertThat(x).isEqualTo(n - 1 + i);
                }
            })));
            threads.add(Thread.ofPlatform().start(() -> run(errors, () -> {
                for (int i = 0; i < 20; i++) {
                    int[] v = {me * i};
                    world.allReduce(v, ReduceOp.SUM);
                    assertThat(v[0]).isEqualTo(28 * i);
                }
            })));
            for (Thread t : threads) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }
            assertThat(errors).isEmpty();
            if (none != null) none.close();
            half.close();
            copy.close();
        });
        System.out.printf("SubCommunicatorTest: split of %d ranks took at most %.2f ms%n", n, slowestSplit.get() / 1e6);
    }

    private static void run(List<Throwable> errors, Runnable r) {
        try {
            r.run();
        } catch (Throwable e) {
            errors.add(e);
        }
    }

    @Test
    void batchCannotDeadlockAndStreamsOrderCollectivesWithPointToPoint() throws Exception {
        int n = 4;
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int me = c.rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
            try (Arena arena = Arena.ofShared()) {
                // every rank lists its send first: as plain blocking calls this ring of 4 MiB messages would deadlock
                MemorySegment out = arena.allocate(4 << 20), in = arena.allocate(4 << 20);
                out.fill((byte) me);
                c.batch().send(out, next, 1).recv(in, prev, 1).run();
                for (long i = 0; i < in.byteSize(); i += 4096) assertThat(in.get(ValueLayout.JAVA_BYTE, i)).isEqualTo((byte) prev);

                try (Stream s = c.newStream()) {
                    MemorySegment v = arena.allocate(ValueLayout.JAVA_FLOAT, 100_000);
                    for (int i = 0; i < 100_000; i++) v.setAtIndex(ValueLayout.JAVA_FLOAT, i, me + 1);
                    MemorySegment g = arena.allocate(ValueLayout.JAVA_INT, n);
                    s.allReduce(v, v, 100_000, DataType.FLOAT32, ReduceOp.SUM);
                    s.broadcast(v, 100_000, DataType.FLOAT32, 2);
                    s.allGather(MemorySegment.ofArray(new int[] {me * 10}), g, 1, DataType.INT32);
                    s.barrier();
                    s.synchronize();
                    for (int i = 0; i < 100_000; i += 97) assertThat(v.getAtIndex(ValueLayout.JAVA_FLOAT, i)).isEqualTo(10f);
                    for (int r = 0; r < n; r++) assertThat(g.getAtIndex(ValueLayout.JAVA_INT, r)).isEqualTo(r * 10);
                }
            }
        });
    }
}
