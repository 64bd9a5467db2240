package io.hcomm4j.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Network namespaces for tests: each a "host" of its own (its own network namespace, so its own host identity),
 * joined by veth pairs to a bridge in the root namespace, all in a private 10.77.x.0/24 that this class creates (never
 * any other address). The bridge holds 10.77.x.1, so a store that the test serves there is reachable from every
 * namespace; namespace i holds 10.77.x.(10+i), which its ranks' data listeners take (the local address of their store
 * connection). Needs root and {@code ip} (iproute2).
 *
 * <p>Names carry this JVM's pid ({@code hct-<pid>-<i>}, bridge {@code hctb<pid>}, veths {@code hct<pid>v<i>}), so
 * concurrent test JVMs never collide, and a later run removes what a killed one left ({@link #sweepStale}). {@link
 * #close()} kills the processes still inside the namespaces and deletes namespaces, veths and bridge; a shutdown hook
 * does the same if the JVM exits before.
 */
public final class NetNamespaces implements AutoCloseable {
    private static final Pattern STALE_NS = Pattern.compile("^hct-(\\d+)-\\d+\\b");
    private static final Pattern STALE_BRIDGE = Pattern.compile("^\\d+: (hctb(\\d+))[:@]");

    private final long pid = ProcessHandle.current().pid();
    private final String bridge = "hctb" + pid;
    private final List<String> namespaces = new ArrayList<>();
    private final List<String> hostVeths = new ArrayList<>();
    private final int subnet;
    private final Thread hook = new Thread(this::cleanUp, "netns-cleanup");
    private boolean closed;

    private NetNamespaces(int subnet) {
        this.subnet = subnet;
    }

    /** What the test needs to call {@code ip}; the output of a command. */
    record Result(int exit, String output) {
    }

    static Result ip(String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add("ip");
        cmd.addAll(List.of(args));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Result(-1, String.join(" ", cmd) + ": timed out");
            }
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8).trim());
        } catch (IOException e) {
            return new Result(-1, String.join(" ", cmd) + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "interrupted");
        }
    }

    /** Runs {@code ip args}, failing with its output if it fails. */
    static String ipOk(String... args) {
        Result r = ip(args);
        if (r.exit != 0) throw new IllegalStateException("ip " + String.join(" ", args) + " failed (" + r.exit + "): " + r.output);
        return r.output;
    }

    /**
     * Why network namespaces cannot be used here (not Linux, not root, no {@code ip}, or creating one fails, e.g. in a
     * container without CAP_SYS_ADMIN), or empty if they can: a probe namespace is created and deleted.
     */
    public static Optional<String> unavailable() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return Optional.of("not Linux (" + System.getProperty("os.name") + ")");
        }
        try {
            String status = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/self/status"));
            Matcher m = Pattern.compile("(?m)^Uid:\\s+(\\d+)").matcher(status);
            if (m.find() && !m.group(1).equals("0")) return Optional.of("not root (uid " + m.group(1) + "); ip netns needs root");
        } catch (IOException e) {
            return Optional.of("cannot read /proc/self/status: " + e.getMessage());
        }
        Result version = ip("-V");
        if (version.exit != 0) return Optional.of("no usable 'ip' command (iproute2): " + version.output);
        String probe = "hct-" + ProcessHandle.current().pid() + "-probe";
        Result add = ip("netns", "add", probe);
        if (add.exit != 0) return Optional.of("'ip netns add' fails: " + add.output);
        Result del = ip("netns", "del", probe);
        if (del.exit != 0) return Optional.of("'ip netns del' fails: " + del.output);
        return Optional.empty();
    }

    /** Deletes namespaces and bridges of this class whose creating JVM is gone (a run that was killed). */
    static void sweepStale() {
        for (String line : ip("netns", "list").output().split("\n")) {
            Matcher m = STALE_NS.matcher(line.trim());
            if (m.find() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) {
                String ns = m.group().trim();
                killInside(ns);
                ip("netns", "del", ns);
            }
        }
        for (String line : ip("-o", "link", "show", "type", "bridge").output().split("\n")) {
            Matcher m = STALE_BRIDGE.matcher(line.trim());
            if (m.find() && ProcessHandle.of(Long.parseLong(m.group(2))).isEmpty()) ip("link", "del", m.group(1));
        }
    }

    /** Kills (SIGKILL, by pid) the processes left in namespace {@code ns}: rank processes this test started there. */
    private static void killInside(String ns) {
        for (String p : ip("netns", "pids", ns).output().split("\\s+")) {
            if (p.matches("\\d+")) ProcessHandle.of(Long.parseLong(p)).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    /** Creates {@code n} namespaces on one bridge (see the class comment). */
    public static NetNamespaces create(int n) {
        if (n < 1 || n > 200) throw new IllegalArgumentException("1..200 namespaces, not " + n);
        sweepStale();
        // a /24 of 10.77.0.0/16 that no interface of the root namespace uses yet
        String used = ip("-4", "-o", "addr", "show").output();
        int subnet = -1;
        for (int i = 0; i < 250; i++) {
            int s = (int) ((ProcessHandle.current().pid() + i) % 250) + 1;
            if (!used.contains("10.77." + s + ".")) {
                subnet = s;
                break;
            }
        }
        if (subnet < 0) throw new IllegalStateException("no free 10.77.x.0/24 subnet");
        NetNamespaces nets = new NetNamespaces(subnet);
        Runtime.getRuntime().addShutdownHook(nets.hook);
        try {
            ipOk("link", "add", nets.bridge, "type", "bridge");
            ipOk("addr", "add", nets.bridgeAddress() + "/24", "dev", nets.bridge);
            ipOk("link", "set", nets.bridge, "up");
            for (int i = 0; i < n; i++) {
                String ns = "hct-" + nets.pid + "-" + i;
                String hostSide = "hct" + nets.pid + "v" + i;
                String inside = "hcn" + nets.pid + "v" + i;
                ipOk("netns", "add", ns);
                nets.namespaces.add(ns);
                ipOk("link", "add", hostSide, "type", "veth", "peer", "name", inside);
                nets.hostVeths.add(hostSide);
                ipOk("link", "set", inside, "netns", ns);
                ipOk("link", "set", hostSide, "master", nets.bridge);
                ipOk("link", "set", hostSide, "up");
                ipOk("-n", ns, "addr", "add", nets.address(i) + "/24", "dev", inside);
                ipOk("-n", ns, "link", "set", inside, "up");
                ipOk("-n", ns, "link", "set", "lo", "up");
            }
            return nets;
        } catch (RuntimeException e) {
            nets.close();
            throw e;
        }
    }

    /** Number of namespaces. */
    public int size() {
        return namespaces.size();
    }

    /** Name of namespace {@code i}. */
    public String name(int i) {
        return namespaces.get(i);
    }

    /** The bridge's address in the root namespace (where the test serves its store). */
    public String bridgeAddress() {
        return "10.77." + subnet + ".1";
    }

    /** Namespace {@code i}'s address. */
    public String address(int i) {
        return "10.77." + subnet + "." + (10 + i);
    }

    /** The command prefix that runs a command in namespace {@code i}. */
    public List<String> exec(int i) {
        return List.of("ip", "netns", "exec", name(i));
    }

    /** What {@code ip} shows of this job's links and namespaces (for failure messages). */
    public String describe() {
        StringBuilder sb = new StringBuilder(ip("-br", "addr", "show", "dev", bridge).output()).append('\n');
        for (String ns : namespaces) sb.append(ns).append(": ").append(ip("-n", ns, "-br", "addr").output().replace('\n', ';')).append('\n');
        return sb.toString();
    }

    /** Kills what still runs in the namespaces, deletes them, their veths and the bridge. Idempotent. */
    @Override
    public void close() {
        cleanUp();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException | IllegalArgumentException shuttingDownOrGone) {
            // the hook is running or already removed
        }
    }

    private synchronized void cleanUp() {
        if (closed) return;
        closed = true;
        for (String ns : namespaces) killInside(ns);
        for (String ns : namespaces) ip("netns", "del", ns);
        // deleting a namespace destroys its end of the veth and with it ours; make sure, then the bridge
        for (String v : hostVeths) {
            if (ip("link", "show", v).exit() == 0) ip("link", "del", v);
        }
        ip("link", "del", bridge);
    }

    /** The leftovers of this object, if any: names of its namespaces and links that still exist (tests assert none). */
    public List<String> leftovers() {
        List<String> left = new ArrayList<>();
        String list = ip("netns", "list").output();
        for (String ns : namespaces) if (Pattern.compile("(?m)^" + Pattern.quote(ns) + "\\b").matcher(list).find()) left.add(ns);
        for (String v : hostVeths) if (ip("link", "show", v).exit() == 0) left.add(v);
        if (ip("link", "show", bridge).exit() == 0) left.add(bridge);
        return left;
    }
}
