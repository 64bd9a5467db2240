package io.hcomm4j.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Two "hosts" joined by several rate-limited "NICs", as scripts/netns-links.sh makes them: network namespaces
 * {@code hcs-<pid>-0} and {@code hcs-<pid>-1}, and per NIC i a veth pair {@code nic<i>} with 10.<b>.<i>.1 and
 * 10.<b>.<i>.2 (b from the pid), each end shaped with {@code tbf} (this machine has no netem). A NIC's rate can be
 * changed, and the NIC taken down and up, while ranks run in the namespaces. Removed at close (and by a shutdown hook).
 */
public final class NetLinks implements AutoCloseable {
    private final long pid = ProcessHandle.current().pid();
    private final int block = (int) (pid % 200) + 20;
    private final String[] ns = {"hcs-" + pid + "-0", "hcs-" + pid + "-1"};
    private final int nics;
    private final Thread hook = new Thread(this::remove);

    private NetLinks(int nics) {
        this.nics = nics;
    }

    /** Why these cannot be made here (see {@link NetNamespaces#unavailable}, and {@code tc} with tbf), or empty. */
    public static Optional<String> unavailable() {
        Optional<String> why = NetNamespaces.unavailable();
        if (why.isPresent()) return why;
        NetNamespaces.Result tc = run(List.of("tc", "-V"));
        return tc.exit() == 0 ? Optional.empty() : Optional.of("no usable 'tc' command (iproute2): " + tc.output());
    }

    /**
     * Two namespaces joined by one NIC per rate (e.g. {@code "2gbit", "1gbit"}); a rate may name its token bucket too,
     * {@code "8mbit/1600"} (bytes; 256 KiB if not: an idle link then passes a small message at once, whatever its rate).
     */
    public static NetLinks create(String... rates) {
        NetLinks l = new NetLinks(rates.length);
        Runtime.getRuntime().addShutdownHook(l.hook);
        try {
            for (String n : l.ns) {
                NetNamespaces.ipOk("netns", "add", n);
                NetNamespaces.ipOk("-n", n, "link", "set", "lo", "up");
            }
            for (int i = 0; i < rates.length; i++) {
                NetNamespaces.ipOk("link", "add", "nic" + i, "netns", l.ns[0], "type", "veth", "peer", "name", "nic" + i, "netns", l.ns[1]);
                for (int h = 0; h < 2; h++) {
                    NetNamespaces.ipOk("-n", l.ns[h], "addr", "add", l.address(h, i) + "/24", "dev", "nic" + i);
                    NetNamespaces.ipOk("-n", l.ns[h], "link", "set", "nic" + i, "up");
                    l.shape(h, i, rates[i], "add");
                }
            }
            return l;
        } catch (RuntimeException e) {
            l.close();
            throw e;
        }
    }

    /** Host {@code h}'s address on NIC {@code nic}. */
    public String address(int h, int nic) {
        return "10." + block + "." + nic + "." + (h + 1);
    }

    /** The command prefix that runs a program on host {@code h}. */
    public List<String> exec(int h) {
        return List.of("ip", "netns", "exec", ns[h]);
    }

    /** Changes NIC {@code nic}'s rate both ways (mid-run). */
    public void rate(int nic, String rate) {
        for (int h = 0; h < 2; h++) shape(h, nic, rate, "change");
    }

    /** Takes NIC {@code nic} down on both hosts (a failed link), or brings it back. */
    public void link(int nic, boolean up) {
        for (int h = 0; h < 2; h++) NetNamespaces.ipOk("-n", ns[h], "link", "set", "nic" + nic, up ? "up" : "down");
    }

    private void shape(int h, int nic, String rate, String how) {
        String[] rb = rate.split("/");
        NetNamespaces.Result r = run(List.of("ip", "netns", "exec", ns[h], "tc", "qdisc", how, "dev", "nic" + nic, "root", "tbf",
                "rate", rb[0], "burst", rb.length > 1 ? rb[1] : "256kb", "latency", "50ms"));
        if (r.exit() != 0) throw new IllegalStateException("tc qdisc " + how + " on nic" + nic + " of " + ns[h] + ": " + r.output());
    }

    private static NetNamespaces.Result run(List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
            return new NetNamespaces.Result(p.waitFor(), out);
        } catch (java.io.IOException e) {
            return new NetNamespaces.Result(-1, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new NetNamespaces.Result(-1, "interrupted");
        }
    }

    private void remove() {
        for (String n : ns) {
            for (String p : NetNamespaces.ip("netns", "pids", n).output().split("\\s+")) {
                if (p.matches("\\d+")) ProcessHandle.of(Long.parseLong(p)).ifPresent(ProcessHandle::destroyForcibly);
            }
            NetNamespaces.ip("netns", "del", n);
        }
    }

    @Override
    public void close() {
        remove();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException ignored) {
            // shutting down: the hook runs anyway
        }
    }

    /** Number of NICs. */
    public int nics() {
        return nics;
    }

    /** The namespaces' names (for messages). */
    public List<String> names() {
        return new ArrayList<>(List.of(ns));
    }
}
