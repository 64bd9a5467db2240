package io.hcomm4j.transport;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link UnsentLimit} over real sockets: it finds each channel's own descriptor among several connections (both ends of
 * each, which share addresses crosswise), and the bound it sets is the one the kernel reports for that socket alone.
 */
class UnsentLimitTest {
    @BeforeAll
    static void linuxOnly() {
        Assumptions.assumeTrue(UnsentLimit.AVAILABLE, "TCP_NOTSENT_LOWAT is set through Linux's setsockopt; not available here");
    }

    @Test
    void findsEachChannelsDescriptorAndBoundsThatSocketOnly() throws Exception {
        List<SocketChannel> ends = new ArrayList<>();
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            for (int i = 0; i < 3; i++) {
                ends.add(SocketChannel.open(server.getLocalAddress()));
                ends.add(server.accept());
            }
            int[] fds = new int[ends.size()];
            Set<Integer> distinct = new HashSet<>();
            for (int i = 0; i < fds.length; i++) {
                fds[i] = UnsentLimit.descriptor(ends.get(i));
                assertThat(fds[i]).as("descriptor of end %d", i).isGreaterThanOrEqualTo(0);
                distinct.add(fds[i]);
            }
            assertThat(distinct).as("one descriptor per socket").hasSize(fds.length);

            long[] before = new long[fds.length];
            for (int i = 0; i < fds.length; i++) before[i] = UnsentLimit.get(fds[i]);
            int bound = 300_000 + 4096 * 3;
            assertThat(UnsentLimit.set(fds[3], bound)).isTrue();
            for (int i = 0; i < fds.length; i++) {
                long now = UnsentLimit.get(fds[i]);
                if (i == 3) assertThat(now).as("the socket whose bound was set").isEqualTo(bound);
                else assertThat(now).as("end %d, not touched", i).isEqualTo(before[i]).isNotEqualTo(bound);
            }
        } finally {
            for (SocketChannel c : ends) c.close();
        }
    }

    @Test
    void aClosedChannelHasNoDescriptor() throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            SocketChannel c = SocketChannel.open(server.getLocalAddress());
            try (SocketChannel accepted = server.accept()) {
                assertThat(UnsentLimit.descriptor(c)).isGreaterThanOrEqualTo(0);
                c.close();
                assertThat(UnsentLimit.descriptor(c)).isEqualTo(-1);
                assertThat(UnsentLimit.set(-1, 1 << 20)).isFalse();
                assertThat(accepted.isOpen()).isTrue();
            }
        }
    }
}
