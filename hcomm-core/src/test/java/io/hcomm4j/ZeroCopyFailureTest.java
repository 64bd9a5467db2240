package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.comm.ZeroCopyProbe;
import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.ZeroCopyWorker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Zero-copy collectives that go wrong: ranks calling different collectives (or one with other arguments) on registered
 * buffers all get CollectiveMismatchException naming the op and the odd rank, and the communicator goes on; a rank
 * killed with SIGKILL while the others are in a zero-copy op (or wait for it to enter one) surfaces as
 * PeerFailedException on every survivor, within seconds, never as a hang.
 */
class ZeroCopyFailureTest {
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"op", "count", "type", "redop", "root", "gather", "barrier", "allgather-reducescatter", "unregistered"})
    void everyRankGetsTheMismatch(String what) throws Exception {
        int n = 4;
        int odd = 2;
        Map<Integer, String> messages = new ConcurrentHashMap<>();
        Ranks.runThreads(n, Duration.ofSeconds(90), b -> b.timeout(Duration.ofSeconds(30)), h -> {
            Communicator c = h.world();
            int me = c.rank();
            boolean differ = me == odd;
            int count = 2000;
            try (RegisteredBuffer a = c.memory().allocate(DataType.FLOAT32, count * n); RegisteredBuffer b = c.memory().allocate(DataType.FLOAT32, count * n)) {
                MemorySegment x = a.segment();
                MemorySegment y = b.segment();
                long t0 = System.nanoTime();
                try {
                    switch (what) {
                        case "op" -> {
                            if (differ) c.broadcast(x, count, DataType.FLOAT32, 0);
                            else c.allReduce(x, y, count, DataType.FLOAT32, ReduceOp.SUM);
                        }
                        case "count" -> c.allReduce(x, y, differ ? count - 1 : count, DataType.FLOAT32, ReduceOp.SUM);
                        case "type" -> c.allReduce(x, y, count, differ ? DataType.INT32 : DataType.FLOAT32, ReduceOp.SUM);
                        case "redop" -> c.allReduce(x, y, count, DataType.FLOAT32, differ ? ReduceOp.MAX : ReduceOp.SUM);
                        case "root" -> c.broadcast(x, count, DataType.FLOAT32, differ ? 1 : 0);
                        case "gather" -> {
                            // a collective that never runs in shared memory against one that does
                            if (differ) c.gather(x, y, count, DataType.FLOAT32, 0);
                            else c.allReduce(x, y, count, DataType.FLOAT32, ReduceOp.SUM);
                        }
                        case "barrier" -> {
                            if (differ) c.barrier();
                            else c.allGather(x, y, count, DataType.FLOAT32);
                        }
                        case "allgather-reducescatter" -> {
                            if (differ) c.reduceScatter(x, y, count, DataType.FLOAT32, ReduceOp.SUM);
                            else c.allGather(x, y, count, DataType.FLOAT32);
                        }
                        default -> {
                            // the odd rank's buffers are not registered: the others must not go ahead in shared memory
                            MemorySegment heap = MemorySegment.ofArray(new float[count + 1]);
                            c.allReduce(differ ? heap : x, differ ? heap : y, differ ? count + 1 : count, DataType.FLOAT32, ReduceOp.SUM);
                        }
                    }
                    messages.put(me, "no exception");
                } catch (CollectiveMismatchException e) {
                    long ms = (System.nanoTime() - t0) / 1_000_000;
                    messages.put(me, e.getMessage() + " [" + ms + " ms]");
                    assertThat(ms).as("detected long before the 30 s timeout").isLessThan(10_000);
                }
                // the communicator goes on: a correct zero-copy all-reduce afterwards
                long before = ZeroCopyProbe.zeroCopyOps(c);
                for (int i = 0; i < count; i++) x.setAtIndex(ValueLayout.JAVA_FLOAT, i, me + 1);
                c.allReduce(x, y, count, DataType.FLOAT32, ReduceOp.SUM);
                for (int i = 0; i < count; i++) assertThat(y.getAtIndex(ValueLayout.JAVA_FLOAT, i)).isEqualTo(n * (n + 1) / 2f);
                assertThat(ZeroCopyProbe.zeroCopyOps(c)).isEqualTo(before + 1);
            }
        });
        System.out.println("ZeroCopyFailureTest mismatch " + what + ": " + messages);
        assertThat(messages).hasSize(n);
        for (var e : messages.entrySet()) {
            assertThat(e.getValue()).as("rank %d", e.getKey()).doesNotContain("no exception").contains("rank " + odd);
        }
    }

    /**
     * SIGKILL of a rank at some moment of a loop of zero-copy all-reduces ({@code kill}: during an op, in whichever
     * phase) or while the others wait for it to enter one ({@code absent}): every survivor gets PeerFailedException
     * naming it, within seconds of the kill.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"kill", "absent"})
    void killedRankSurfacesAsPeerFailed(String mode) throws Exception {
        int n = 3;
        Map<String, String> env = Map.of("HCOMM_TRANSPORT", "shm", "HCOMM_TIMEOUT", "120s");
        String[] args = mode.equals("kill") ? new String[] {"kill", String.valueOf(16 << 20)} : new String[] {"absent"};
        try (Ranks.Job job = Ranks.start(n, ZeroCopyWorker.class, env, args)) {
            String ready = mode.equals("kill") ? "LOOPING" : "WAITING";
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while (!allSay(job, n, ready, mode.equals("kill") ? n : n - 1)) {
                if (System.nanoTime() > deadline) throw new AssertionError("job did not get ready:\n" + job.outputs());
                for (Process p : job.processes) if (!p.isAlive()) throw new AssertionError("a rank exited early:\n" + job.outputs());
                Thread.sleep(20);
            }
            Thread.sleep(mode.equals("kill") ? 700 : 300); // some ops go by (or the survivors settle into their wait)
            long killedAt = System.currentTimeMillis();
            job.processes.get(n - 1).destroyForcibly(); // SIGKILL
            for (int r = 0; r < n - 1; r++) {
                Process p = job.processes.get(r);
                assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("rank %d finished; output:\n%s", r, job.outputs()).isTrue();
                String out = Files.readString(job.logs.get(r));
                assertThat(p.exitValue()).as("rank %d exit; output:\n%s", r, job.outputs()).isZero();
                Matcher m = Pattern.compile("DETECTED (\\d+) ranks=\\[(\\d+)]").matcher(out);
                assertThat(m.find()).as("rank %d output: %s", r, out).isTrue();
                long ms = Long.parseLong(m.group(1)) - killedAt;
                System.out.println("ZeroCopyFailureTest " + mode + ": rank " + r + " detected the kill after " + ms + " ms");
                assertThat(ms).as("ms from the kill to PeerFailedException").isLessThan(10_000);
                assertThat(Integer.parseInt(m.group(2))).isEqualTo(n - 1);
                assertThat(out).contains("CLOSED");
            }
        }
    }

    private static boolean allSay(Ranks.Job job, int n, String word, int ranks) throws Exception {
        for (int r = 0; r < ranks; r++) if (!Files.readString(job.logs.get(r)).contains(word)) return false;
        return true;
    }
}
