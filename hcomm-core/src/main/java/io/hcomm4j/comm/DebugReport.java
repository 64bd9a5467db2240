package io.hcomm4j.comm;

import io.hcomm4j.CommConfig;
import io.hcomm4j.MonitorConfig;
import io.hcomm4j.Topology;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.slf4j.LoggerFactory;

/**
 * HCOMM_DEBUG's output (as NCCL_DEBUG's): at init, once per rank, the version (VERSION and INFO), and with INFO the
 * topology, the transport to each peer, the algorithms the tuner chooses at a few sizes and the settings in effect; with
 * INFO, a line per communicator made later. Written to standard error or HCOMM_DEBUG_FILE ({@code %r} rank, {@code %p}
 * pid, {@code %h} host), straight, not through the application's logging: it is asked for by a variable, and must show
 * even where no SLF4J backend is configured.
 */
final class DebugReport {
    private static final long[] SIZES = {8, 64 << 10, 1 << 20, 64 << 20};
    private static final String[] OPS = {"allreduce", "broadcast", "allgather", "reducescatter", "alltoall"};

    private DebugReport() {
    }

    /** The init report of {@code s} (nothing at WARN). */
    static void atInit(Session s) {
        MonitorConfig m = s.config().monitor();
        if (m.debug() == MonitorConfig.Debug.WARN) return;
        CommunicatorImpl world = (CommunicatorImpl) s.world();
        int rank = world.rank();
        List<String> lines = new ArrayList<>();
        lines.add("HComm4J " + version() + " on JDK " + Runtime.version() + ", pid " + ProcessHandle.current().pid() + ", host "
                + host() + ", rank " + rank + " of " + world.size() + ", vector reductions " + (io.hcomm4j.kernel.ReduceKernel.vectorAvailable() ? "on" : "off"));
        if (m.debug() == MonitorConfig.Debug.INFO) {
            Topology t = world.topology();
            lines.add("topology: " + t.hosts() + " host(s); this is host " + t.host() + ", local rank " + t.localRank() + " of "
                    + t.localSize() + "; ranks by host " + hostsText(t));
            lines.add("transports: " + transports(s.config(), t));
            lines.add("shared-memory collectives (zero copy): " + (world.zeroCopyEngine() != null ? "on, every rank on this host"
                    : s.config().zeroCopy() ? "off (not every rank on one host, or one rank)" : "off (HCOMM_ZERO_COPY=0)"));
            for (String op : OPS) {
                StringBuilder b = new StringBuilder("algorithm for ").append(op).append(" over the transport:");
                for (long bytes : SIZES) b.append(' ').append(io.hcomm4j.Units.bytes(bytes)).append(' ').append(s.algorithmFor(op, bytes)).append(',');
                b.setLength(b.length() - 1);
                lines.add(b.toString());
            }
            lines.add("settings: " + s.config());
        }
        write(m, rank, lines);
    }

    /** A communicator made after init (split, dup, a group, shrink, grow): one line at INFO. */
    static void communicator(Session s, CommunicatorImpl c) {
        MonitorConfig m = s.config().monitor();
        if (m.debug() != MonitorConfig.Debug.INFO || c.id() == 0) return;
        int[] world = c.worldRanks();
        write(m, s.world().rank(), List.of("communicator " + Long.toHexString(c.id()) + ": rank " + c.rank() + " of " + c.size()
                + ", world ranks " + (world.length <= 32 ? java.util.Arrays.toString(world) : world.length + " ranks")
                + ", zero copy " + (c.zeroCopyEngine() != null ? "on" : "off")));
    }

    private static String hostsText(Topology t) {
        StringBuilder b = new StringBuilder();
        for (int h = 0; h < Math.min(t.hosts(), 16); h++) b.append(h == 0 ? "" : " ").append(java.util.Arrays.toString(t.ranksOn(h)));
        if (t.hosts() > 16) b.append(" … (").append(t.hosts()).append(" hosts)");
        return b.toString();
    }

    /** The transport each peer gets (connections are made on first use; this is the choice they will make). */
    private static String transports(CommConfig config, Topology t) {
        String remote = config.transport() == CommConfig.Transport.AUTO_UCX ? "ucx" : config.tls().isPresent() ? "tls" : "tcp";
        String local = switch (config.transport()) {
            case TCP -> remote;
            case AUTO, SHM, AUTO_UCX -> "shm";
            case UCX -> "ucx";
        };
        int[] mine = t.ranksOn(t.host());
        int others = t.size() - mine.length;
        return "shm".equals(local) ? local + " to the " + (mine.length - 1) + " other rank(s) of this host, " + remote + " to the "
                + others + " rank(s) of other hosts" : "ucx".equals(local) ? "ucx to every peer (HCOMM_TRANSPORT=ucx, UCX_TLS="
                + System.getenv().getOrDefault("UCX_TLS", "all") + ")" : remote + " to every peer (HCOMM_TRANSPORT=tcp)"
                + (config.channels() > 1 ? ", " + config.channels() + " channels" : "");
    }

    private static void write(MonitorConfig m, int rank, List<String> lines) {
        StringBuilder b = new StringBuilder();
        for (String l : lines) b.append("hcomm4j INFO rank ").append(rank).append(": ").append(l).append('\n');
        byte[] text = b.toString().getBytes(StandardCharsets.UTF_8);
        if (m.debugFile() == null) {
            synchronized (System.err) {
                System.err.write(text, 0, text.length);
                System.err.flush();
            }
            return;
        }
        String name = m.debugFile().replace("%r", String.valueOf(rank)).replace("%p", String.valueOf(ProcessHandle.current().pid()))
                .replace("%h", host());
        try (PrintStream out = new PrintStream(new FileOutputStream(name, true), false, StandardCharsets.UTF_8)) {
            out.write(text);
        } catch (IOException e) {
            LoggerFactory.getLogger(DebugReport.class).warn("rank {}: cannot write HCOMM_DEBUG_FILE {}: {}", rank, name, e.toString());
        }
    }

    private static String version() {
        String v = DebugReport.class.getPackage().getImplementationVersion();
        return v == null ? "(development build)" : v;
    }

    private static String host() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName().toLowerCase(Locale.ROOT);
        } catch (IOException e) {
            return "unknown";
        }
    }
}
