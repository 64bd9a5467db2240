package io.hcomm4j.comm;

import io.hcomm4j.CommConfig;
import io.hcomm4j.bootstrap.Bootstrap;
import io.hcomm4j.transport.PeerTransport;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Several links per peer at init: the further interfaces of {@code HCOMM_SOCKET_IFNAME=a,b} and {@code HCOMM_CHANNELS}
 * given to the transport, and the seventh field of a rank's address record in the store: where it listens on its
 * further interfaces, {@code ip#port,ip#port} (or {@code -}).
 */
final class RailAddresses {
    private RailAddresses() {
    }

    /** Gives the transport its further interfaces and channels, if the config asks for more than one link per peer. */
    static void enable(PeerTransport t, CommConfig config) {
        List<InetAddress> further = Bootstrap.furtherInterfaceAddresses(config);
        if (!further.isEmpty() || config.channels() > 1) t.enableRails(further, config.channels());
    }

    /** This rank's field. */
    static String field(PeerTransport t) {
        List<InetSocketAddress> rails = t.railAddresses();
        if (rails.isEmpty()) return "-";
        StringBuilder b = new StringBuilder();
        for (InetSocketAddress a : rails) {
            if (!b.isEmpty()) b.append(',');
            b.append(a.getAddress().getHostAddress()).append('#').append(a.getPort());
        }
        return b.toString();
    }

    /** A peer's field, read back. */
    static List<InetSocketAddress> parse(String field) {
        if (field.equals("-")) return List.of();
        List<InetSocketAddress> out = new ArrayList<>();
        for (String a : field.split(",")) {
            int hash = a.lastIndexOf('#');
            out.add(new InetSocketAddress(a.substring(0, hash), Integer.parseInt(a.substring(hash + 1))));
        }
        return out;
    }
}
