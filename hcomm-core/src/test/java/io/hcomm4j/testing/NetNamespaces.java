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
 * Network namespaces for tests: each a "host" of its own (its own network namespace, so its own host identity), with
 * one interface {@code eth0} at 10.77.x.(10+i)/24, all joined by veth pairs to a bridge that lives in a further
 * namespace of its own (the "switch"). Nothing is added to the root namespace: the machine's interfaces, addresses,
 * routes and firewall rules are neither touched nor in the way (a bridge in the root namespace would pass its traffic
 * through the root's iptables FORWARD chain, which Docker sets to DROP). So a rank can only reach the ranks of the
 * other namespaces, over TCP through the bridge, and those of its own; a store must be served inside a namespace
 * (rank 0 serves it on its address). Needs root and {@code ip} (iproute2).
 *
 * <p>Namespace names carry this JVM's pid ({@code hct-<pid>-<i>}, switch {@code hct-<pid>-s}), so concurrent test JVMs
 * never collide, and a later run removes what a killed one left ({@link #sweepStale}). {@link #close()} kills the
 * processes still inside the namespaces and deletes them (which deletes their veths and the bridge); a shutdown hook
 * does the same if the JVM exits before.
 */
public final class NetNamespaces implements AutoCloseable {
    private static final Pattern STALE_NS = Pattern.compile("^hct-(\\d+)-(\\d+|s|probe)\\b");

    private final long pid = ProcessHandle.current().pid();
    private final String sw = "hct-" + pid + "-s";
    private final List<String> namespaces = new ArrayList<>();
    private final int subnet;
    private final Thread hook = new Thread(this::cleanUp, "netns-cleanup");
    private boolean swCreated;
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
        Optional<String> why = Optional.empty();
        // what create() and the ranks need: a bridge and a veth pair in a namespace, and running a command there
        String[][] steps = {{"-n", probe, "link", "add", "br0", "type", "bridge"},
                {"-n", probe, "link", "add", "v0", "type", "veth", "peer", "name", "v1"},
                {"-n", probe, "link", "set", "v0", "master", "br0"},
                {"netns", "exec", probe, "ip", "link", "show", "v1"}};
        for (String[] step : steps) {
            Result r = ip(step);
            if (r.exit != 0) {
                why = Optional.of("'ip " + String.join(" ", step) + "' fails: " + r.output);
                break;
            }
        }
        Result del = ip("netns", "del", probe);
        if (del.exit != 0 && why.isEmpty()) why = Optional.of("'ip netns del' fails: " + del.output);
        return why;
    }

    /** Deletes namespaces of this class whose creating JVM is gone (a run that was killed). */
    static void sweepStale() {
        for (String line : ip("netns", "list").output().split("\n")) {
            Matcher m = STALE_NS.matcher(line.trim());
            if (m.find() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) {
                String ns = m.group().trim();
                killInside(ns);
                ip("netns", "del", ns);
            }
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
        // any private /24 would do (nothing of it reaches the root namespace); vary it by pid for readable logs
        NetNamespaces nets = new NetNamespaces((int) (ProcessHandle.current().pid() % 250) + 1);
        Runtime.getRuntime().addShutdownHook(nets.hook);
        try {
            ipOk("netns", "add", nets.sw);
            nets.swCreated = true;
            ipOk("-n", nets.sw, "link", "add", "br0", "type", "bridge");
            ipOk("-n", nets.sw, "link", "set", "br0", "up");
            for (int i = 0; i < n; i++) {
                String ns = "hct-" + nets.pid + "-" + i;
                ipOk("netns", "add", ns);
                nets.namespaces.add(ns);
                ipOk("-n", nets.sw, "link", "add", "v" + i, "type", "veth", "peer", "name", "eth0", "netns", ns);
                ipOk("-n", nets.sw, "link", "set", "v" + i, "master", "br0");
                ipOk("-n", nets.sw, "link", "set", "v" + i, "up");
                ipOk("-n", ns, "addr", "add", nets.address(i) + "/24", "dev", "eth0");
                ipOk("-n", ns, "link", "set", "eth0", "up");
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

    /** Namespace {@code i}'s address. */
    public String address(int i) {
        return "10.77." + subnet + "." + (10 + i);
    }

    /** The command prefix that runs a command in namespace {@code i}. */
    public List<String> exec(int i) {
        return List.of("ip", "netns", "exec", name(i));
    }

    /** What {@code ip} shows of the namespaces (for failure messages). */
    public String describe() {
        StringBuilder sb = new StringBuilder(sw).append(": ").append(ip("-n", sw, "-br", "link").output().replace('\n', ';')).append('\n');
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
        // deleting a namespace destroys the veth ends in it, and with them their peers; the switch's goes last
        for (String ns : namespaces) ip("netns", "del", ns);
        if (swCreated) ip("netns", "del", sw);
    }

    /** The leftovers of this object, if any: names of its namespaces that still exist (tests assert none). */
    public List<String> leftovers() {
        List<String> left = new ArrayList<>();
        String list = ip("netns", "list").output();
        List<String> all = new ArrayList<>(namespaces);
        all.add(sw);
        for (String ns : all) if (Pattern.compile("(?m)^" + Pattern.quote(ns) + "\\b").matcher(list).find()) left.add(ns);
        return left;
    }
}
