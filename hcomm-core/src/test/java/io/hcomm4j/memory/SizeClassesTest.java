package io.hcomm4j.memory;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SizeClassesTest {
    private static long classOf(long bytes) {
        return SizeClasses.size(SizeClasses.index(bytes));
    }

    @Test
    void smallRequestsTakeAPageOrThePowerOfTwoAbove() {
        assertThat(classOf(1)).isEqualTo(4096);
        assertThat(classOf(4095)).isEqualTo(4096);
        assertThat(classOf(4096)).isEqualTo(4096);
        assertThat(classOf(4097)).isEqualTo(8192);
        assertThat(classOf(8193)).isEqualTo(16384);
        assertThat(classOf(100_000)).isEqualTo(131072);
        assertThat(classOf(256 * 1024)).isEqualTo(256 * 1024);
        assertThat(SizeClasses.small(SizeClasses.index(256 * 1024))).isTrue();
        assertThat(SizeClasses.small(SizeClasses.index(256 * 1024 + 1))).isFalse();
    }

    @Test
    void largeRequestsTakeQuarterSteps() {
        assertThat(classOf(256 * 1024 + 1)).isEqualTo(320 * 1024);
        assertThat(classOf(320 * 1024)).isEqualTo(320 * 1024);
        assertThat(classOf(320 * 1024 + 1)).isEqualTo(384 * 1024);
        assertThat(classOf(512 * 1024)).isEqualTo(512 * 1024);
        assertThat(classOf(512 * 1024 + 1)).isEqualTo(640 * 1024);
        assertThat(classOf(1L << 20)).isEqualTo(1L << 20);
        assertThat(classOf((1L << 30) + 1)).isEqualTo(5L << 28);
        assertThat(classOf(7L << 28)).isEqualTo(7L << 28);
        assertThat(classOf(SizeClasses.MAX)).isEqualTo(SizeClasses.MAX);
        assertThat(SizeClasses.index(SizeClasses.MAX)).isEqualTo(SizeClasses.COUNT - 1);
    }

    @Test
    void everyClassIsPageAlignedAscendingAndHoldsExactlyItsRequests() {
        long previous = 0;
        for (int i = 0; i < SizeClasses.COUNT; i++) {
            long size = SizeClasses.size(i);
            assertThat(size % SizeClasses.PAGE).as("class %d", i).isZero();
            assertThat(size).as("class %d", i).isGreaterThan(previous);
            assertThat(SizeClasses.index(size)).as("class %d", i).isEqualTo(i);
            assertThat(SizeClasses.index(previous + 1)).as("class %d", i).isEqualTo(i);
            if (i >= SizeClasses.SMALL_CLASSES) assertThat(size - previous).isLessThanOrEqualTo(size / 4); // waste <= 25 %
            previous = size;
        }
    }
}
