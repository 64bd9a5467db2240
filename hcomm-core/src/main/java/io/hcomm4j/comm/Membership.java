package io.hcomm4j.comm;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Topology;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How a communicator makes others: split and dup (one collective among its members), shrink (the survivors agree in
 * the store on who failed) and grow (joining processes take over failed world slots). Every member derives the same
 * child id from this communicator's id and a counter, so no id is ever negotiated.
 */
final class Membership {
    private final CommunicatorImpl comm;
    private final CommunicatorHealth health;
    private final Session session;
    private final PeerTransport transport;
    private final long commId;
    private final int rank;
    private final int size;
    private final Topology topology;
    /** Splits and dups made so far: part of a child's id, so siblings never share one. */
    private final AtomicLong children = new AtomicLong();

    Membership(CommunicatorImpl comm, CommunicatorHealth health, Session session, PeerTransport transport, Topology topology) {
        this.comm = comm;
        this.health = health;
        this.session = session;
        this.transport = transport;
        this.commId = comm.id();
        this.rank = comm.rank();
        this.size = comm.size();
        this.topology = topology;
    }

    /** {@link io.hcomm4j.Communicator#split}: one all-gather of every rank's (color, key). */
    Communicator split(int color, int key) {
        comm.checkOpen();
        if (color < 0 && color != Communicator.UNDEFINED) {
            throw new IllegalArgumentException("rank " + rank + ": split: color " + color + " must be >= 0 or Communicator.UNDEFINED");
        }
        long child = children.incrementAndGet();
        // the one exchange: every rank's (color, key)
        MemorySegment mine = MemorySegment.ofArray(new int[] {color, key});
        int[] all = new int[2 * size];
        comm.allGather(mine, MemorySegment.ofArray(all), 2, DataType.INT32);
        if (color == Communicator.UNDEFINED) return null;
        Integer[] members = java.util.stream.IntStream.range(0, size).filter(r -> all[2 * r] == color).boxed()
                .sorted(java.util.Comparator.<Integer>comparingInt(r -> all[2 * r + 1]).thenComparingInt(r -> r))
                .toArray(Integer[]::new);
        int[] worldRanks = new int[members.length];
        int[] commRanks = new int[members.length];
        int myRank = -1;
        for (int i = 0; i < members.length; i++) {
            worldRanks[i] = comm.world(members[i]);
            commRanks[i] = members[i];
            if (members[i] == rank) myRank = i;
        }
        return child(childId(child, color), myRank, worldRanks, topology.restrict(myRank, commRanks));
    }

    /** {@link io.hcomm4j.Communicator#dup}. */
    Communicator dup() {
        comm.checkOpen();
        long child = children.incrementAndGet();
        comm.barrier(); // collective, like MPI_Comm_dup: every rank takes the same child number
        int[] worldRanks = new int[size];
        for (int r = 0; r < size; r++) worldRanks[r] = comm.world(r);
        return child(childId(child, Integer.MAX_VALUE), rank, worldRanks, topology);
    }

    /** Shrinks of this communicator so far: names the shrink's keys in the store, so every survivor uses the same ones. */
    private final AtomicLong shrinks = new AtomicLong();

