package io.hcomm4j.comm;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The latency histogram's bucket of a duration: 0 up to 1 µs, then one per power of two of microseconds, capped. */
class OpMetricsBucketTest {
    private static int expected(long nanos) {
        long micros = nanos / 1000;
        if (micros <= 1) return 0;
        return Math.min(OpMetrics.BUCKETS - 1, 63 - Long.numberOfLeadingZeros(micros));
    }

    @Test
    void bucketsArePowersOfTwoOfMicroseconds() {
        assertThat(OpMetrics.bucket(0)).isZero();
        assertThat(OpMetrics.bucket(1_999)).isZero();
        assertThat(OpMetrics.bucket(2_000)).isEqualTo(1);
        assertThat(OpMetrics.bucket(3_999)).isEqualTo(1);
        assertThat(OpMetrics.bucket(4_000)).isEqualTo(2);
        assertThat(OpMetrics.bucket(1_024_000)).isEqualTo(10);
        assertThat(OpMetrics.bucket(Long.MAX_VALUE)).isEqualTo(OpMetrics.BUCKETS - 1);
        assertThat(OpMetrics.bucket(-5_000)).isZero();
        SplittableRandom rnd = new SplittableRandom(13);
        for (int i = 0; i < 100_000; i++) {
            long nanos = rnd.nextLong(0, 1L << rnd.nextInt(1, 63));
            assertThat(OpMetrics.bucket(nanos)).as("%d ns", nanos).isEqualTo(expected(nanos));
        }
        for (int b = 1; b < 62; b++) {
            long edge = (1L << b) * 1000;
            if (edge < 0) break;
            assertThat(OpMetrics.bucket(edge - 1)).isEqualTo(expected(edge - 1));
            assertThat(OpMetrics.bucket(edge)).isEqualTo(expected(edge));
        }
    }
}
