package io.hcomm4j.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Slurm's host list syntax, as {@code scontrol show hostnames} expands it. */
class SlurmHostlistTest {
    @Test
    void expandsRangesAndListsInOrderKeepingTheWidth() {
        assertThat(SlurmHostlist.expand("node[01-04,07],gpu5"))
                .containsExactly("node01", "node02", "node03", "node04", "node07", "gpu5");
        assertThat(SlurmHostlist.first("node[01-04,07],gpu5")).isEqualTo("node01");
        assertThat(SlurmHostlist.expand("n[8-10]")).containsExactly("n8", "n9", "n10");
        assertThat(SlurmHostlist.expand("n[08-10]")).containsExactly("n08", "n09", "n10");
        assertThat(SlurmHostlist.expand("localhost")).containsExactly("localhost");
    }

    @Test
    void suffixesAndSeveralGroupsGiveEveryCombination() {
        assertThat(SlurmHostlist.expand("rack[1-2]-n[1-2].ib,login")).containsExactly(
                "rack1-n1.ib", "rack1-n2.ib", "rack2-n1.ib", "rack2-n2.ib", "login");
        assertThat(SlurmHostlist.first("gpu[3,1-2]-[07-08]")).isEqualTo("gpu3-07");
        assertThat(SlurmHostlist.expand(" a[1-2] , b ")).containsExactly("a1", "a2", "b");
    }

    @Test
    void malformedListsAreRefusedNamingThePart() {
        assertThatThrownBy(() -> SlurmHostlist.expand("node[01-04")).hasMessageContaining("'[' without ']'");
        assertThatThrownBy(() -> SlurmHostlist.expand("node01-04]")).hasMessageContaining("']' without '['");
        assertThatThrownBy(() -> SlurmHostlist.expand("node[4-1]")).hasMessageContaining("'4-1'").hasMessageContaining("backwards");
        assertThatThrownBy(() -> SlurmHostlist.expand("node[a-b]")).hasMessageContaining("'a-b'");
        assertThatThrownBy(() -> SlurmHostlist.expand("node[]")).hasMessageContaining("empty brackets");
        assertThatThrownBy(() -> SlurmHostlist.expand("a,,b")).hasMessageContaining("empty host name");
        assertThatThrownBy(() -> SlurmHostlist.first("n[[1]]")).hasMessageContaining("nested");
        assertThatThrownBy(() -> SlurmHostlist.expand("n[0-9999999]")).hasMessageContaining("too long");
        assertThatThrownBy(() -> SlurmHostlist.expand("a[0-2047]b[0-1023]")).hasMessageContaining("more than");
    }
}
