package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link OpStats} is a value: it prints its numbers (not an array's address), compares by them, and shares no array. */
class OpStatsTest {
    private static long[] histogram() {
        long[] h = new long[32];
        h[0] = 2;
        h[4] = 3;
        h[5] = 9;
        h[31] = 1;
        return h;
    }

    @Test
    void printsItsNumbers() {
        OpStats s = new OpStats("allReduce", 15, 1, 1_572_864, 513_000, 80_100, histogram());
        assertThat(s.toString()).isEqualTo("allReduce: 15 calls, 1 failed, 1572864 bytes, mean 34.2 us, max 80.1 us, "
                + "[0, 2) us: 2, [16, 32) us: 3, [32, 64) us: 9, [2147483648, ...) us: 1");
        assertThat(new OpStats("send", 4, 0, 4096, 0, 0, new long[0]).toString()).isEqualTo("send: 4 calls, 0 failed, 4096 bytes");
    }

    @Test
    void comparesByValueAndSharesNoArray() {
        long[] h = histogram();
        OpStats a = new OpStats("allReduce", 15, 1, 1_572_864, 513_000, 80_100, h);
        OpStats b = new OpStats("allReduce", 15, 1, 1_572_864, 513_000, 80_100, histogram());
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        h[4] = 100;
        a.latencyHistogram()[5] = 100;
        assertThat(a).isEqualTo(b);
        assertThat(a.latencyHistogram()[4]).isEqualTo(3);
        assertThat(a).isNotEqualTo(new OpStats("allReduce", 15, 1, 1_572_864, 513_000, 80_100, h));
    }
}
