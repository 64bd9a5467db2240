package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.comm.ZeroCopyProbe;
import io.hcomm4j.memory.Buffer;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ZeroCopySmokeTest {
    @Test
    void twoRanks() throws Exception {
        Ranks.runThreads(2, Duration.ofSeconds(60), h -> {
            Communicator c = h.world();
            int n = 1000;
            try (Buffer s = c.memory().allocate(DataType.FLOAT32, n); Buffer r = c.memory().allocate(DataType.FLOAT32, n)) {
                MemorySegment send = s.segment();
                for (int i = 0; i < n; i++) send.setAtIndex(ValueLayout.JAVA_FLOAT, i, i + c.rank());
                for (int it = 0; it < 100; it++) c.allReduce(send, r.segment(), n, DataType.FLOAT32, ReduceOp.SUM);
                for (int i = 0; i < n; i++) assertThat(r.segment().getAtIndex(ValueLayout.JAVA_FLOAT, i)).isEqualTo(2f * i + 1);
                System.out.println("rank " + c.rank() + " zc ops " + ZeroCopyProbe.zeroCopyOps(c) + " fallback " + ZeroCopyProbe.fallbackOps(c));
                long t0 = System.nanoTime();
                for (int it = 0; it < 20000; it++) c.allReduce(send, r.segment(), n, DataType.FLOAT32, ReduceOp.SUM);
                System.out.println("rank " + c.rank() + " us/op " + (System.nanoTime() - t0) / 20000 / 1000.0);
            }
        });
    }
}
