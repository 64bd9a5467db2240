package io.hcomm4j;

import java.lang.foreign.MemorySegment;

/**
 * A group of ranks that exchange messages: ranks {@code 0 .. size()-1}. Obtained from {@link Hcomm#world()}.
 *
 * <p>Point-to-point ops ({@link PointToPointOps}: send and receive of segments and arrays) carry a tag ({@code >= 0}). Messages from one sender with one tag are received
 * in the order they were sent (the MPI non-overtaking rule). Every call is thread-safe; every blocking call
 * has a deadline ({@code HCOMM_TIMEOUT}) and throws {@link CommTimeoutException} naming the op and peer.
 * A peer that dies fails the ops that wait for it with {@link PeerFailedException}. Bad arguments throw
 * {@link IllegalArgumentException} naming the argument and the rank.
 *
 * <p>Sizes are {@code long}: a single message may exceed 2 GiB when sent from a {@link MemorySegment}.
 * Java objects travel through {@link ObjectCollectives} ({@code allGatherObject}, {@code sendObject} ...).
 *
 * <p>The reducing collectives take a {@link ReduceOp} (defined on the types {@link ReduceOp#accepts} says) or, through
 * {@link UserReductions}, a user's {@link ReduceFunction}.
 */
public non-sealed interface Communicator extends PointToPointOps, ArrayCollectives, ObjectCollectives, UserReductions, AutoCloseable {
    /** Receive from any source. */
    int ANY_SOURCE = -1;
    /** Receive with any tag. */
    int ANY_TAG = -1;

    /** This process's rank in the communicator. */
    int rank();

    /** Number of ranks in the communicator. */
    int size();

    /**
     * Which of this communicator's ranks share a host: host index, local rank and local size of each rank, leaders
     * (from the host identities exchanged at init; ranks in different network namespaces or containers are on
     * different hosts). A sub-communicator's topology is its parent's restricted to its members. Collectives use it for
     * their two-level (hierarchical) algorithms.
     */
    Topology topology();

    /**
     * Waits until a message from {@code peer} (or {@link #ANY_SOURCE}) with {@code tag} (or {@link #ANY_TAG}) can be
     * received, and returns its source, tag and size without receiving it: allocate a buffer of that size,
     * then {@code recv} it with the returned source and tag. Receives posted earlier take messages first.
     */
    default Status probe(int peer, int tag) {
        return probeAsync(peer, tag).await();
    }

    /** The asynchronous form of {@link #probe}. */
    CommFuture<Status> probeAsync(int peer, int tag);

    /**
     * The status of a message from {@code peer} (or ANY_SOURCE) with {@code tag} (or ANY_TAG) that a receive
     * posted now would get, if one has arrived; never waits (MPI_Iprobe).
     */
    java.util.Optional<Status> iprobe(int peer, int tag);

    // ------------------------------------------------------------------------------------ collectives
    //
    // Every rank calls the same collectives in the same order with matching count, type, op and root
    // (MPI/NCCL semantics). Counts are elements of the given type; buffers must hold them (checked, naming
    // the argument). The blocking form runs on the caller's thread; the *Async form runs on the
    // communicator's collective thread, in call order. Passing the same segment as send and receive buffer
    // works in place.

    /**
     * Element-wise reduction of every rank's {@code send} ({@code count} elements) with {@code op}; every rank
     * receives the result in {@code recv}, bit-identical on every rank. {@code send} may equal {@code recv}
     * (in place). AVG is the sum divided by {@link #size()}. An op the type does not define (a bitwise op on a
     * floating type, AVG on BOOL: {@link ReduceOp#accepts}) is refused with an {@link IllegalArgumentException}.
     */
    void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /** Asynchronous {@link #allReduce}. */
    CommFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    // Counts from sizes: each of these takes the count of elements from a buffer's size (rounded up, so a buffer that is
    // not a whole number of elements is refused on every rank by the usual check, naming its size and the size needed).

    /** {@link #allReduce} of all of {@code send} (its size in elements of {@code type}). */
    default void allReduce(MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        allReduce(send, recv, elements(send, type), type, op);
    }

    /** In-place {@link #allReduce} of all of {@code buf}. */
    default void allReduce(MemorySegment buf, DataType type, ReduceOp op) {
        allReduce(buf, buf, elements(buf, type), type, op);
    }

    /** {@link #allReduceAsync} of all of {@code send}. */
    default CommFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        return allReduceAsync(send, recv, elements(send, type), type, op);
    }

    /** {@link #reduce} of all of {@code send}. */
    default void reduce(MemorySegment send, MemorySegment recv, DataType type, ReduceOp op, int root) {
        reduce(send, recv, elements(send, type), type, op, root);
    }

    /** {@link #broadcast} of all of {@code buf}. */
    default void broadcast(MemorySegment buf, DataType type, int root) {
        broadcast(buf, elements(buf, type), type, root);
    }

    /** {@link #allGather} of all of {@code send} from each rank. */
    default void allGather(MemorySegment send, MemorySegment recv, DataType type) {
        allGather(send, recv, elements(send, type), type);
    }

    /** {@link #reduceScatter} into all of {@code recv} (its size is each rank's block). */
    default void reduceScatter(MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        reduceScatter(send, recv, elements(recv, type), type, op);
    }

    /** {@link #gather} of all of {@code send} from each rank. */
    default void gather(MemorySegment send, MemorySegment recv, DataType type, int root) {
        gather(send, recv, elements(send, type), type, root);
    }

    /** {@link #scatter} into all of {@code recv} on each rank. */
    default void scatter(MemorySegment send, MemorySegment recv, DataType type, int root) {
        scatter(send, recv, elements(recv, type), type, root);
    }

    /** {@link #allToAll} of all of {@code send} (size ranks' blocks). */
    default void allToAll(MemorySegment send, MemorySegment recv, DataType type) {
        allToAll(send, recv, elements(send, type) / size() + (elements(send, type) % size() == 0 ? 0 : 1), type);
    }

    /** {@link #scan} of all of {@code send}. */
    default void scan(MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        scan(send, recv, elements(send, type), type, op);
    }

    /** Elements of {@code type} in {@code buf}, rounded up (see the count-from-size overloads). */
    private static long elements(MemorySegment buf, DataType type) {
        java.util.Objects.requireNonNull(type, "type");
        long es = type.byteSize();
        return buf == null ? 0 : (buf.byteSize() + es - 1) / es;
    }

    /** In-place all-reduce of a {@code float[]} (FLOAT32). */
    default void allReduce(float[] data, ReduceOp op) {
        MemorySegment s = MemorySegment.ofArray(data);
        allReduce(s, s, data.length, DataType.FLOAT32, op);
    }

    /** In-place all-reduce of a {@code double[]} (FLOAT64). */
    default void allReduce(double[] data, ReduceOp op) {
        MemorySegment s = MemorySegment.ofArray(data);
        allReduce(s, s, data.length, DataType.FLOAT64, op);
    }

    /** In-place all-reduce of an {@code int[]} (INT32). */
    default void allReduce(int[] data, ReduceOp op) {
        MemorySegment s = MemorySegment.ofArray(data);
        allReduce(s, s, data.length, DataType.INT32, op);
    }

    /** In-place all-reduce of a {@code long[]} (INT64). */
    default void allReduce(long[] data, ReduceOp op) {
        MemorySegment s = MemorySegment.ofArray(data);
        allReduce(s, s, data.length, DataType.INT64, op);
    }

    /** Out-of-place all-reduce of {@code float[]}s (FLOAT32): {@code recv} gets the reduction of every rank's {@code send}. */
    default void allReduce(float[] send, float[] recv, ReduceOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT32, op);
    }

    /** Out-of-place all-reduce of {@code double[]}s (FLOAT64): {@code recv} gets the reduction of every rank's {@code send}. */
    default void allReduce(double[] send, double[] recv, ReduceOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT64, op);
    }

    /** Out-of-place all-reduce of {@code int[]}s (INT32): {@code recv} gets the reduction of every rank's {@code send}. */
    default void allReduce(int[] send, int[] recv, ReduceOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT32, op);
    }

    /** Out-of-place all-reduce of {@code long[]}s (INT64): {@code recv} gets the reduction of every rank's {@code send}. */
    default void allReduce(long[] send, long[] recv, ReduceOp op) {
        allReduce(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT64, op);
    }

    /** Like {@link #allReduce} but only {@code root} receives the result in {@code recv} (ignored elsewhere). */
    void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root);

    /** Asynchronous {@link #reduce}. */
    CommFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root);

    /**
     * Reduces every rank's {@code send} ({@code size() * recvCount} elements) and scatters the result: rank r
     * receives block r ({@code recvCount} elements) in {@code recv}.
     */
    void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op);

    /** Asynchronous {@link #reduceScatter}. */
    CommFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op);

    /** Reduce-scatter of different block sizes: {@code send} holds blocks of {@code recvCounts[r]} elements in rank order. */
    void reduceScatterV(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op);

    /** Asynchronous {@link #reduceScatterV}. */
    CommFuture<Void> reduceScatterVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, DataType type, ReduceOp op);

    /** Copies {@code count} elements of root's {@code buf} into every rank's {@code buf}. */
    void broadcast(MemorySegment buf, long count, DataType type, int root);

    /** Broadcast of a {@code float[]} (FLOAT32) from {@code root}: every rank's array gets the root's. */
    default void broadcast(float[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.FLOAT32, root);
    }

    /** Broadcast of a {@code double[]} (FLOAT64) from {@code root}: every rank's array gets the root's. */
    default void broadcast(double[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.FLOAT64, root);
    }

    /** Broadcast of a {@code int[]} (INT32) from {@code root}: every rank's array gets the root's. */
    default void broadcast(int[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.INT32, root);
    }

    /** Broadcast of a {@code long[]} (INT64) from {@code root}: every rank's array gets the root's. */
    default void broadcast(long[] data, int root) {
        broadcast(MemorySegment.ofArray(data), data.length, DataType.INT64, root);
    }

    /** Asynchronous {@link #broadcast}. */
    CommFuture<Void> broadcastAsync(MemorySegment buf, long count, DataType type, int root);

    /**
     * Every rank contributes {@code count} elements ({@code send}); every rank receives all contributions in
     * rank order in {@code recv} ({@code size() * count} elements). In place: {@code send} may be rank's own
     * block of {@code recv}, or {@code recv} itself (then the own block is already in place).
     */
    void allGather(MemorySegment send, MemorySegment recv, long count, DataType type);

    /** All-gather of {@code float[]}s (FLOAT32): block r of {@code recv} ({@code send.length} elements) is rank r's {@code send}. */
    default void allGather(float[] send, float[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT32);
    }

    /** All-gather of {@code double[]}s (FLOAT64): block r of {@code recv} ({@code send.length} elements) is rank r's {@code send}. */
    default void allGather(double[] send, double[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.FLOAT64);
    }

    /** All-gather of {@code int[]}s (INT32): block r of {@code recv} ({@code send.length} elements) is rank r's {@code send}. */
    default void allGather(int[] send, int[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT32);
    }

    /** All-gather of {@code long[]}s (INT64): block r of {@code recv} ({@code send.length} elements) is rank r's {@code send}. */
    default void allGather(long[] send, long[] recv) {
        allGather(MemorySegment.ofArray(send), MemorySegment.ofArray(recv), send.length, DataType.INT64);
    }

    /** Asynchronous {@link #allGather}. */
    CommFuture<Void> allGatherAsync(MemorySegment send, MemorySegment recv, long count, DataType type);

    /**
     * All-gather of different counts: rank r contributes {@code recvCounts[r]} elements, placed at element
     * offset {@code displs[r]} of every rank's {@code recv}.
     */
    void allGatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type);

    /** Asynchronous {@link #allGatherV}. */
    CommFuture<Void> allGatherVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type);

    /** Root receives every rank's {@code count} elements in rank order in {@code recv} (ignored on other ranks). */
    void gather(MemorySegment send, MemorySegment recv, long count, DataType type, int root);

    /** Asynchronous {@link #gather}. */
    CommFuture<Void> gatherAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root);

    /** Gather of different counts: rank r sends {@code recvCounts[r]} elements, root places them at {@code displs[r]}. */
    void gatherV(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type, int root);

    /** Asynchronous {@link #gatherV}. */
    CommFuture<Void> gatherVAsync(MemorySegment send, MemorySegment recv, long[] recvCounts, long[] displs, DataType type, int root);

    /** Root's {@code send} holds {@code size() * count} elements; rank r receives block r in {@code recv}. */
    void scatter(MemorySegment send, MemorySegment recv, long count, DataType type, int root);

    /** Asynchronous {@link #scatter}. */
    CommFuture<Void> scatterAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root);

    /** Scatter of different counts: rank r receives {@code sendCounts[r]} elements from root's {@code displs[r]}. */
    void scatterV(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv, DataType type, int root);

    /** Asynchronous {@link #scatterV}. */
    CommFuture<Void> scatterVAsync(MemorySegment send, long[] sendCounts, long[] displs, MemorySegment recv, DataType type, int root);

    /** Block b ({@code count} elements) of every rank's {@code send} goes to rank b's {@code recv} at block (sender's rank). */
    void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type);

    /** Asynchronous {@link #allToAll}. */
    CommFuture<Void> allToAllAsync(MemorySegment send, MemorySegment recv, long count, DataType type);

    /** All-to-all of different counts and placements (elements), like MPI_Alltoallv. */
    void allToAllV(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv, long[] recvCounts,
                   long[] recvDispls, DataType type);

    /** Asynchronous {@link #allToAllV}. */
    CommFuture<Void> allToAllVAsync(MemorySegment send, long[] sendCounts, long[] sendDispls, MemorySegment recv,
                                    long[] recvCounts, long[] recvDispls, DataType type);

    /**
     * Inclusive prefix reduction (MPI_Scan): rank r receives in {@code recv} the element-wise {@code op} of the
     * {@code send} buffers of ranks 0..r, combined left to right in rank order (so a result is the same bits from run
     * to run). {@code send} may equal {@code recv}. AVG is refused (it has no prefix form).
     */
    void scan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /** Asynchronous {@link #scan}. */
    CommFuture<Void> scanAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /**
     * Exclusive prefix reduction (MPI_Exscan): rank r ≥ 1 receives the {@code op} of ranks 0..r−1's {@code send};
     * rank 0's {@code recv} is left as it was. {@code send} may equal {@code recv}. AVG is refused.
     */
    void exscan(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /** Asynchronous {@link #exscan}. */
    CommFuture<Void> exscanAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /** In-place inclusive scan of a {@code long[]} (INT64). */
    default void scan(long[] data, ReduceOp op) {
        MemorySegment s = MemorySegment.ofArray(data);
        scan(s, s, data.length, DataType.INT64, op);
    }

    /** In-place inclusive scan of a {@code double[]} (FLOAT64). */
    default void scan(double[] data, ReduceOp op) {
        MemorySegment s = MemorySegment.ofArray(data);
        scan(s, s, data.length, DataType.FLOAT64, op);
    }

    /** Returns once every rank has called it. */
    void barrier();

    /**
     * A barrier that names the ranks that did not come (torch.distributed's {@code monitored_barrier}): rank 0 waits up
     * to {@code timeout} for every other rank, then every rank returns, or throws the same {@link CommTimeoutException}
     * naming the late ranks ("monitoredBarrier #3: ranks [2, 5] have not arrived within 10.0 s ..."). It does not go
     * through the collective sequence, so it works while collectives are stuck; every rank must call it equally often.
     *
     * @throws IllegalArgumentException if {@code timeout} is not positive
     */
    void monitoredBarrier(java.time.Duration timeout);

    /**
     * Collective: a communicator of the ranks listed (in that order: {@code ranks[i]} is rank i of the new one), like
     * torch.distributed's {@code new_group}. Every rank of this communicator calls it with the same list; a rank not in
     * it gets {@code null}. Built by {@link #split} (no new connections).
     *
     * @throws IllegalArgumentException     if a rank is out of range or listed twice, or the list is empty (on every rank)
     * @throws CollectiveMismatchException if the ranks passed different lists (naming one that differs, on every rank)
     */
    default Communicator newGroup(int... ranks) {
        int me = rank();
        int n = size();
        // first every rank's list, so a rank whose list differs is named on every rank, and a bad list fails alike on all
        long mine = ranks == null ? 0 : java.util.Arrays.hashCode(ranks) * 0x9E3779B97F4A7C15L + ranks.length + 1;
        long[] all = new long[n];
        allGather(new long[] {mine}, all);
        for (int r = 0; r < n; r++) {
            if (all[r] != all[0]) {
                throw new CollectiveMismatchException("rank " + me + ": newGroup: rank " + r + " passed a different list of ranks than rank 0");
            }
        }
        if (ranks == null || ranks.length == 0) throw new IllegalArgumentException("rank " + me + ": newGroup: ranks is empty or null");
        int index = -1;
        boolean[] seen = new boolean[n];
        for (int i = 0; i < ranks.length; i++) {
            int r = ranks[i];
            if (r < 0 || r >= n) throw new IllegalArgumentException("rank " + me + ": newGroup: ranks[" + i + "] = " + r + " is out of range [0, " + n + ")");
            if (seen[r]) throw new IllegalArgumentException("rank " + me + ": newGroup: rank " + r + " is listed twice");
            seen[r] = true;
            if (r == me) index = i;
        }
        return split(index < 0 ? UNDEFINED : 0, index);
    }

    /**
     * The job's key-value store for the application's own keys (under a namespace of its own, so they never meet the
     * library's), the same for every communicator of the job; valid until the session closes.
     */
    KeyValueStore store();

    /** Asynchronous {@link #barrier}. */
    CommFuture<Void> barrierAsync();

    /**
     * Collective: runs every collective over sizes and kinds of memory that take each of the library's paths, with
     * checked results, in rounds until no rank's JIT compiler has had anything to compile for a few rounds or the
     * shortest of the ranks' {@code budget}s is spent (one round at least; the ranks decide together, so every rank
     * stops after the same round). Its calls count in {@link #metrics()} like any others. A fresh JVM runs the
     * collectives interpreted until its JIT has compiled them, 100-1000x slower than steady state for the first thousands
     * of calls; call this before the first latency-sensitive work (an inference service before it takes requests), or set
     * {@code HCOMM_WARMUP} to have init do it. Returns the rounds run. While it runs it holds about 9 MiB of registered memory from the pool ({@link #memory()}), as much off-heap
     * and as much on the heap; afterwards the communicator keeps the staging buffers its paths for unregistered memory
     * use (about 8 MiB), as it would after calls of those sizes.
     *
     * @throws IllegalArgumentException if {@code budget} is negative
     * @throws MemoryLimitException if the pool cannot lend its buffers ({@code HCOMM_MEM_POOL_MAX}); it then fails
     *         before its first collective and gives back what it took
     * @throws IllegalStateException if a result came out wrong
     */
    int warmUp(java.time.Duration budget);

    /** Color for {@link #split} of a rank that joins no new communicator (it gets {@code null}). */
    int UNDEFINED = -1;

    /**
     * Collective: a new communicator of the ranks that passed the same {@code color} ({@code >= 0}), ranked by
     * {@code key}, ties by rank in this communicator; {@code null} for {@link #UNDEFINED}. It reuses this
     * communicator's connections (one exchange of colors and keys, no new sockets), and its messages never mix
     * with this one's. Close it when done; closing the session closes it too.
     */
    Communicator split(int color, int key);

    /** Collective: a communicator of the same ranks whose messages never mix with this one's (like MPI_Comm_dup). */
    Communicator dup();

    /**
     * Collective over the live members, fault tolerant (like {@code MPIX_Comm_shrink} and {@code ncclCommShrink}): a new
     * communicator of the members that are not failed, ranked contiguously in this communicator's order. Every live
     * member calls it; the failed ones are not waited for. Callable whatever this communicator's {@link #health()}
     * (READY: the result is like {@link #dup()}; DEGRADED or FAILED: the way to go on after a failure).
     *
     * <p>The survivors agree on the failed set through the session's store (each publishes the failures it knows; once
     * every member it does not know to have failed has published, the first to get there decides for all with one
     * compare-and-set, and everybody adopts that decision), so all callers get the same members, the same ranks and
     * the same new id, and no message of this communicator mixes with the new one's. The new communicator reuses the
     * session's connections (no new sockets), has its own health (READY unless a member is already known to have
     * failed) and its collectives run with algorithms for its size. This communicator stays as it was (DEGRADED or
     * FAILED); close it when done.
     *
     * <p>A member that fails while the others shrink is either left out (known failed before the decision) or a member
     * of the new communicator, which then becomes DEGRADED: shrink that one again.
     *
     * @throws io.hcomm4j.CommTimeoutException if a member neither called {@code shrink} nor was known to have failed
     *         within {@link CommConfig#timeout()} (the message names it)
     * @throws io.hcomm4j.CommAbortedException if the others decided that this rank failed
     */
    Communicator shrink();

    /**
     * Collective over the members (like {@code ncclCommGrow} and elastic torchrun): waits for {@code joiners}
     * replacement processes that called {@link Hcomm#join(CommConfig)} on the job's store, and returns a communicator of
     * this one's members (ranks unchanged) followed by the joiners (ranks {@code size()} on, in the order they
     * registered); each joiner gets the same communicator as its {@link Hcomm#world()}.
     *
     * <p>A joiner takes over the world rank of a failed process that is not a member of this communicator (the lowest
     * first), with a new incarnation number: the peers drop what they kept of the failed process, refuse connections
     * from its old incarnation, and connect to the joiner's address; the old communicators keep that rank as failed.
     * So a job grows back to its initial world size at most. Joiners authenticate like every rank (the job secret and
     * the job's token). Rank 0 of this communicator assigns the slots, through the store, which must have outlived the
     * failures (rank 0 of the job hosts it unless a launcher does: {@code HCOMM_STORE_HOSTED}).
     *
     * @throws io.hcomm4j.CommTimeoutException if fewer than {@code joiners} processes registered within
     *         {@link CommConfig#timeout()}, or fewer failed world ranks than {@code joiners} are free (the message says which)
     * @throws io.hcomm4j.PeerFailedException if this communicator has failed members (shrink it first)
     */
    Communicator grow(int joiners);

    /**
     * A batch of point-to-point ops that start together (like ncclGroupStart/End or HcclBatchSendRecv): all its
     * receives are posted before any of its sends starts, so a batch cannot deadlock whatever the order of its
     * ops on the ranks.
     */
    Batch batch();

    /** A new ordered queue of ops on this communicator (see {@link Stream}), of {@link Stream.Priority#NORMAL} priority. */
    Stream newStream();

    /**
     * A new ordered queue of ops on this communicator whose sends have {@code priority}: over TCP, the payload of a
     * {@link Stream.Priority#HIGH} send goes ahead of the queued chunks of other messages to the same peer, so a
     * latency-critical message (an inference request, a control message) is not stuck behind a bulk transfer such as a
     * gradient all-reduce. Collectives on the stream are of that priority too (the chunks of their messages).
     */
    Stream newStream(Stream.Priority priority);

    /**
     * The session's pool of registered memory, shared by every communicator of the {@link Hcomm} session: off-heap
     * buffers in shared-memory files that same-host peers can map (the fast path for same-host transports).
     * {@code try (RegisteredBuffer b = comm.memory().allocate(bytes)) { ... b.segment() ... }}; closing a buffer returns it to
     * the pool; closing the session closes the pool. See {@link Memory}.
     */
    Memory memory();

    // ------------------------------------------------------------------------------------ one-sided

    /**
     * Collective: a {@link Window} over {@code bytes} bytes (zeroed) that each member allocates from the registered
     * pool ({@link #memory()}), so same-host members read and write each other's blocks directly. Members may pass
     * different sizes (0 too). Close it when done (collective too).
     *
     * @throws IllegalArgumentException if {@code bytes} is negative
     * @throws MemoryLimitException if the pool cannot hold it
     */
    Window allocateWindow(long bytes);

    /**
     * Collective: a {@link Window} over the caller's own {@code segment} (which must stay valid, and be usable from
     * any thread, until the window is closed). A segment of the registered pool is reached directly by same-host
     * members; any other through the owner's progress engine, as between hosts.
     */
    Window createWindow(MemorySegment segment);

    /** True once {@link #close()} was called. */
    boolean isClosed();

    /**
     * Closes the communicator: pending ops fail with {@link CommAbortedException}. Closing the world
     * communicator does not close the {@link Hcomm} session; closing the session closes every communicator.
     */
    @Override
    void close();

    // ------------------------------------------------------------------------------------ fault tolerance

    /**
     * The health of this communicator: {@link Health.State#READY}, {@link Health.State#DEGRADED} (members failed:
     * collectives fail, point-to-point with live members works) or {@link Health.State#FAILED} (aborted), with the
     * failed members. A member's failure is known to every rank within {@code HCOMM_HEARTBEAT_TIMEOUT} (at once when its
     * process dies: its connections close); see docs/reliability.md.
     */
    Health health();

    /**
     * What this communicator's ops did so far, one entry per op that ran at least once: calls, failures, bytes, and for
     * collectives the time (total, slowest, a power-of-two histogram in µs). Recording costs a few atomic adds per op
     * and allocates nothing; each collective is also a JFR event ({@code io.hcomm4j.Collective}) when a recording is on.
     *
     * @return a snapshot, in API order of the ops
     */
    java.util.List<OpStats> metrics();

    /**
     * Writes this rank's flight record to {@code file} as JSON: the last {@code HCOMM_TRACE_BUFFER} ops (default 2048) of
     * every open communicator of its session, each with its sequence number, op, sizes, algorithm, state and times
     * (schema in docs/observability.md). Call it on every rank into one folder, with the file name
     * {@code hcomm-trace-rank<world rank>.json}, and {@code hcomm trace FOLDER} names the first op where the ranks part
     * ways. Ranks also write it by themselves to {@code HCOMM_TRACE_DIR} on a timeout or an abort.
     *
     * @throws java.io.UncheckedIOException naming the file if it cannot be written
     */
    void dumpTrace(java.nio.file.Path file);

    /**
     * Calls {@code listener} with the new health on every change of {@link #health()}. Listeners run one at a time, in
     * the order of the changes, on the session's event thread ({@code hcomm-events-<rank>}), never while the library
     * holds a lock: a listener may call this communicator, even block in an op (which delays later notifications). An
     * exception it throws is logged and ignored.
     */
    void addHealthListener(java.util.function.Consumer<Health> listener);

    /** Stops calling {@code listener} (registered with {@link #addHealthListener}); no effect if it is not registered. */
    void removeHealthListener(java.util.function.Consumer<Health> listener);

    /**
     * Aborts this communicator, from any thread, and returns at once: every pending op on it (blocked or async, on any
     * stream, collective or point-to-point) fails with {@link CommAbortedException}, later ops fail the same way, and
     * every other member is told, so their pending and later ops on it fail with {@link CommAbortedException} too
     * (within milliseconds for connected members; the notice to a member this rank never talked to goes over a new
     * connection). The health becomes {@link Health.State#FAILED}. Other communicators of the session are not affected.
     * Idempotent. Still {@link #close()} it afterwards.
     */
    void abort();
}
