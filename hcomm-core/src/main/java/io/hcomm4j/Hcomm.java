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