    /**
     * {@link io.hcomm4j.Communicator#shrink}: the survivors agree on the failed set through the store (the first
     * complete proposal decides), then each makes the same child.
     */
    Communicator shrink() {
        comm.checkOpen();
        long k = shrinks.incrementAndGet();
        long t0 = System.nanoTime();
        long deadline = t0 + comm.timeoutNanos();
        io.hcomm4j.bootstrap.Store store = session.store();
        String prefix = session.namespace() + "shrink/" + Long.toUnsignedString(commId, 16) + "/" + k + "/";
        String decisionKey = prefix + "decision";
        java.util.BitSet known = health.knownFailed();
        byte[] decision = null;
        java.util.BitSet published = null;
        long sleepMicros = 200;
        while (true) {
            // publish what this rank knows (again when it learned more): the others adopt it
            if (!known.equals(published)) {
                store.set(prefix + "seen/" + rank, encodeRanks(known));
                published = (java.util.BitSet) known.clone();
            }
            decision = store.tryGet(decisionKey);
            if (decision != null) break;
            java.util.List<Integer> missing = new java.util.ArrayList<>();
            for (int m = 0; m < size; m++) {
                if (m == rank || known.get(m)) continue;
                byte[] seen = store.tryGet(prefix + "seen/" + m);
                if (seen == null) missing.add(m);
                else known.or(decodeRanks(seen));
            }
            known.or(health.knownFailed());
            missing.removeIf(known::get);
            if (missing.isEmpty() && !known.get(rank)) {
                // every member not known to have failed is here: propose; the first proposal decides for everybody
                decision = store.compareAndSet(decisionKey, null, encodeRanks(known));
                if (decision != null) break;
            }
            if (known.get(rank)) {
                decision = store.get(decisionKey, java.time.Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                break;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": shrink of a communicator of " + size + " ranks: "
                        + (missing.size() == 1 ? "rank " + missing.get(0) + " has" : "ranks " + missing + " have")
                        + " neither called shrink nor been found failed within " + io.hcomm4j.Units.duration(session.config().timeout()) + " (HCOMM_TIMEOUT)");
            }
            java.util.concurrent.locks.LockSupport.parkNanos(sleepMicros * 1000);
            sleepMicros = Math.min(20_000, sleepMicros * 2);
        }
        java.util.BitSet failedSet = decodeRanks(decision);
        if (failedSet.get(rank)) {
            throw new io.hcomm4j.CommAbortedException("rank " + rank + ": shrink: the other members decided that this rank failed "
                    + "(failed set " + failedSet + "); it is not a member of the shrunk communicator");
        }
        int live = size - failedSet.cardinality();
        int[] worldRanks = new int[live];
        int[] commRanks = new int[live];
        int myRank = -1;
        for (int r = 0, i = 0; r < size; r++) {
            if (failedSet.get(r)) continue;
            if (r == rank) myRank = i;
            worldRanks[i] = comm.world(r);
            commRanks[i++] = r;
        }
        long id = childId(k | (1L << 40), java.util.Arrays.hashCode(decision));
        CommunicatorImpl c = child(id, myRank, worldRanks, topology.restrict(myRank, commRanks));
        org.slf4j.LoggerFactory.getLogger(CommunicatorImpl.class).debug("rank {}: shrink of {} ranks to {} (failed {}) took {} ms",
                rank, size, live, failedSet, (System.nanoTime() - t0) / 1_000_000);
        return c;
    }

    /** Grows of this communicator so far: names the grow's key in the store. */
    private final AtomicLong grows = new AtomicLong();

