package io.hcomm4j;

import io.hcomm4j.comm.Session;

/**
 * An HComm4J session in this process: init → execute → cleanup.
 *
 * <pre>{@code
 * try (Hcomm hcomm = Hcomm.init()) {              // rendezvous with every rank
 *     Communicator world = hcomm.world();
 *     ...
 * }                                                 // closes connections, threads and memory
 * }</pre>
 *
 * Settings come from {@link CommConfig} (by default from {@code HCOMM_*} variables and the environment
 * that {@code hcomm launch}, torchrun, Slurm or mpirun set).
 */
public final class Hcomm implements AutoCloseable {
    private final Session session;

    private Hcomm(Session session) {
        this.session = session;
    }

    /** Initializes from the environment ({@link CommConfig#fromEnvironment()}). */
    public static Hcomm init() {
        return init(CommConfig.fromEnvironment());
    }

    /**
     * Rendezvous with every rank through the store named by {@code config}, then returns the session.
     * Blocks until all {@code worldSize} ranks have joined or {@link CommConfig#initTimeout()} passes.
     */
    public static Hcomm init(CommConfig config) {
        return new Hcomm(Session.open(config));
    }

    /** The communicator of all ranks of the job. */
    public Communicator world() {
        return session.world();
    }

    /** The session's pool of registered memory, the same as every communicator's {@link Communicator#memory()}. */
    public io.hcomm4j.memory.MemoryPool memory() {
        return session.memory();
    }

    /**
     * Diagnostics: what carries this session's messages to world rank {@code rank} right now: {@code "shm"} (shared
     * memory, a peer on this host), {@code "tcp"}, {@code "self"}, or {@code "none"} (not connected yet: connections
     * open on first use, or the connection is gone). {@code HCOMM_TRANSPORT} decides between shm and tcp.
     */
    public String transportTo(int rank) {
        if (rank < 0 || rank >= session.world().size()) {
            throw new IllegalArgumentException("rank " + rank + " is out of range [0, " + session.world().size() + ")");
        }
        return session.transportTo(rank);
    }

    /** The settings this session runs with. */
    public CommConfig config() {
        return session.config();
    }

    /**
     * Closes every communicator and stream, the connections, the threads and the memory pool (its shared-memory files
     * are unlinked) of this session. Idempotent.
     */
    @Override
    public void close() {
        session.close();
    }
}
