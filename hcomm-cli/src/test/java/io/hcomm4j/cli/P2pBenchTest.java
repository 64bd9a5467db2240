package io.hcomm4j.cli;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** The pure parts of the measurements: data pattern, check, median. */
class P2pBenchTest {
    @Test
    void patternDependsOnPositionAndSender() {
        int same = 0;
        for (long i = 0; i < 4096; i++) {
            if (P2pBench.pattern(i, 0) == P2pBench.pattern(i + 4096, 0)) same++;
        }
        assertThat(same).as("a block moved by 4 KiB must not look right").isLessThan(64);
        int sameSender = 0;
        for (long i = 0; i < 4096; i++) {
            if (P2pBench.pattern(i, 1) == P2pBench.pattern(i, 2)) sameSender++;
        }
        assertThat(sameSender).isLessThan(64);
    }

    @Test
    void countWrongCountsDifferingAndMissingBytes() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment expected = arena.allocate(1000);
            MemorySegment got = arena.allocate(1000);
            P2pBench.fill(expected, 3);
            got.copyFrom(expected);
            assertThat(P2pBench.countWrong(got, expected, 1000)).isZero();

            got.set(JAVA_BYTE, 10, (byte) (got.get(JAVA_BYTE, 10) + 1));
            got.set(JAVA_BYTE, 999, (byte) (got.get(JAVA_BYTE, 999) + 1));
            assertThat(P2pBench.countWrong(got, expected, 1000)).isEqualTo(2);
            // a message 100 bytes short: those 100 never arrived (999 among them)
            assertThat(P2pBench.countWrong(got, expected, 900)).isEqualTo(101);
        }
    }

    @Test
    void medianOfOddAndEvenCounts() {
        assertThat(P2pBench.median(new long[] {5, 1, 3})).isEqualTo(3.0);
        assertThat(P2pBench.median(new long[] {4, 1, 3, 2})).isEqualTo(2.5);
        assertThat(P2pBench.median(new long[0])).isZero();
    }

    @Test
    void humanSizes() {
        assertThat(P2pBench.human(8)).isEqualTo("8 B");
        assertThat(P2pBench.human(4096)).isEqualTo("4 KiB");
        assertThat(P2pBench.human(64L << 20)).isEqualTo("64 MiB");
        assertThat(P2pBench.human(1L << 30)).isEqualTo("1 GiB");
        assertThat(P2pBench.human(1000)).isEqualTo("1000 B");
    }

    @Test
    void algbwIsBytesPerTime() {
        // 4 MiB in 2000 us = 2.097 GB/s
        assertThat(new P2pBench.Result(4 << 20, 10, 2000, 0).algbwGBs()).isCloseTo(2.097152, org.assertj.core.data.Offset.offset(1e-6));
    }
}
