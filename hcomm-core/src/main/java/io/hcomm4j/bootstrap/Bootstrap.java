package io.hcomm4j.bootstrap;

import io.hcomm4j.CommConfig;
import java.net.InetAddress;

/**
 * Init-time discovery: who am I (rank, world size), where is the store, which address do data
 * connections use. Reads {@code tcp://}, {@code file://} and {@code env://} init methods; {@code env://}
 * understands torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Slurm (SLURM_PROCID, SLURM_NTASKS)
 * and Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE).
 */
public final class Bootstrap {
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
        throw new UnsupportedOperationException("TODO");
    }
}
