package io.hcomm4j;

/**
 * Service-provider interface between the API and the layer that implements it: {@link Hcomm} finds its one
 * implementation (in this library's {@code io.hcomm4j.comm} package) with {@link java.util.ServiceLoader}, so that the API
 * package depends on no package below it at compile time. Applications neither implement nor call it.
 */
public interface SessionProvider {
    /** Rendezvous with every rank (see {@link Hcomm#init(CommConfig)}). */
    SessionHandle open(CommConfig config);

    /** A replacement process joins a running job (see {@link Hcomm#join(CommConfig)}). */
    SessionHandle join(CommConfig config);

    /**
     * Throws {@link IllegalArgumentException} if {@code spec} (HCOMM_ALGO) is not a valid algorithm choice; the
     * grammar belongs to the tuner, below the API, so {@link CommConfig} asks here.
     */
    void checkAlgorithms(String spec);

    /** This process's place in a launched job, from the environment (see {@link Hcomm#launchedAs()}). */
    java.util.Optional<Hcomm.LaunchedAs> launchedAs();

    /** Whether reductions run on vector kernels in this JVM (see {@link Hcomm#vectorReductions()}). */
    boolean vectorReductions();

    /**
     * Serves a job's store on {@code bind} (see {@link StoreServer#start}): with {@code secret}, else unauthenticated on
     * any address if {@code unauthenticated}, else on a loopback address only.
     */
    ServedStore serveStore(java.net.InetSocketAddress bind, String secret, boolean unauthenticated);

    /** A store this process serves, as {@link StoreServer} uses it. */
    interface ServedStore extends AutoCloseable {
        java.net.InetSocketAddress address();

        @Override
        void close();
    }

    /** One session, as {@link Hcomm} uses it. */
    interface SessionHandle extends AutoCloseable {
        Communicator world();

        Memory memory();

        /** What carries messages to world rank {@code rank}: shm, tcp, self or none (see {@link Hcomm#transportTo}). */
        String transportTo(int rank);

        /** The links to world rank {@code rank} (see {@link Hcomm#linksTo}). */
        java.util.List<Hcomm.Link> linksTo(int rank);

        /** The world communicator's algorithm for {@code op} on {@code bytes} (see {@link Hcomm#algorithmFor}). */
        String algorithmFor(String op, long bytes);

        CommConfig config();

        @Override
        void close();
    }
}
