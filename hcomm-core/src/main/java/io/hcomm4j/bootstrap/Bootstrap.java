package io.hcomm4j.bootstrap;

import io.hcomm4j.CommConfig;
import io.hcomm4j.HcommException;
import io.hcomm4j.security.Auth;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Init-time discovery: who am I (rank, world size), where is the store, which address do data
 * connections use. Reads {@code tcp://}, {@code file://} and {@code env://} init methods; the launchers' variables
 * (rank, world size, and the store's address for {@code env://}) are read by {@link JobEnvironment}.
 */
public final class Bootstrap {
    private static final Logger LOG = LoggerFactory.getLogger(Bootstrap.class);
    /** One warning per JVM is enough: every rank thread of a test or every communicator would repeat it. */
    private static final AtomicBoolean WARNED_UNAUTHENTICATED = new AtomicBoolean();
    private static final AtomicBoolean TOLD_LOOPBACK_ONLY = new AtomicBoolean();

    private Bootstrap() {
    }

    /**
     * The outcome of {@link #join}: this rank's place in the job and an open store.
     *
     * @param rank        this process's rank
     * @param worldSize   number of ranks
     * @param store       the job's store, open
     * @param dataAddress address the data listener binds to
     * @param owned       what closing the session must close besides the store (a store server rank 0 hosts), or null
     */
    public record Joined(int rank, int worldSize, Store store, InetAddress dataAddress, AutoCloseable owned) {
    }

    /** Resolves rank and size, starts the store server if this rank hosts it, and connects to the store. */
    public static Joined join(CommConfig config) {
        return join(config, System.getenv());
    }

    /**
     * As {@link #join(CommConfig)}, reading launcher variables (RANK, MASTER_ADDR, SLURM_PROCID, …) from
     * {@code env} instead of the process environment: for tests, and for embedders that learned them elsewhere.
     *
     * @throws HcommException rank, size or store cannot be determined (the message names the variables looked
     *                        for), the store cannot be served or reached, or the data address cannot be resolved
     */
    public static Joined join(CommConfig config, Map<String, String> env) {
        return join(config, env, false);
    }

    /**
     * For a replacement process that joins a running job ({@code Hcomm.join}): connects to the job's store (found as
     * {@link #join(CommConfig)} finds it, never served here) without a rank or world size, which the running job assigns;
     * the result's rank and worldSize are -1.
     */
    public static Joined joinAsReplacement(CommConfig config) {
        return join(config, System.getenv(), true);
    }

    private static Joined join(CommConfig config, Map<String, String> env, boolean replacement) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(env, "env");
        JobEnvironment.Placement place = replacement ? null : JobEnvironment.resolve(config, env, System::getProperty);
        int rank = place == null ? -1 : place.rank();
        int size = place == null ? -1 : place.worldSize();
        Auth auth = auth(config);
        // Resolved before the store, so a misconfigured address fails fast instead of after the rendezvous.
        InetAddress explicitData = explicitDataAddress(config);
        if (explicitData != null) auth.checkAddress(explicitData, () -> "the data address " + explicitData.getHostAddress() + " ("
                + (config.socketAddr().isPresent() ? "HCOMM_SOCKET_ADDR" : "HCOMM_SOCKET_IFNAME=" + config.socketIfname().orElseThrow())
                + ") is not a loopback address");

        String method = config.initMethod();
        String scheme = method.toLowerCase(Locale.ROOT);
        Store store;
        TcpStoreServer server = null;
        if (scheme.startsWith("file://")) {
            String p = method.substring("file://".length());
            if (p.isEmpty()) throw new HcommException("initMethod '" + method + "' names no directory (use file:///path)");
            store = new FileStore(Path.of(p));
        } else {
            InetSocketAddress storeAddress;
            String origin;
            if (scheme.startsWith("tcp://")) {
                storeAddress = parseTcp(method);
                origin = "initMethod " + method;
            } else if (scheme.startsWith("env://")) {
                JobEnvironment.StoreAddress a = JobEnvironment.storeAddress(config, env, place == null ? null : place.source());
                storeAddress = a.address();
                origin = a.origin();
            } else {
                throw new HcommException("initMethod '" + method + "' is not one of env://, tcp://host:port, file:///path");
            }
            auth.checkAddress(storeAddress.getAddress(), () -> "the store's address " + StoreProtocol.hostPort(storeAddress) + " ("
                    + origin + ") is not a loopback address");
            if (rank == 0 && !config.storeHosted() && !replacement) {
                try {
                    server = TcpStoreServer.start(storeAddress, auth, io.hcomm4j.security.AcceptGate.Limits.of(config));
                } catch (HcommException e) {
                    throw new HcommException("rank 0 serves the store but cannot listen on " + StoreProtocol.hostPort(storeAddress) + " ("
                            + origin + "): " + (e.getCause() != null ? e.getCause() : e.getMessage()) + "; the address must belong to rank 0's host and the port "
                            + "be free (set HCOMM_STORE_HOSTED=1 if a launcher already serves the store)", e);
                }
            }
            // With port 0 only rank 0 can know the port (a one-rank job); everyone else needs a fixed one.
            InetSocketAddress connectTo = server != null && storeAddress.getPort() == 0 ? server.address() : storeAddress;
            try {
                // Only a store served by another process (a launcher, `hcomm store`) can come back after a restart; one that
                // rank 0 serves goes away with rank 0, and there is nothing to reconnect to.
                store = TcpStore.connect(connectTo, auth, config.initTimeout(),
                        config.storeHosted() ? config.storeReconnect() : java.time.Duration.ZERO);
            } catch (RuntimeException e) {
                StoreProtocol.closeQuietly(server);
                throw e;
            }
        }
        InetAddress data;
        try {
            // without a secret the data listener stays on loopback even where the store is a file another host may share
            data = explicitData != null ? explicitData : auth.hasSecret() || auth.isUnauthenticated() ? defaultDataAddress(store)
                    : InetAddress.getLoopbackAddress();
        } catch (RuntimeException e) {
            StoreProtocol.closeQuietly(store);
            StoreProtocol.closeQuietly(server);
            throw e;
        }
        // after the data address, which looks at the TcpStore underneath
        if (!config.storeScope().isEmpty()) store = new ScopedStore(store, config.storeScope());
        LOG.debug("joined as rank {} of {} via {} (data address {})", rank, size, store, data.getHostAddress());
        return new Joined(rank, size, store, data, server);
    }

    /**
     * The handshake of {@code config}'s job ({@link Auth#forJob}); says once per JVM how a job without a secret runs: at
     * WARN when the user chose to run unauthenticated, at INFO when it is kept to loopback.
     */
    public static Auth auth(CommConfig config) {
        Auth auth = Auth.forJob(config.secret().orElse(null), config.unauthenticated())
                .withTls(config.tls().map(io.hcomm4j.security.TlsContext::of).orElse(null));
        if (auth.isUnauthenticated() && WARNED_UNAUTHENTICATED.compareAndSet(false, true)) {
            LOG.warn("HCOMM_AUTH=none and no job secret: store and data connections are not authenticated, so any process "
                    + "that can reach them can join, read or disturb the job; set HCOMM_SECRET unless every host that can "
                    + "reach this job's ports is trusted");
        } else if (!auth.hasSecret() && !auth.isUnauthenticated() && TOLD_LOOPBACK_ONLY.compareAndSet(false, true)) {
            LOG.info("no job secret: the store and data connections use loopback addresses only (any process of this host "
                    + "can reach them); set HCOMM_SECRET for a job across hosts or on a shared host");
        }
        return auth;
    }

    /** Forgets that the once-per-JVM lines of {@link #auth} were logged, so a test can see them. */
    static void forgetAuthNotices() {
        WARNED_UNAUTHENTICATED.set(false);
        TOLD_LOOPBACK_ONLY.set(false);
    }

    /** Parses {@code tcp://host:port} (IPv6 literals in brackets). */
    static InetSocketAddress parseTcp(String method) {
        String rest = method.substring("tcp://".length());
        int slash = rest.indexOf('/');
        if (slash >= 0) rest = rest.substring(0, slash);
        String host;
        String port;
        if (rest.startsWith("[")) {
            int close = rest.indexOf(']');
            if (close < 0 || close + 1 >= rest.length() || rest.charAt(close + 1) != ':') {
                throw new HcommException("initMethod '" + method + "' is not tcp://host:port");
            }
            host = rest.substring(1, close);
            port = rest.substring(close + 2);
        } else {
            int colon = rest.lastIndexOf(':');
            if (colon <= 0) throw new HcommException("initMethod '" + method + "' is not tcp://host:port (port missing)");
            host = rest.substring(0, colon);
            port = rest.substring(colon + 1);
        }
        return new InetSocketAddress(host, parsePort(port, "the port of initMethod '" + method + "'"));
    }

    /** The data address from {@code socketAddr} or {@code socketIfname}, or null if neither is set. */
    static InetAddress explicitDataAddress(CommConfig config) {
        if (config.socketAddr().isPresent()) {
            String a = config.socketAddr().get().trim();
            InetAddress addr;
            try {
                addr = InetAddress.getByName(a);
            } catch (UnknownHostException e) {
                throw new HcommException("socket address '" + a + "' (HCOMM_SOCKET_ADDR) does not resolve", e);
            }
            if (addr.isAnyLocalAddress()) {
                throw new HcommException("socket address '" + a + "' (HCOMM_SOCKET_ADDR) is the wildcard address; "
                        + "peers need an address they can connect to");
            }
            return addr;
        }
        if (config.socketIfname().isPresent()) return interfaceAddress(config.socketIfname().get().trim());
        return null;
    }

    /**
     * The addresses of the interfaces after the first in {@code HCOMM_SOCKET_IFNAME=a,b,...} (empty for one or none):
     * each carries one more link to every peer over TCP.
     */
    public static List<InetAddress> furtherInterfaceAddresses(CommConfig config) {
        List<String> names = config.socketIfnames();
        List<InetAddress> out = new ArrayList<>();
        for (String n : names.subList(Math.min(1, names.size()), names.size())) out.add(interfaceAddress(n));
        return out;
    }

    /** First IPv4 address of interface {@code name}, else its first global IPv6 address, else any IPv6 address. */
    static InetAddress interfaceAddress(String name) {
        NetworkInterface ni;
        try {
            ni = NetworkInterface.getByName(name);
        } catch (SocketException e) {
            throw new HcommException("cannot look up network interface '" + name + "' (HCOMM_SOCKET_IFNAME): " + e, e);
        }
        if (ni == null) {
            throw new HcommException("network interface '" + name + "' (HCOMM_SOCKET_IFNAME) does not exist; this "
                    + "host has " + interfaceNames());
        }
        List<InetAddress> addrs = Collections.list(ni.getInetAddresses());
        for (InetAddress a : addrs) if (a instanceof Inet4Address) return a;
        for (InetAddress a : addrs) if (a instanceof Inet6Address && !a.isLinkLocalAddress()) return a;
        for (InetAddress a : addrs) if (a instanceof Inet6Address) return a;
        throw new HcommException("network interface '" + name + "' (HCOMM_SOCKET_IFNAME) has no IP address; this "
                + "host has " + interfaceNames());
    }

    private static InetAddress defaultDataAddress(Store store) {
        // The interface that reaches the store's host is the one peers (who reach the same host) can most
        // likely reach us on.
        if (store instanceof TcpStore t) return t.localAddress();
        try {
            InetAddress a = InetAddress.getLocalHost();
            if (!a.isAnyLocalAddress()) return a;
        } catch (UnknownHostException e) {
            LOG.debug("host name does not resolve ({}), data connections use 127.0.0.1", e.getMessage());
        }
        return InetAddress.getLoopbackAddress();
    }

    private static String interfaceNames() {
        try {
            List<String> names = new ArrayList<>();
            for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) names.add(n.getName());
            Collections.sort(names);
            return names.toString();
        } catch (SocketException e) {
            return "(interfaces cannot be listed: " + e.getMessage() + ")";
        }
    }

    static int parsePort(String v, String what) {
        int p;
        try {
            p = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new HcommException(what + " '" + v + "' is not a port number");
        }
        if (p < 0 || p > 65535) throw new HcommException(what + " " + p + " is not in [0, 65535]");
        return p;
    }
}
