package io.hcomm4j;

import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * A job's rendezvous store served from this process, for a coordinator that outlives the ranks: the driver of a Spark
 * application, a service that starts jobs, a test. It is what {@code hcomm store} runs as a process of its own. Ranks
 * meet there with {@link CommConfig.Builder#initMethod initMethod(server.initMethod())},
 * {@link CommConfig.Builder#storeHosted storeHosted(true)} and the same {@link CommConfig.Builder#secret secret}.
 *
 * <pre>{@code
 * try (StoreServer store = StoreServer.start(new InetSocketAddress("10.0.0.1", 0), secret)) {
 *     // ranks anywhere: CommConfig.builder().initMethod(store.initMethod()).storeHosted(true).secret(secret)
 *     //                 .rank(r).worldSize(n).storeScope("job-17").build()
 * }
 * }</pre>
 *
 * <p>One server serves any number of jobs, one after another or at once, if each has its own
 * {@link CommConfig#storeScope() store scope}. What the jobs write stays until the server closes (a few hundred bytes
 * per rank and init). Connections prove the secret as every store connection does. A server without a secret listens on
 * a loopback address only (its clients are this host's processes), unless it is started
 * {@linkplain #startUnauthenticated unauthenticated} by name.
 */
public final class StoreServer implements AutoCloseable {
    private final SessionProvider.ServedStore served;

    private StoreServer(SessionProvider.ServedStore served) {
        this.served = served;
    }

    /**
     * Starts serving on {@code bind}: port 0 picks a free port ({@link #address()} tells which), the wildcard address
     * listens on every interface.
     *
     * @param bind   address and port to listen on
     * @param secret the job secret every connection must prove, at least 16 bytes; or null for none, and then
     *               {@code bind} must be a loopback address
     * @throws IllegalArgumentException the secret is shorter than 16 bytes, or the address does not resolve
     * @throws HcommException the address cannot be bound (the message names it), or is not a loopback one and there is
     *                        no secret
     */
    public static StoreServer start(InetSocketAddress bind, String secret) {
        Objects.requireNonNull(bind, "bind");
        if (bind.isUnresolved()) throw new IllegalArgumentException("bind address " + bind + " does not resolve");
        if (secret != null) CommConfig.checkSecret(secret, "the store's secret");
        return new StoreServer(Providers.session().serveStore(bind, secret, false));
    }

    /**
     * Starts serving on {@code bind}, any address, without a secret: anyone who reaches it can read and change the jobs'
     * store. For a network where every host that can reach the port is trusted; the ranks run with
     * {@link CommConfig.Builder#unauthenticated()} ({@code HCOMM_AUTH=none}).
     *
     * @throws HcommException the address cannot be bound (the message names it)
     */
    public static StoreServer startUnauthenticated(InetSocketAddress bind) {
        Objects.requireNonNull(bind, "bind");
        if (bind.isUnresolved()) throw new IllegalArgumentException("bind address " + bind + " does not resolve");
        return new StoreServer(Providers.session().serveStore(bind, null, true));
    }

    /** The address and port it listens on. */
    public InetSocketAddress address() {
        return served.address();
    }

    /**
     * {@code tcp://host:port} of this server for ranks that reach it at {@code host} (an IPv6 literal goes in brackets):
     * the address it listens on is often a wildcard, which says nothing about how others reach it.
     */
    public String initMethod(String host) {
        Objects.requireNonNull(host, "host");
        boolean v6 = host.indexOf(':') >= 0 && !host.startsWith("[");
        return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + address().getPort();
    }

    /** {@code tcp://host:port} of the address it listens on (a wildcard bind gives the loopback address). */
    public String initMethod() {
        InetSocketAddress a = address();
        if (a.getAddress().isAnyLocalAddress()) {
            return initMethod(a.getAddress() instanceof Inet6Address ? "::1" : "127.0.0.1");
        }
        return initMethod(a.getAddress().getHostAddress());
    }

    /** Stops serving and closes every connection; ranks still using the store fail their next store call. Idempotent. */
    @Override
    public void close() {
        served.close();
    }

    @Override
    public String toString() {
        return "StoreServer{" + initMethod() + "}";
    }
}