    /** {@link io.hcomm4j.Communicator#grow}: rank 0 leads; the joiners take over failed world slots. */
    Communicator grow(int joiners) {
        comm.checkOpen();
        if (joiners < 1) throw new IllegalArgumentException("rank " + rank + ": grow: joiners " + joiners + " must be >= 1");
        RuntimeException broken = health.brokenFor("grow", "");
        if (broken != null) throw broken;
        long k = grows.incrementAndGet();
        long t0 = System.nanoTime();
        io.hcomm4j.bootstrap.Store store = session.store();
        String ns = session.namespace();
        java.time.Duration timeout = session.config().timeout();
        String roundKey = ns + "grow/comm/" + Long.toUnsignedString(commId, 16) + "/" + k;
        if (rank == 0) store.set(roundKey, String.valueOf(lead(store, ns, joiners, k, timeout)).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String g;
        try {
            g = new String(store.get(roundKey, timeout.plusSeconds(5)), java.nio.charset.StandardCharsets.UTF_8);
        } catch (io.hcomm4j.CommTimeoutException e) {
            throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": grow: rank 0 of the communicator did not say within "
                    + io.hcomm4j.Units.duration(timeout) + " (HCOMM_TIMEOUT) which processes join");
        }
        GrowPlan plan = GrowPlan.decode(store.get(ns + "grow/" + g + "/plan", timeout));
        if (plan.error() != null) {
            awaitEveryoneRead(store, ns + "grow/" + g + "/failed-read/", timeout);
            throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": grow: " + plan.error());
        }
        java.util.List<String> ready = new java.util.ArrayList<>();
        for (int slot : plan.slots()) ready.add(ns + "grow/" + g + "/ready/" + slot);
        try {
            store.await(ready, timeout);
        } catch (io.hcomm4j.CommTimeoutException e) {
            throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": grow: the joining processes (world ranks "
                    + java.util.Arrays.toString(plan.slots()) + ") did not come up within " + io.hcomm4j.Units.duration(timeout) + " (HCOMM_TIMEOUT)");
        }
        for (int i = 0; i < plan.slots().length; i++) session.revive(plan.slots()[i], plan.incarnations()[i]);
        store.add(ns + "grow/" + g + "/revived", 1);
        CommunicatorImpl c = CommunicatorImpl.ofGroup(session, transport, plan.id(), comm.world(rank), plan.members(), session.hostIds());
        session.register(c);
        session.registerCommunicator(c);
        org.slf4j.LoggerFactory.getLogger(CommunicatorImpl.class).debug("rank {}: grow of {} ranks by {} took {} ms",
                rank, size, joiners, (System.nanoTime() - t0) / 1_000_000);
        return c;
    }

    /**
     * A failed grow ends on every rank with the plan's reason. Rank 0 hosts the store in the usual launch and may close
     * its session right after throwing; it waits (up to {@code timeout}) until every member has read the plan so that
     * none of them sees a lost store instead of the reason.
     */
    private void awaitEveryoneRead(io.hcomm4j.bootstrap.Store store, String prefix, java.time.Duration timeout) {
        store.set(prefix + rank, new byte[] {1});
        if (rank != 0) return;
        java.util.List<String> keys = new java.util.ArrayList<>();
        for (int r = 0; r < size; r++) keys.add(prefix + r);
        try {
            store.await(keys, timeout);
        } catch (io.hcomm4j.CommTimeoutException e) {
            // a member that does not read the plan within the timeout has failed or hangs elsewhere: rank 0 throws anyway
        }
    }

    /**
     * Rank 0's part of a grow: waits (up to {@code timeout}) for {@code joiners} processes registered in the store,
     * assigns them the lowest failed world slots and new incarnations, publishes the plan and tells each joiner its
     * round. Returns the round.
     */
    private long lead(io.hcomm4j.bootstrap.Store store, String ns, int joiners, long k, java.time.Duration timeout) {
        long round = store.add(ns + "grow/round", 1);
        String planKey = ns + "grow/" + round + "/plan";
        byte[] takenV = store.tryGet(ns + "grow/taken");
        long taken = takenV == null ? 0 : Long.parseLong(new String(takenV, java.nio.charset.StandardCharsets.UTF_8));
        java.util.List<Integer> free = new java.util.ArrayList<>();
        java.util.Set<Integer> mine = new java.util.HashSet<>();
        for (int r = 0; r < size; r++) mine.add(comm.world(r));
        for (int w : transport.failedRanks()) if (!mine.contains(w)) free.add(w);
        if (free.size() < joiners) {
            store.set(planKey, GrowPlan.failed("only " + free.size() + " failed world ranks " + free + " can be taken over, not "
                    + joiners + " (a job grows back to its initial size at most)").encode());
            return round;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        long sleep = 1;
        while (true) {
            byte[] v = store.tryGet(ns + "grow/joiners");
            long arrived = v == null ? 0 : Long.parseLong(new String(v, java.nio.charset.StandardCharsets.UTF_8));
            if (arrived - taken >= joiners) break;
            if (System.nanoTime() > deadline) {
                store.set(planKey, GrowPlan.failed("only " + (arrived - taken) + " of " + joiners + " joining processes registered within "
                        + io.hcomm4j.Units.duration(timeout) + " (HCOMM_TIMEOUT); start them with Hcomm.join").encode());
                return round;
            }
            try {
                Thread.sleep(sleep);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new io.hcomm4j.HcommException("rank " + rank + ": grow: interrupted", e);
            }
            sleep = Math.min(20, sleep * 2);
        }
        long[] tickets = new long[joiners];
        int[] slots = new int[joiners];
        long[] incs = new long[joiners];
        int[] members = new int[size + joiners];
        for (int r = 0; r < size; r++) members[r] = comm.world(r);
        for (int i = 0; i < joiners; i++) {
            tickets[i] = taken + 1 + i;
            slots[i] = free.get(i);
            incs[i] = store.add(ns + "incarnation/" + slots[i], 1);
            members[size + i] = slots[i];
        }
        store.add(ns + "grow/taken", joiners);
        long id = childId(round | (2L << 40), java.util.Arrays.hashCode(members));
        store.set(planKey, new GrowPlan(id, tickets, slots, incs, members, null).encode());
        for (long t : tickets) store.set(ns + "grow/ticket/" + t, String.valueOf(round).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return round;
    }

    private static byte[] encodeRanks(java.util.BitSet b) {
        return b.stream().mapToObj(Integer::toString).collect(java.util.stream.Collectors.joining(",", "[", "]"))
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static java.util.BitSet decodeRanks(byte[] v) {
        String s = new String(v, java.nio.charset.StandardCharsets.UTF_8);
        java.util.BitSet b = new java.util.BitSet();
        s = s.substring(1, s.length() - 1).trim();
        if (!s.isEmpty()) for (String x : s.split(",")) b.set(Integer.parseInt(x.trim()));
        return b;
    }

    /** A child's id: derived from this id, the child number and the color, so every member computes the same one. */
    private long childId(long child, int color) {
        long h = commId * 0x9E3779B97F4A7C15L + child * 0xC2B2AE3D27D4EB4FL + color * 0x165667B19E3779F9L + 1;
        h ^= h >>> 31;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 29;
        return h & ~(3L << 62); // the top bits mark collective traffic
    }

    private CommunicatorImpl child(long id, int myRank, int[] worldRanks, Topology topo) {
        CommunicatorImpl c = new CommunicatorImpl(session, transport, id, myRank, worldRanks, worldRanks.length, topo);
        session.register(c);
        session.registerCommunicator(c);
        return c;
    }
}
