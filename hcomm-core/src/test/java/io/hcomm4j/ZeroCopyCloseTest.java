package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.comm.ZeroCopyProbe;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A rank leaves a small (one-step) zero-copy all-reduce without waiting for the others, who read its input from its
 * registered slot. Closing right after it, the communicator or the whole session, must not take that slot away (its
 * pool file unlinked, or the buffer reused) from a peer that has not read it yet: the peer still gets the right sum.
 * The peer is held back between arriving and reading by a test hook, so the race the test is about happens every time.
 */
class ZeroCopyCloseTest {
    private static final int COUNT = 256; // 1 KiB of float32: one step on any host
    private static final long READ_DELAY_MS = 400;

    @org.junit.jupiter.api.Test
    void closingTheSessionRightAfterLetsAPeerStillReadItsInput() throws Exception {
        Ranks.runThreads(2, Duration.ofSeconds(90), h -> {
            Communicator c = h.world();
            if (c.rank() == 1) ZeroCopyProbe.oneStepReadDelay(c, READ_DELAY_MS);
            allReduceAndCheck(c);
            // rank 0 returns now: its session closes (pool files unlinked) while rank 1 is still to read its slot
        });
    }

    @org.junit.jupiter.api.Test
    void closingACommunicatorRightAfterDoesNotHandItsInputToTheNextAllocation() throws Exception {
        Map<Integer, Throwable> failures = new ConcurrentHashMap<>();
        Ranks.runThreads(2, Duration.ofSeconds(90), h -> {
            Communicator world = h.world();
            List<RegisteredBuffer> taken = new ArrayList<>();
            try (Communicator d = world.dup()) {
                if (d.rank() == 1) ZeroCopyProbe.oneStepReadDelay(d, READ_DELAY_MS);
                allReduceAndCheck(d);
            } catch (RuntimeException | AssertionError e) {
                failures.put(world.rank(), e);
            }
            if (world.rank() == 0) {
                // the slots' memory went back to the pool: take every buffer of that size and scribble over it
                for (int i = 0; i < 4; i++) {
                    RegisteredBuffer b = world.memory().allocate(32 * 1024);
                    b.segment().fill((byte) 0x7f); // NaN in every float
                    taken.add(b);
                }
            }
            world.barrier();
            for (RegisteredBuffer b : taken) b.close();
        });
        assertThat(failures).as("ranks whose all-reduce failed").isEmpty();
    }

    /** A one-step all-reduce of {@link #COUNT} floats, every element of the sum checked; it must have run in shared memory. */
    private static void allReduceAndCheck(Communicator c) {
        int me = c.rank();
        int n = c.size();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment in = arena.allocate(COUNT * 4L, 64);
            MemorySegment out = arena.allocate(COUNT * 4L, 64);
            for (int i = 0; i < COUNT; i++) in.setAtIndex(ValueLayout.JAVA_FLOAT, i, (me + 1) * 1000 + i);
            long before = ZeroCopyProbe.zeroCopyOps(c);
            c.allReduce(in, out, COUNT, DataType.FLOAT32, ReduceOp.SUM);
            for (int i = 0; i < COUNT; i++) {
                float want = 0;
                for (int r = 0; r < n; r++) want += (r + 1) * 1000 + i;
                assertThat(out.getAtIndex(ValueLayout.JAVA_FLOAT, i)).as("rank %d element %d", me, i).isEqualTo(want);
            }
            assertThat(ZeroCopyProbe.zeroCopyOps(c)).as("rank %d: in shared memory", me).isEqualTo(before + 1);
        }
    }
}
