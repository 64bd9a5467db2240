package io.hcomm4j.examples;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.hcomm4j.CommConfig;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.Status;
import io.hcomm4j.Stream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The seed of HComm4J, a C++ {@code CommunicationManager}, translated literally: {@link #initialize()} initializes the
 * library, creates the communicator, allocates a send and a receive buffer and creates a stream; {@link #send} and
 * {@link #recv} enqueue one op on the stream and synchronize it; {@link #cleanup()} destroys the stream, frees the
 * buffers, destroys the communicator and finalizes.
 *
 * <table>
 *   <caption>The seed's calls and what they are here</caption>
 *   <tr><th>C++ seed</th><th>HComm4J</th></tr>
 *   <tr><td>init the library</td><td>{@link Hcomm#init()}: rendezvous with every rank of the job</td></tr>
 *   <tr><td>create the communicator</td><td>{@link Hcomm#world()}</td></tr>
 *   <tr><td>allocate the buffers</td><td>{@code comm.memory().allocate(bytes)}: registered, off-heap</td></tr>
 *   <tr><td>create a stream</td><td>{@link Communicator#newStream()}</td></tr>
 *   <tr><td>Send(peer) / Recv(peer)</td><td>{@link Stream#send} / {@link Stream#recv}, then {@link Stream#synchronize()}</td></tr>
 *   <tr><td>Cleanup()</td><td>{@link Stream#close()}, {@link RegisteredBuffer#close()}, {@link Communicator#close()},
 *       {@link Hcomm#close()}</td></tr>
 * </table>
 *
 * <p><b>The calling pattern that deadlocks.</b> Every rank calling {@code send(peer)} and then {@code recv(peer)}
 * works for small buffers and hangs for large ones. A message up to {@code HCOMM_EAGER_LIMIT} (64 KiB by default)
 * travels with its header and is buffered by the receiver, so the send completes before any receive is posted. A
 * larger message is sent by rendezvous: the sender announces it and moves the data once the receiver has posted a
 * matching receive. If every rank is in its own {@code send}, no rank ever posts that receive, and each waits until
 * {@code HCOMM_TIMEOUT} (5 minutes by default) ends it with a {@link CommTimeoutException}. Nothing is wrong with the
 * class: the order of the calls is.
 *
 * <p><b>The patterns that do not.</b> Either order the blocking calls so that every send meets a posted receive
 * (even ranks {@code send} then {@code recv}, odd ranks {@code recv} then {@code send}: in a pair, and in a ring of any
 * size, where an odd count makes the last even rank wait for the first one's receive), or let the library post the
 * receive first: {@link #exchange} does both ops in one {@link Communicator#batch()} (what ncclGroupStart/End does for
 * NCCL), which posts every receive before any send starts and so cannot deadlock whatever the ranks' order. For new
 * code that both sends and receives, {@link #exchange} is the one to use. A receive started with
 * {@link Communicator#recvAsync} before the send and awaited after it works too, and so does the receive on a second
 * stream. Enqueuing {@code recv} then {@code send} on this one stream and synchronizing once is <em>not</em> a fix: a
 * stream starts each op when the previous one has completed, so every rank waits in its receive, at any size.
 *
 * <p>Run: {@code scripts/example.sh seed -n 2} (or {@code -n 4}): two jobs, one at 4 KiB and one at 64 MiB. Each rank
 * initializes a manager, sends and receives in a ring (to rank + 1, from rank − 1) in the order above, then exchanges
 * in a batch, checks every received element and cleans up. {@code --pattern literal} runs the deadlocking order
 * instead, with a short {@code HCOMM_TIMEOUT} ({@code --timeout 3s}): it completes at 4 KiB and ends at 64 MiB with
 * the {@link CommTimeoutException} a literal translation waits 5 minutes for. Options of one job (one size per process,
 * as in the seed): {@code --size 64M}, {@code --pattern ordered,exchange} (or {@code literal}), {@code --seed 17},
 * {@code --timeout} ({@code HCOMM_TIMEOUT} for this run).
 */
public final class CommunicationManager implements AutoCloseable {
    static final String NAME = "seed";
    /** The tag of every message; the seed sent one kind of message only. */
    private static final int TAG = 0;

    private final long bufferBytes;
    private Hcomm hcomm;
    private Communicator comm;
    private RegisteredBuffer sendBuffer;
    private RegisteredBuffer recvBuffer;
    private Stream stream;

    /**
     * A manager whose send and receive buffers will hold {@code bufferBytes} bytes each; nothing is initialized yet.
     *
     * @throws IllegalArgumentException if {@code bufferBytes <= 0}
     */
    public CommunicationManager(long bufferBytes) {
        if (bufferBytes <= 0) throw new IllegalArgumentException("bufferBytes must be positive, got " + bufferBytes);
        this.bufferBytes = bufferBytes;
    }

    /**
     * Initializes the library from the environment a launcher set ({@code hcomm launch}, torchrun, mpirun, srun),
     * creates the communicator, allocates the buffers and creates the stream.
     */
    public void initialize() {
        initialize(CommConfig.fromEnvironment());
    }

    /** As {@link #initialize()}, with the settings in {@code config} (e.g. a shorter {@code HCOMM_TIMEOUT}). */
    public void initialize(CommConfig config) {
        if (hcomm != null) throw new IllegalStateException("already initialized");
        hcomm = Hcomm.init(config);
        comm = hcomm.world();
        // From the session's registered pool: same-host peers read these buffers in place (no staging copy).
        sendBuffer = comm.memory().allocate(bufferBytes);
        recvBuffer = comm.memory().allocate(bufferBytes);
        stream = comm.newStream();
    }

    /**
     * Sends the whole send buffer to {@code peer}: enqueues the send on the stream, then synchronizes. Above
     * {@code HCOMM_EAGER_LIMIT} this returns only once {@code peer} has posted the matching receive.
     *
     * @throws CommTimeoutException if it did not complete within {@code HCOMM_TIMEOUT}
     */
    public void send(int peer) {
        stream.send(sendBuffer.segment(), peer, TAG);
        stream.synchronize();
    }

    /**
     * Receives one message from {@code peer} into the receive buffer: enqueues the receive on the stream, then
     * synchronizes.
     *
     * @throws CommTimeoutException if no message came within {@code HCOMM_TIMEOUT}
     * @throws IllegalStateException if the message was shorter than the buffer (the seed's peers send whole buffers)
     */
    public void recv(int peer) {
        var received = stream.recv(recvBuffer.segment(), peer, TAG);
        stream.synchronize();
        Status status = received.await(); // complete: synchronize returned
        if (status.bytes() != bufferBytes) {
            throw new IllegalStateException("rank " + comm.rank() + " received " + status.bytes() + " bytes from rank " + peer
                    + ", expected " + bufferBytes);
        }
    }

    /**
     * Sends the send buffer to {@code sendPeer} and receives from {@code recvPeer} into the receive buffer, in one
     * {@link Communicator#batch()}: the receive is posted before the send starts, so ranks that all call this never
     * deadlock, whatever the message size. {@code sendPeer} and {@code recvPeer} may be the same rank.
     *
     * @throws CommTimeoutException if the two ops did not complete within {@code HCOMM_TIMEOUT}
     */
    public void exchange(int sendPeer, int recvPeer) {
        comm.batch().recv(recvBuffer.segment(), recvPeer, TAG).send(sendBuffer.segment(), sendPeer, TAG).run();
    }

    /** This rank in the communicator. */
    public int rank() {
        return comm.rank();
    }

    /** The number of ranks. */
    public int size() {
        return comm.size();
    }

    /** The communicator {@link #initialize()} created, for what the seed did not do (e.g. a barrier). */
    public Communicator communicator() {
        return comm;
    }

    /** The send buffer: what {@link #send} sends. */
    public MemorySegment sendBuffer() {
        return sendBuffer.segment();
    }

    /** The receive buffer: where {@link #recv} receives. */
    public MemorySegment recvBuffer() {
        return recvBuffer.segment();
    }

    /**
     * Destroys the stream, frees the buffers, destroys the communicator and finalizes the library, in that order. Safe
     * after a failed or partial {@link #initialize()} and when called twice.
     */
    public void cleanup() {
        // Stream first: closing it waits for its queued ops, which use the buffers.
        if (stream != null) stream.close();
        if (sendBuffer != null) sendBuffer.close();
        if (recvBuffer != null) recvBuffer.close();
        if (comm != null) comm.close();
        if (hcomm != null) hcomm.close();
        stream = null;
        sendBuffer = null;
        recvBuffer = null;
        comm = null;
        hcomm = null;
    }

    /** {@link #cleanup()}, so that try-with-resources cleans up on every path. */
    @Override
    public void close() {
        cleanup();
    }

    /** Runs one rank; see the class comment for the options. */
    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(new Examples.Options(args, "size", "pattern", "seed", "timeout")));
    }

    /** The calling patterns {@link #run} knows; each sends its own data, so a message left from another fails the check. */
    enum Pattern {
        /** Even ranks send then receive, odd ranks receive then send: every send meets a posted receive. */
        ORDERED,
        /** {@link #exchange}: receive and send in one batch. */
        EXCHANGE,
        /** Every rank sends, then receives: deadlocks above the eager limit. */
        LITERAL;

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * One rank of the example: one manager, initialized, used in a ring (send to rank + 1, receive from rank − 1) with
     * each pattern, cleaned up. One size per process, as in the seed: a second {@link Hcomm#init()} after a
     * {@link Hcomm#close()} in the same process is not safe under launchers where rank 0 serves the store (torchrun,
     * mpirun, srun), because another rank's second init may still reach rank 0's first store, which is going away.
     */
    static boolean run(Examples.Options options) {
        long bytes = CommConfig.parseSize(options.stringValue("size", "64M"));
        if (bytes % Integer.BYTES != 0) throw new IllegalArgumentException("--size must be whole ints (a multiple of 4 bytes), got " + bytes);
        List<Pattern> patterns = new ArrayList<>();
        for (String p : options.stringValue("pattern", "ordered,exchange").split(",")) patterns.add(Pattern.valueOf(p.trim().toUpperCase(Locale.ROOT)));
        if (patterns.contains(Pattern.LITERAL) && patterns.size() > 1) {
            throw new IllegalArgumentException("--pattern literal runs alone: after it deadlocks, the ranks' announced sends are still pending");
        }
        long seed = Long.parseLong(options.stringValue("seed", "17"));
        // The literal pattern waits HCOMM_TIMEOUT when it deadlocks: short, so that the demonstration ends in seconds.
        String timeout = options.stringValue("timeout", patterns.contains(Pattern.LITERAL) ? "3s" : "");
        CommConfig.Builder settings = CommConfig.builderFromEnvironment();
        if (!timeout.isEmpty()) settings.timeout(CommConfig.parseDuration(timeout));

        CommunicationManager manager = new CommunicationManager(bytes);
        int rank;
        int size;
        boolean ok = true;
        List<String> outcomes = new ArrayList<>();
        try {
            manager.initialize(settings.build());
            rank = manager.rank();
            size = manager.size();
            if (size < 2) throw new IllegalArgumentException("the seed example sends to another rank: run it on 2 or more ranks");
            long eagerLimit = manager.hcomm.config().eagerLimit();
            say(rank, size, "initialize: Hcomm.init(), world rank %d of %d, send and receive buffers of %s (registered, off-heap),"
                    + " a stream", rank, size, human(bytes));
            int next = (rank + 1) % size;
            int prev = (rank + size - 1) % size;
            for (Pattern pattern : patterns) {
                fill(manager.sendBuffer(), seed, pattern.ordinal(), rank);
                // a message that did not arrive must not pass the check on what an earlier one left
                manager.recvBuffer().fill((byte) 0);
                String how = switch (pattern) {
                    case ORDERED -> rank % 2 == 0 ? "send(" + next + ") then recv(" + prev + ") (even rank: sends first)"
                            : "recv(" + prev + ") then send(" + next + ") (odd rank: receives first)";
                    case EXCHANGE -> "exchange(" + next + ", " + prev + ") (one comm.batch(): the receive is posted first)";
                    case LITERAL -> "send(" + next + ") then recv(" + prev + "), as every rank does";
                };
                long start = System.nanoTime();
                try {
                    switch (pattern) {
                        case ORDERED -> {
                            if (rank % 2 == 0) {
                                manager.send(next);
                                manager.recv(prev);
                            } else {
                                manager.recv(prev);
                                manager.send(next);
                            }
                        }
                        case EXCHANGE -> manager.exchange(next, prev);
                        case LITERAL -> {
                            manager.send(next);
                            manager.recv(prev);
                        }
                    }
                } catch (CommTimeoutException e) {
                    if (pattern != Pattern.LITERAL) throw e;
                    double seconds = (System.nanoTime() - start) / 1e9;
                    say(rank, size, "%s literal: %s: deadlocked (%s is above HCOMM_EAGER_LIMIT %s, so the send waits for a receive"
                            + " that rank %d, itself in send, never posts); HCOMM_TIMEOUT (%s) ended it after %.1f s: %s: %s",
                            human(bytes), how, human(bytes), human(eagerLimit), next, timeout, seconds,
                            e.getClass().getSimpleName(), e.getMessage());
                    // every rank has seen its own timeout before any rank's cleanup closes the connections the others
                    // are still waiting on (their waits would end in PeerFailedException instead)
                    manager.communicator().barrier();
                    // the deadlock is what the literal order does above the eager limit; below it, it is a failure
                    ok &= bytes > eagerLimit;
                    outcomes.add(Examples.fmt("literal: deadlocked, as %s is above HCOMM_EAGER_LIMIT (%s); CommTimeoutException"
                            + " after %.1f s (HCOMM_TIMEOUT %s)", human(bytes), human(eagerLimit), seconds, timeout));
                    continue;
                }
                long wrong = wrongElements(manager.recvBuffer(), seed, pattern.ordinal(), prev);
                ok &= wrong == 0;
                long ints = bytes / Integer.BYTES;
                say(rank, size, "%s %s: %s: %s (hash %016x)", human(bytes), pattern.label(), how,
                        wrong == 0 ? "all " + ints + " ints from rank " + prev + " correct" : wrong + " of " + ints + " ints from rank " + prev + " WRONG",
                        hash(manager.recvBuffer()));
                String checked = wrong == 0 ? "every element from rank " + prev + " correct" : wrong + " elements from rank " + prev + " wrong";
                String outcome = pattern.label() + ": " + checked;
                if (pattern == Pattern.LITERAL) {
                    // the literal order completes only when the send is eager: completing above the limit means this
                    // example no longer shows what it claims
                    ok &= bytes <= eagerLimit;
                    say(rank, size, "%s literal: completed because %s is at most HCOMM_EAGER_LIMIT (%s): the send was done before"
                            + " rank %d posted its receive", human(bytes), human(bytes), human(eagerLimit), next);
                    outcome = "literal: completed, as " + human(bytes) + " is at most HCOMM_EAGER_LIMIT (" + human(eagerLimit) + "), " + checked;
                }
                outcomes.add(outcome);
            }
        } finally {
            manager.cleanup();
        }
        say(rank, size, "cleanup: stream destroyed, buffers freed, communicator destroyed, session closed");
        return Examples.result(NAME, rank, size, "", human(bytes) + " in a ring, " + String.join("; ", outcomes), ok);
    }

    /**
     * What {@code sender} puts at index {@code i} of message {@code message} (a pattern's ordinal): a hash of all four, so
     * that a message of another run, pattern or sender, or a buffer left zeroed, fails the check.
     */
    static int expected(long seed, int message, int sender, long i) {
        long z = seed * 0x9E3779B97F4A7C15L + ((long) message << 40) + ((long) sender << 32) + i;
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
        return (int) (z ^ (z >>> 33));
    }

    /** Fills {@code buffer} with what {@code sender} sends as message {@code message}. */
    static void fill(MemorySegment buffer, long seed, int message, int sender) {
        long n = buffer.byteSize() / Integer.BYTES;
        for (long i = 0; i < n; i++) buffer.setAtIndex(JAVA_INT, i, expected(seed, message, sender, i));
    }

    /** How many ints of {@code buffer} differ from what {@code sender} sends as message {@code message}. */
    static long wrongElements(MemorySegment buffer, long seed, int message, int sender) {
        long n = buffer.byteSize() / Integer.BYTES;
        long wrong = 0;
        for (long i = 0; i < n; i++) {
            if (buffer.getAtIndex(JAVA_INT, i) != expected(seed, message, sender, i)) wrong++;
        }
        return wrong;
    }

    /** FNV-1a over the ints of {@code buffer}: printed with each check, so a test can compare it with the sender's data. */
    static long hash(MemorySegment buffer) {
        long h = 0xcbf29ce484222325L;
        long n = buffer.byteSize() / Integer.BYTES;
        for (long i = 0; i < n; i++) {
            h ^= Integer.toUnsignedLong(buffer.getAtIndex(JAVA_INT, i));
            h *= 0x100000001b3L;
        }
        return h;
    }

    private static void say(int rank, int size, String format, Object... args) {
        System.out.println(NAME + " rank " + rank + "/" + size + ": " + Examples.fmt(format, args));
    }

    /** {@code 4 KiB}, {@code 64 MiB}, or bytes when not a whole KiB. */
    static String human(long bytes) {
        if (bytes % (1L << 30) == 0) return bytes / (1L << 30) + " GiB";
        if (bytes % (1L << 20) == 0) return bytes / (1L << 20) + " MiB";
        if (bytes % 1024 == 0) return bytes / 1024 + " KiB";
        return bytes + " B";
    }
}
