package io.hcomm4j.comm;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.BitSet;
import org.junit.jupiter.api.Test;

class CpuSetTest {
    @Test
    void parsesKernelLists() {
        BitSet s = CpuSet.parse("0-3,8,10-11");
        assertThat(s.stream().toArray()).containsExactly(0, 1, 2, 3, 8, 10, 11);
        assertThat(CpuSet.parse("5").stream().toArray()).containsExactly(5);
        assertThat(CpuSet.parse("")).isNull();
        assertThat(CpuSet.parse(null)).isNull();
        assertThat(CpuSet.parse("3-1")).isNull();
        assertThat(CpuSet.parse("a-b")).isNull();
        assertThat(CpuSet.parse("0,,1")).isNull();
    }

    @Test
    void ownListIsThisProcessesCpus() {
        String own = CpuSet.own();
        // Linux always has the line; its count is what the JVM reports for this process (no cgroup quota here)
        assertThat(own).isNotNull();
        assertThat(CpuSet.parse(own).cardinality()).isGreaterThanOrEqualTo(Runtime.getRuntime().availableProcessors());
    }

    @Test
    void ranksBoundToCpusOfTheirOwnAreNotOversubscribed() {
        // two ranks, each bound to one CPU of a 2-CPU host: each sees 1 available processor, yet they have one CPU each
        assertThat(CpuSet.oversubscribed(2, Arrays.asList("0", "1"), 1)).isFalse();
        // both bound to the same CPU
        assertThat(CpuSet.oversubscribed(2, Arrays.asList("1", "1"), 1)).isTrue();
        // four ranks over two CPUs, in pairs
        assertThat(CpuSet.oversubscribed(4, Arrays.asList("0", "0", "1", "1"), 1)).isTrue();
        assertThat(CpuSet.oversubscribed(4, Arrays.asList("0-3", "0-3", "0-3", "0-3"), 4)).isFalse();
        // a rank that published no list (older or replacement): this process's count decides, as before
        assertThat(CpuSet.oversubscribed(2, Arrays.asList("0", null), 1)).isTrue();
        assertThat(CpuSet.oversubscribed(2, Arrays.asList("0-1", null), 2)).isFalse();
    }
}
