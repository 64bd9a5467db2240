package io.hcomm4j.transport;

import java.util.ArrayDeque;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every communicator channel's {@link MatchTable}, what they hold together, and the communicators that are gone (issue
 * 18, "limits that hold"). Guarded by the transport's match lock, but for {@link #dropped}, which the reader asks first.
 *
 * <p><b>One bound for the transport.</b> Unexpected messages and rendezvous requests from peers are counted across all
 * tables: at most {@code maxBytes} of eager payload ({@code HCOMM_UNEXPECTED_TOTAL}) and {@code maxCount} entries
 * ({@code HCOMM_UNEXPECTED_COUNT}). Per transport rather than per process: the transport owns the links and the tables,
 * its settings come from its session's config, and two sessions in one process (tests, a transfer engine beside a
 * communicator) should not fail each other's links. {@link #admit} is asked before a message from a peer becomes
 * unexpected: for an eager one when its header arrives, before its payload is allocated, so the overshoot is at most the
 * payloads being read at that moment (one per link, each within the peer's credit). Past the bound the link that brings
 * the message fails with {@link UnexpectedLimitException} naming the peer and the settings: memory stays bounded and
 * nothing is dropped silently. Not a wait: pausing reads until receives drain the tables could hold up the very message
 * a receive waits for. Well-behaved peers seldom come near it: each one's eager bytes are already held to its credit
 * ({@code HCOMM_UNEXPECTED_LIMIT}; beyond it the sender switches to rendezvous), so the bound is met by a flood or by
 * very many peers sending far ahead at once. Sends to self are the program's own memory and are not counted.
 *
 * <p><b>Closed communicators.</b> {@link #closed} removes a communicator's four channel tables, so a job that creates and
 * closes communicators keeps as many tables as it has open communicators; the last {@link #CLOSED_REMEMBERED} closed ones
 * are remembered so that a late message for one is dropped on arrival (its credit given back, its RTS refused), as for
 * an aborted one.
 */
final class MatchTables {
    /** Closed communicators whose late messages are dropped; an older one's message makes a table again (and is counted). */
    static final int CLOSED_REMEMBERED = 1024;

    private final int rank;
    private final long maxBytes;
    private final int maxCount;
    private final Map<Long, MatchTable> tables = new HashMap<>();
    /** The table {@link #get} returned last, and its channel: one communicator's ops usually follow each other. */
    private MatchTable lastTable;
    private long lastCommId;
    /** Communicators (ids without the channel bits) aborted or closed here: messages for them are dropped on arrival. */
    private final Set<Long> dead = ConcurrentHashMap.newKeySet();
    /** The closed ones among {@link #dead}, oldest first (at most {@link #CLOSED_REMEMBERED}). */
    private final ArrayDeque<Long> closedOrder = new ArrayDeque<>();
    private long bytes;
    private int count;

    MatchTables(int rank, long maxBytes, int maxCount) {
        this.rank = rank;
        this.maxBytes = maxBytes;
        this.maxCount = maxCount;
    }

    /** The table of channel {@code commId}, made if there is none. */
    MatchTable get(long commId) {
        if (lastTable != null && lastCommId == commId) return lastTable;
        MatchTable t = tables.computeIfAbsent(commId, id -> new MatchTable(this));
        lastCommId = commId;
        lastTable = t;
        return t;
    }

    /** The table of channel {@code commId}, or null. */
    MatchTable find(long commId) {
        return tables.get(commId);
    }

    Collection<MatchTable> all() {
        return tables.values();
    }

    Set<Map.Entry<Long, MatchTable>> entries() {
        return tables.entrySet();
    }

    /** Tables now (the four channels of each communicator that had traffic here): for tests. */
    int size() {
        return tables.size();
    }

    /** The communicator without its channel bits. */
    static long baseId(long commId) {
        return commId & ~(3L << 62);
    }

    /** Whether messages for {@code commId} are dropped on arrival (its communicator was aborted or closed); no lock needed. */
    boolean dropped(long commId) {
        return !dead.isEmpty() && dead.contains(baseId(commId));
    }

    /** Communicator {@code base} was aborted: its messages are dropped from now on. */
    void aborted(long base) {
        dead.add(base);
    }

    /** Communicator {@code base} was closed (its tables emptied by the caller): they go, its late messages are dropped. */
    void closed(long base) {
        for (long k = 0; k < 4; k++) tables.remove(base | (k << 62));
        if (lastTable != null && baseId(lastCommId) == base) lastTable = null;
        dead.add(base);
        closedOrder.remove(base);
        closedOrder.addLast(base);
        if (closedOrder.size() > CLOSED_REMEMBERED) dead.remove(closedOrder.removeFirst());
    }

    // ------------------------------------------------------------------------------------------- the bound

    /**
     * A message of {@code length} payload bytes from the peer of {@code l} is about to be held as unexpected: fails if
     * it would take the transport beyond either bound.
     */
    void admit(PeerLink l, long commId, long length) throws UnexpectedLimitException {
        if (count + 1L > maxCount || bytes + length > maxBytes) {
            throw new UnexpectedLimitException(rank, l.peer, commId, length, bytes, count, maxBytes, maxCount);
        }
    }

    /** {@code u} is held in a table. */
    void held(Unexpected u) {
        if (u.src() == rank) return;
        count++;
        if (u.data() != null) bytes += u.data().length;
    }

    /** {@code u} left its table. */
    void released(Unexpected u) {
        if (u.src() == rank) return;
        count--;
        if (u.data() != null) bytes -= u.data().length;
    }

    /** Unexpected messages and rendezvous requests from peers held now. */
    int count() {
        return count;
    }

    /** Their eager payload bytes. */
    long bytes() {
        return bytes;
    }
}
