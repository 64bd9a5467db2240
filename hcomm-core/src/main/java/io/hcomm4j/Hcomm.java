package io.hcomm4j;

import java.util.List;

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
    private final SessionProvider.SessionHandle session;
    private final boolean joined;

    private Hcomm(SessionProvider.SessionHandle session, boolean joined) {
        this.session = session;
        this.joined = joined;
    }

    /** Initializes from the environment ({@link CommConfig#fromEnvironment()}). */
    public static Hcomm init() {
        return init(CommConfig.fromEnvironment());
    }

    /**
     * Rendezvous with every rank through the store named by {@code config}, then returns the session.
     * Blocks until all {@code worldSize} ranks have joined or {@link CommConfig#initTimeout()} passes. With
     * {@link CommConfig#join()} ({@code HCOMM_JOIN=1}, which {@code hcomm launch --max-restarts} sets for a process it
     * starts in place of a dead rank) it joins the running job instead, as {@link #join(CommConfig)}; {@link #joined()}
     * then says so.
     */
    public static Hcomm init(CommConfig config) {
        if (config.join()) return join(config);
        return new Hcomm(Providers.session().open(config), false);
    }

    /**
     * A replacement process joins a running job (elastic training): connects to the job's store (found like
     * {@link #init(CommConfig)} finds it: {@code HCOMM_INIT_METHOD} or {@code MASTER_ADDR:MASTER_PORT}; no
     * {@code RANK} or {@code WORLD_SIZE} needed), registers, and waits up to {@link CommConfig#initTimeout()} until the
     * running ranks call {@link Communicator#grow}. The returned session's {@link #world()} is the grown communicator
     * (this process's rank in it is one of the last); its world rank is the failed rank whose place it took.
     */
    public static Hcomm join(CommConfig config) {
        return new Hcomm(Providers.session().join(config), true);
    }

    /** As {@link #join(CommConfig)}, configured from the environment. */
    public static Hcomm join() {
        return join(CommConfig.fromEnvironment());
    }

    /**
     * This process's rank and its job's size as {@link #init()} reads them from the environment a launcher gave it
     * (hcomm launch, torchrun, Open MPI, MPICH/Hydra, Slurm's srun, a Kubernetes Indexed Job; {@code HCOMM_RANK} and
     * {@code HCOMM_WORLD_SIZE}), by the same rule, without joining anything: for a program that decides its role
     * before (or instead of) init, as one that uses only a {@link TransferEngine} does. Empty when no launcher
     * variable is set.
     *
     * @throws HcommException the variables contradict each other (e.g. {@code HCOMM_RANK} against {@code RANK}) or
     *                        one is not a number; the message names both
     */
    public static java.util.Optional<LaunchedAs> launchedAs() {
        return Providers.session().launchedAs();
    }

    /**
     * Where {@link #launchedAs()} found this process in its job.
     *
     * @param rank      this process's rank
     * @param worldSize the number of ranks
     * @param source    which variables said so, e.g. {@code rank 2 of 4 from OMPI_COMM_WORLD_RANK=2,
     *                  OMPI_COMM_WORLD_SIZE=4 (Open MPI mpirun)}
     */
    public record LaunchedAs(int rank, int worldSize, String source) {
    }

    /**
     * Whether the reductions (all-reduce, reduce, reduce-scatter, accumulate) run on SIMD kernels in this JVM: the JVM
     * was started with {@code --add-modules jdk.incubator.vector}, the Vector API worked on first use, and the CPU has
     * vectors of at least 128 bits. Otherwise they run on scalar loops, which compute the same bits several times
     * slower. Decided once per JVM; a check for a job's start-up log.
     */
    public static boolean vectorReductions() {
        return Providers.session().vectorReductions();
    }

    /**
     * Whether this session joined a running job ({@link #join}, or {@link #init} with {@link CommConfig#join()}) in
     * the place of a rank that died, rather than starting with the job: such a process has to get the job's state
     * (weights, step) from the others, who {@link Communicator#grow grow} to take it in.
     */
    public boolean joined() {
        return joined;
    }

    /**
     * The communicator of all ranks of the job; in a process that {@link #join joined} a running job, the communicator
     * it joined.
     */
    public Communicator world() {
        return session.world();
    }

    /** The session's pool of registered memory, the same as every communicator's {@link Communicator#memory()}. */
    public Memory memory() {
        return session.memory();
    }

    /**
     * Diagnostics: what carries this session's messages to world rank {@code rank} right now: {@code "shm"} (shared
     * memory, a peer on this host), {@code "tcp"}, {@code "tls"} (TCP under HCOMM_TLS), {@code "self"}, or {@code "none"} (not connected yet: connections
     * open on first use, or the connection is gone). {@code HCOMM_TRANSPORT} decides between shm and tcp.
     */
    public String transportTo(int rank) {
        if (rank < 0 || rank >= session.world().size()) {
            throw new IllegalArgumentException("rank " + rank + " is out of range [0, " + session.world().size() + ")");
        }
        return session.transportTo(rank);
    }

    /**
     * Diagnostics: the connections to world rank {@code rank} that are up, the primary one first (empty for this rank
     * itself, or before the first message). Over TCP with several interfaces ({@code HCOMM_SOCKET_IFNAME=a,b}) or
     * channels ({@code HCOMM_CHANNELS}) there is one per interface and channel: large messages are striped over them.
     */
    public List<Link> linksTo(int rank) {
        if (rank < 0 || rank >= session.world().size()) {
            throw new IllegalArgumentException("rank " + rank + " is out of range [0, " + session.world().size() + ")");
        }
        return session.linksTo(rank);
    }

    /**
     * Diagnostics: the algorithm the world communicator chooses now for the collective {@code op} ({@code allreduce},
     * {@code broadcast}, {@code allgather}, {@code reducescatter}, {@code alltoall}, ...) of {@code bytes} (the size
     * {@code hcomm perf} reports: the largest buffer) over the transport, in lower case (e.g. {@code ring}): what
     * {@code HCOMM_ALGO} forces, else the tuning table's choice ({@code HCOMM_TUNING_FILE}), else the cost model's. On
     * one host, with registered memory, a collective may run zero-copy instead; with {@code HCOMM_FEEDBACK} a size
     * class may have switched away from it.
     */
    public String algorithmFor(String op, long bytes) {
        return session.algorithmFor(op, bytes);
    }

    /**
     * One connection to a peer ({@link #linksTo}).
     *
     * @param index          0 for the primary connection (every message's envelope, small messages, control), 1.. for
     *                       the further ones, which carry chunks of large messages only
     * @param kind           {@code tcp} or {@code shm}
     * @param route          {@code local -> remote} address and port, for TCP
     * @param bytesPerSecond the throughput its chunks' acknowledgements measured lately (0: none measured yet)
     * @param bytes          chunk bytes it carried so far: its share of the striped traffic
     * @param roundTripNanos the shortest round trip of a 4 KiB latency probe on it, in nanoseconds; 0 if it was not
     *                       probed (the lower rank of a pair probes each link to the other once its further ones are up,
     *                       with several interfaces; small messages then go over the interface that answered soonest)
     * @param unsentBytes    the most its socket may hold written but not yet sent: about 1 ms of its measured rate (at
     *                       least 256 KiB), so that control frames and high-priority chunks do not wait behind a bulk
     *                       transfer in the kernel (Linux {@code TCP_NOTSENT_LOWAT}); 0 where the kernel's own limit applies (loopback,
     *                       shared memory, no rate measured yet, or not Linux)
     * @param congestion     its TCP congestion control algorithm ({@code cubic}, {@code bbr} ...: the system's default, or
     *                       {@code HCOMM_TCP_CONGESTION}); "" where not known (shared memory, loopback without
     *                       {@code HCOMM_TCP_CONGESTION}, not Linux)
     */
    public record Link(int index, String kind, String route, double bytesPerSecond, long bytes, long roundTripNanos,
                       long unsentBytes, String congestion) {
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
