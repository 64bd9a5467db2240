package io.hcomm4j;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * A transfer engine: moves bytes between named memory of processes that come and go, without a communicator (in the
 * manner of Mooncake's transfer engine, NVIDIA NIXL and Huawei HIXL). Each engine registers segments of its memory
 * under names; another engine connects to it (by name, through the job's store, or from a {@link SegmentDescriptor}
 * handed over out of band) and reads and writes those segments in batches while the owner's application does nothing.
 *
 * <pre>{@code
 * try (TransferEngine decode = TransferEngine.start(TransferConfig.builder().name("decode-0").build())) {
 *     RegisteredBuffer kv = decode.memory().allocate(64 << 20);  // in the pool: same-host engines map it
 *     decode.register(kv.segment(), "kv");
 *     ...                                                        // prefill engines write into it and notify
 *     for (Notification n : decode.drainNotifies()) ...
 * }
 * try (TransferEngine prefill = TransferEngine.start(TransferConfig.builder().name("prefill-0").build())) {
 *     RemoteEngine decode = prefill.connect("decode-0", Duration.ofSeconds(30));
 *     TransferBatch b = prefill.transfer(decode, List.of(TransferOp.write(block, 0, "kv", offset, block.byteSize())));
 *     if (b.status() == TransferStatus.COMPLETED) prefill.notify(decode, "request-17", header);
 * }
 * }</pre>
 *
 * <p><b>Paths.</b> Between engines of one host (and unless {@code HCOMM_TRANSPORT=tcp}) a remote segment that lies in the
 * remote's registered pool ({@link #memory()}) is mapped here and the bytes are copied in place, with no message; any
 * other segment is reached through the remote's progress engine: RMA frames over the pair's shared-memory rings on one
 * host, over TCP otherwise. Connections, authentication ({@code HCOMM_SECRET}), shared-memory rings, reconnects of
 * dropped TCP connections, heartbeats and failure detection are the communicators' (docs/reliability.md): an engine
 * killed during a batch fails it within those detection times, a stopped one within {@code HCOMM_HEARTBEAT_TIMEOUT}.
 *
 * <p><b>Ordering.</b> The ops of a batch run in no given order. A notification sent after a batch COMPLETED arrives after
 * the batch's bytes landed; notifications from one engine to another arrive once each, in the order they were sent.
 *
 * <p><b>Joining and leaving.</b> An engine that starts later is found by name as soon as it started; one that closes
 * says so to the engines connected to it, whose batches to it then end FAILED, while their batches to others go on.
 *
 * <p>Thread-safe. {@link #close()} releases the connections, threads, the pool and the engine's entries in the store.
 */
public interface TransferEngine extends AutoCloseable {
    /** Most payload bytes of one notification ({@link #notify(RemoteEngine, String, byte[])}). */
    int MAX_NOTIFY_BYTES = 1 << 20;

    /**
     * Starts an engine: takes a slot in the job's store, listens on the data address ({@code HCOMM_SOCKET_ADDR} or
     * {@code HCOMM_SOCKET_IFNAME}, else the address that reaches the store: loopback when the store is on this host's
     * loopback), and publishes its name and address.
     *
     * @throws HcommException if the store cannot be reached, the job's engine slots are used up, or the address cannot be
     *                        listened on
     */
    static TransferEngine start(TransferConfig config) {
        return Providers.transfer().start(java.util.Objects.requireNonNull(config, "config"));
    }

    /** As {@link #start(TransferConfig)}, with {@code config} and the engine settings of the environment. */
    static TransferEngine start(CommConfig config) {
        return start(TransferConfig.builderFromEnvironment().comm(config).build());
    }

    /** This engine's name. */
    String name();

    /** This engine's id: its slot in the job. */
    int id();

    /** Where this engine listens. */
    InetSocketAddress address();

    /**
     * This engine's pool of registered memory: a segment registered from it is copied in place by same-host engines
     * (no message, no copy through the rings). Closed with the engine.
     */
    Memory memory();

    /**
     * Registers {@code segment} under {@code name}, so that connected engines read and write it, and publishes its
     * descriptor in the store. The memory must stay valid until {@link #unregister} or {@link #close()}.
     *
     * @return the descriptor other engines can use (also out of band: it is serializable)
     * @throws IllegalArgumentException naming the argument: a name already registered here or not a valid name
     *                                  ({@link TransferConfig#checkName}), a read-only segment, or one confined to one thread
     * @throws IllegalStateException    if this engine is closed
     */
    SegmentDescriptor register(MemorySegment segment, String name);

    /**
     * Unregisters the segment registered as {@code name}: later ops on it from any engine fail, and its descriptor goes
     * from the store. Ops already in flight to it may still land; an application that reuses the memory should first make
     * sure no engine still writes into it.
     *
     * @throws IllegalArgumentException if no segment is registered under {@code name}
     * @throws IllegalStateException    if this engine is closed
     */
    void unregister(String name);

    /** Descriptors of the segments registered here now. */
    List<SegmentDescriptor> segments();

    /**
     * Connects to the engine named {@code engine} (waiting up to {@code timeout} for it to start, if it has not yet): looks
     * its address up in the store, opens an authenticated connection (shared memory on one host), and returns its handle.
     *
     * @throws CommTimeoutException if no engine of that name started within {@code timeout}
     * @throws PeerFailedException  if it cannot be reached (it failed, or closed)
     * @throws IllegalStateException if this engine is closed
     */
    RemoteEngine connect(String engine, Duration timeout);

    /**
     * Connects to the engine that registered the segment of {@code descriptor}, from the descriptor alone (no store
     * lookup), and remembers the segment, so transfers to it need no lookup either.
     *
     * @throws PeerFailedException      if that engine cannot be reached (it failed or closed, or the descriptor is stale)
     * @throws CommTimeoutException     if the connection is not up within {@code timeout}
     * @throws IllegalArgumentException if the descriptor is not of this job (its engine id is beyond the job's slots, or the
     *                                  store lists another engine under it)
     * @throws IllegalStateException    if this engine is closed
     */
    RemoteEngine connect(SegmentDescriptor descriptor, Duration timeout);

    /**
     * Runs a batch of ops against {@code remote} and returns it when it is over ({@link TransferBatch#status()} COMPLETED,
     * TIMEOUT after {@code HCOMM_TIMEOUT}, or FAILED).
     *
     * @throws IllegalArgumentException  naming the op ({@code ops[i]}) and the argument: a remote segment name the remote
     *                                   has not registered, a local segment that is read-only (READ) or confined to one
     *                                   thread, a negative length; or a remote that was never connected
     * @throws IndexOutOfBoundsException naming the op and the offset: a range outside the local or the remote segment
     * @throws IllegalStateException     if this engine is closed
     */
    TransferBatch transfer(RemoteEngine remote, List<TransferOp> ops);

    /** As {@link #transfer(RemoteEngine, List)}; the batch is TIMEOUT if it is not over within {@code timeout}. */
    TransferBatch transfer(RemoteEngine remote, List<TransferOp> ops, Duration timeout);

    /** As {@link #transfer(RemoteEngine, List)}, returning at once with the batch under way (same checks, thrown here). */
    TransferBatch transferAsync(RemoteEngine remote, List<TransferOp> ops);

    /** As {@link #transferAsync(RemoteEngine, List)}; the batch is TIMEOUT if it is not over within {@code timeout}. */
    TransferBatch transferAsync(RemoteEngine remote, List<TransferOp> ops, Duration timeout);

    /**
     * Sends {@code remote} a notification named {@code name} with {@code bytes} (at most {@value #MAX_NOTIFY_BYTES}
     * bytes); returns once it is on its way. The remote gets it from {@link #drainNotifies()}, once, after every
     * notification this engine sent it before.
     *
     * @throws PeerFailedException      if the remote failed or left
     * @throws IllegalArgumentException if {@code name} is not a valid name or {@code bytes} is too long
     * @throws IllegalStateException    if this engine is closed
     */
    void notify(RemoteEngine remote, String name, byte[] bytes);

    /** The notifications received since the last call, in arrival order (per sender: in the order sent); never null. */
    List<Notification> drainNotifies();

    /**
     * Diagnostics: what carries messages to {@code remote} now: {@code "shm"}, {@code "tcp"}, {@code "tls"}, {@code "self"}, or
     * {@code "none"} (not connected, or the connection is gone).
     */
    String transportTo(RemoteEngine remote);

    /** True once {@link #close()} was called. */
    boolean isClosed();

    /**
     * Leaves the job: batches under way end FAILED, connected engines are told (their batches to this one end FAILED),
     * the segments' and the engine's entries leave the store, and the connections, threads and pool are released.
     * Idempotent.
     */
    @Override
    void close();
}
