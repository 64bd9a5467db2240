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
 * {@link TcpOptions} over real sockets: it finds each channel's own descriptor among several connections (both ends of
 * each, which share addresses crosswise), and the bound it sets is the one the kernel reports for that socket alone.
 */
class TcpOptionsTest {
    @BeforeAll
    static void linuxOnly() {
        Assumptions.assumeTrue(TcpOptions.AVAILABLE, "TCP_NOTSENT_LOWAT is set through Linux's setsockopt; not available here");
    }

    @Test
    void findsEachChannelsDescriptorAndBoundsThatSocketOnly() throws Exception {
        List<SocketChannel> ends = new ArrayList<>();
        try {
            connect(3, ends);
            int[] fds = new int[ends.size()];
            Set<Integer> distinct = new HashSet<>();
            for (int i = 0; i < fds.length; i++) {
                fds[i] = TcpOptions.descriptor(ends.get(i));
                assertThat(fds[i]).as("descriptor of end %d", i).isGreaterThanOrEqualTo(0);
                distinct.add(fds[i]);
            }
            assertThat(distinct).as("one descriptor per socket").hasSize(fds.length);

            long[] before = new long[fds.length];
            for (int i = 0; i < fds.length; i++) before[i] = TcpOptions.unsentLimit(fds[i]);
            int bound = 300_000 + 4096 * 3;
            assertThat(TcpOptions.setUnsentLimit(fds[3], bound)).isTrue();
            for (int i = 0; i < fds.length; i++) {
                long now = TcpOptions.unsentLimit(fds[i]);
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
                assertThat(TcpOptions.descriptor(c)).isGreaterThanOrEqualTo(0);
                c.close();
                assertThat(TcpOptions.descriptor(c)).isEqualTo(-1);
                assertThat(TcpOptions.setUnsentLimit(-1, 1 << 20)).isFalse();
                assertThat(accepted.isOpen()).isTrue();
            }
        }
    }

    /** The congestion control set on one socket is that socket's alone; a name the kernel lacks is refused with errno's reason. */
    @Test
    void setsTheCongestionControlOfThatSocketOnly() throws Exception {
        Assumptions.assumeTrue(java.nio.file.Files.isReadable(java.nio.file.Path.of("/proc/sys/net/ipv4/tcp_congestion_control")),
                "no Linux congestion control settings here");
        String system = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/net/ipv4/tcp_congestion_control")).trim();
        String other = system.equals("reno") ? "bbr" : "reno";
        List<SocketChannel> ends = new ArrayList<>();
        try {
            connect(2, ends);
            int[] fds = new int[ends.size()];
            for (int i = 0; i < fds.length; i++) fds[i] = TcpOptions.descriptor(ends.get(i));
            for (int fd : fds) assertThat(TcpOptions.congestion(fd)).as("before, fd %d", fd).isEqualTo(system);
            assertThat(TcpOptions.setCongestion(fds[2], other)).as("refusal").isNull();
            for (int i = 0; i < fds.length; i++) {
                assertThat(TcpOptions.congestion(fds[i])).as("end %d", i).isEqualTo(i == 2 ? other : system);
            }
            assertThat(TcpOptions.setCongestion(fds[1], "no_such_cc")).contains("ENOENT").contains("no_such_cc");
            assertThat(TcpOptions.congestion(fds[1])).isEqualTo(system);
            assertThat(TcpOptions.setCongestion(-1, "reno")).contains("descriptor");
            assertThat(TcpOptions.congestion(-1)).isEmpty();
        } finally {
            for (SocketChannel c : ends) c.close();
        }
    }

    /** {@code pairs} connections over loopback, both ends of each added to {@code ends}. */
    private static void connect(int pairs, List<SocketChannel> ends) throws java.io.IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            for (int i = 0; i < pairs; i++) {
                ends.add(SocketChannel.open(server.getLocalAddress()));
                ends.add(server.accept());
            }
        }
    }
}
