package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@code HCOMM_TCP_CONGESTION}: every TCP link of a job, primary links and rails, uses the congestion control named
 * (here {@code reno}, which every Linux kernel has), and carries data correctly with it; a name the kernel does not
 * have fails init with a message naming the setting and the rank; a malformed one fails the config.
 */
class TcpCongestionTest {
    private static final Path AVAILABLE = Path.of("/proc/sys/net/ipv4/tcp_available_congestion_control");

    @Test
    void everyLinkUsesTheChosenAlgorithm() throws Exception {
        Assumptions.assumeTrue(Files.isReadable(AVAILABLE), "Linux congestion control: " + AVAILABLE + " not readable");
        Map<Integer, List<Hcomm.Link>> links = new ConcurrentHashMap<>();
        int count = 3 << 20; // 12 MiB: striped over both links
        Ranks.runThreads(2, Duration.ofMinutes(2),
                b -> b.transport(CommConfig.Transport.TCP).channels(2).tcpCongestion("reno"), h -> {
                    Communicator c = h.world();
                    int me = c.rank();
                    // the rail opens once the primary link is up, in the background: the allreduce below is striped over both
                    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> h.linksTo(1 - me).size() == 2);
                    int[] data = new int[count];
                    for (int i = 0; i < count; i++) data[i] = i * 31 + me;
                    MemorySegment seg = MemorySegment.ofArray(data);
                    c.allReduce(seg, seg, count, DataType.INT32, ReduceOp.SUM);
                    for (int i = 0; i < count; i++) {
                        int want = 2 * i * 31 + 1;
                        if (seg.getAtIndex(ValueLayout.JAVA_INT, i) != want) {
                            throw new AssertionError("rank " + me + ", element " + i + ": " + data[i] + ", want " + want);
                        }
                    }
                    assertThat(h.config().tcpCongestion()).contains("reno");
                    links.put(me, h.linksTo(1 - me));
                    c.barrier(); // neither rank closes its links before the other looked at them
                });
        for (int r = 0; r < 2; r++) {
            assertThat(links.get(r)).as("rank %d's links", r).hasSize(2);
            for (Hcomm.Link l : links.get(r)) assertThat(l.congestion()).as("link %d of rank %d", l.index(), r).isEqualTo("reno");
        }
    }

    @Test
    void anAlgorithmTheKernelLacksFailsInit() {
        Assumptions.assumeTrue(Files.isReadable(AVAILABLE), "Linux congestion control: " + AVAILABLE + " not readable");
        CommConfig config = Ranks.threadConfig(0, 1, Ranks.freePort()).transport(CommConfig.Transport.TCP)
                .tcpCongestion("no_such_cc").build();
        assertThatThrownBy(() -> Hcomm.init(config).close())
                .hasStackTraceContaining("rank 0: tcpCongestion (HCOMM_TCP_CONGESTION) 'no_such_cc' is not a congestion "
                        + "control this kernel has");
    }

    @Test
    void aMalformedNameFailsTheConfig() {
        for (String bad : List.of("Cubic", "cu bic", "a_name_of_16_chr", "bbr;")) {
            assertThatThrownBy(() -> CommConfig.builder().tcpCongestion(bad).build())
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("tcpCongestion (HCOMM_TCP_CONGESTION)").hasMessageContaining("'" + bad + "'");
        }
        assertThat(CommConfig.builder().tcpCongestion("").build().tcpCongestion()).isEmpty();
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_TCP_CONGESTION", "cubic"), k -> null).build().tcpCongestion())
                .contains("cubic");
    }
}
