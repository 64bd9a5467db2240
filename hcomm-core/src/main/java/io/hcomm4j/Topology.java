package io.hcomm4j;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Which ranks of a communicator share a host, seen from one rank ({@link Communicator#topology()}).
 *
 * <p>Two ranks are on the same host when their host identities are equal: a hash of the kernel's boot id, the host
 * name, the network namespace, the user and the shared-memory directory, exchanged at init ({@code HCOMM_HOST_ID}
 * replaces it). So ranks in different network namespaces (containers) are on different hosts even on one machine.
 *
 * <p>Hosts are numbered {@code 0 .. hosts()-1} in the order of their lowest rank; on a host, ranks are numbered
 * {@code 0 .. localSize()-1} (their <em>local rank</em>) in rank order. The <em>leader</em> of a host is its lowest
 * rank (local rank 0). A sub-communicator's topology is its parent's restricted to its members, renumbered the same
 * way. Immutable.
 */
public final class Topology {
    private final int rank;
    /** Rank → host index. */
    private final int[] hostOf;
    /** Rank → local rank. */
    private final int[] localOf;
    /** Host index → its ranks, ascending. */
    private final int[][] members;

    private Topology(int rank, int[] hostOf) {
        this.rank = rank;
        this.hostOf = hostOf;
        int hosts = 0;
        for (int h : hostOf) hosts = Math.max(hosts, h + 1);
        int[] count = new int[hosts];
        this.localOf = new int[hostOf.length];
        for (int r = 0; r < hostOf.length; r++) localOf[r] = count[hostOf[r]]++;
        this.members = new int[hosts][];
        for (int h = 0; h < hosts; h++) members[h] = new int[count[h]];
        for (int r = 0; r < hostOf.length; r++) members[hostOf[r]][localOf[r]] = r;
    }

    /**
     * The topology of a communicator of {@code hostLabels.length} ranks, seen from {@code rank}: ranks with equal
     * labels (any strings, e.g. host identities) share a host.
     *
     * @throws IllegalArgumentException if {@code rank} is out of range or a label is null
     */
    public static Topology of(int rank, String[] hostLabels) {
        if (rank < 0 || rank >= hostLabels.length) {
            throw new IllegalArgumentException("rank " + rank + " is out of range [0, " + hostLabels.length + ")");
        }
        Map<String, Integer> index = new HashMap<>();
        int[] host = new int[hostLabels.length];
        for (int r = 0; r < hostLabels.length; r++) {
            if (hostLabels[r] == null) throw new IllegalArgumentException("host label of rank " + r + " is null");
            host[r] = index.computeIfAbsent(hostLabels[r], k -> index.size());
        }
        return new Topology(rank, host);
    }

    /**
     * This topology restricted to {@code ranks} (ranks of this topology, in the order of the new communicator's
     * ranks), seen from new rank {@code newRank}: what {@link Communicator#split} gives its child.
     */
    public Topology restrict(int newRank, int[] ranks) {
        if (newRank < 0 || newRank >= ranks.length) {
            throw new IllegalArgumentException("rank " + newRank + " is out of range [0, " + ranks.length + ")");
        }
        String[] labels = new String[ranks.length];
        for (int i = 0; i < ranks.length; i++) labels[i] = Integer.toString(hostOf[ranks[i]]);
        return of(newRank, labels);
    }

    /** The rank this topology is seen from. */
    public int rank() {
        return rank;
    }

    /** Number of ranks. */
    public int size() {
        return hostOf.length;
    }

    /** Number of hosts the ranks are on. */
    public int hosts() {
        return members.length;
    }

    /** This rank's host, {@code 0 .. hosts()-1} (the node index). */
    public int host() {
        return hostOf[rank];
    }

    /** The host of {@code rank}. */
    public int hostOf(int rank) {
        return hostOf[check(rank)];
    }

    /** This rank's index among the ranks of its host, in rank order. */
    public int localRank() {
        return localOf[rank];
    }

    /** The local rank of {@code rank} on its host. */
    public int localRankOf(int rank) {
        return localOf[check(rank)];
    }

    /** Number of ranks on this rank's host. */
    public int localSize() {
        return members[hostOf[rank]].length;
    }

    /** The ranks on {@code host}, ascending (a copy). */
    public int[] ranksOn(int host) {
        if (host < 0 || host >= members.length) {
            throw new IllegalArgumentException("host " + host + " is out of range [0, " + members.length + ")");
        }
        return members[host].clone();
    }

    /** The leader of {@code host}: its lowest rank. */
    public int leader(int host) {
        return ranksOn(host)[0];
    }

    /** Whether this rank leads its host (is its lowest rank). */
    public boolean isLeader() {
        return localOf[rank] == 0;
    }

    /** The fewest ranks on any host. */
    public int minLocalSize() {
        int min = Integer.MAX_VALUE;
        for (int[] m : members) min = Math.min(min, m.length);
        return min;
    }

    /** The most ranks on any host. */
    public int maxLocalSize() {
        int max = 0;
        for (int[] m : members) max = Math.max(max, m.length);
        return max;
    }

    private int check(int r) {
        if (r < 0 || r >= hostOf.length) throw new IllegalArgumentException("rank " + r + " is out of range [0, " + hostOf.length + ")");
        return r;
    }

    /** E.g. {@code Topology{rank 2 of 4: host 1 of 2, local rank 0 of 2, hosts [[0, 1], [2, 3]]}}. */
    @Override
    public String toString() {
        return "Topology{rank " + rank + " of " + hostOf.length + ": host " + host() + " of " + hosts() + ", local rank "
                + localRank() + " of " + localSize() + ", hosts " + Arrays.deepToString(members) + "}";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Topology t && t.rank == rank && Arrays.equals(t.hostOf, hostOf);
    }

    @Override
    public int hashCode() {
        return 31 * rank + Arrays.hashCode(hostOf);
    }
}
