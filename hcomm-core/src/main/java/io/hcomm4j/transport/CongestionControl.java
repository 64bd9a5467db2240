package io.hcomm4j.transport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The TCP congestion control algorithm of one transport's TCP links ({@code HCOMM_TCP_CONGESTION}): the system's
 * default unless one is named, then set on every socket the transport connects or accepts, its primary links and rails.
 *
 * <p>Why a job may want its own: the system default of these machines is BBR, and between two network namespaces joined
 * by token-bucket (tbf) veth links BBR measures its bottleneck from bursts the bucket lets through at memory speed and its
 * round trip from the veth's microseconds, then paces and caps its window below what the link carries while both
 * directions are busy; CUBIC fills the same links (docs/performance.md, seventh sitting). A cluster's real NICs may differ:
 * the choice is the user's, measured.
 *
 * <p>A name the kernel does not have fails at once ({@link #choose}); a socket the kernel refuses it on (EPERM: not in
 * {@code net.ipv4.tcp_allowed_congestion_control} for a process without CAP_NET_ADMIN) keeps the system's, and the
 * first such refusal is logged.
 */
final class CongestionControl {
    private static final Path AVAILABLE = Path.of("/proc/sys/net/ipv4/tcp_available_congestion_control");

    private final int rank;
    /** The algorithm asked for; null: the system's. */
    private volatile String name;
    private final AtomicBoolean refusalLogged = new AtomicBoolean();

    CongestionControl(int rank) {
        this.rank = rank;
    }

    /**
     * Every TCP link of the transport uses {@code name} from now on (null or empty: the system's).
     *
     * @throws IllegalArgumentException if the kernel lists its algorithms and {@code name} is not among them
     */
    void choose(String name) {
        if (name == null || name.isEmpty()) {
            this.name = null;
            return;
        }
        try {
            String[] known = Files.readString(AVAILABLE).trim().split("\\s+");
            if (!Arrays.asList(known).contains(name)) {
                throw new IllegalArgumentException("rank " + rank + ": tcpCongestion (HCOMM_TCP_CONGESTION) '" + name
                        + "' is not a congestion control this kernel has (" + String.join(", ", known) + ")");
            }
        } catch (IOException e) {
            // not Linux, or /proc not mounted: each socket's setsockopt says whether it can
        }
        this.name = name;
    }

    /** The algorithm asked for, or null for the system's. */
    String chosen() {
        return name;
    }

    /**
     * Sets the chosen algorithm on socket {@code fd} (nothing if none is chosen) of the connection {@code route}.
     *
     * @return the algorithm the socket uses ("" if that cannot be read)
     */
    String applyTo(int fd, String route) {
        String want = name;
        String refused = want != null && fd >= 0 ? TcpOptions.setCongestion(fd, want) : null;
        String used = TcpOptions.congestion(fd);
        if (refused != null && refusalLogged.compareAndSet(false, true)) {
            PeerTransport.LOG.warn("rank {}: HCOMM_TCP_CONGESTION={} not set on {}: {}; it keeps {} (logged once)",
                    rank, want, route, refused, used);
        }
        return used;
    }
}
