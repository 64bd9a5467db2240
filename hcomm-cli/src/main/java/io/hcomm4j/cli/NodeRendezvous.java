package io.hcomm4j.cli;

import io.hcomm4j.HcommException;
import io.hcomm4j.bootstrap.Store;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * {@code hcomm launch --nnodes MIN:MAX}: which nodes form the job, agreed through the store that node 0's launcher
 * serves, as torchrun's elastic rendezvous does. Node 0 is there first (it serves the store); every other node's
 * launcher takes the next node rank from a counter. Node 0 closes the round when MAX nodes are there, or when MIN are
 * and {@code wait} has passed since the MIN-th came, and publishes the count. A node whose rank is below the count is
 * part of the job; one that came later is a <em>late</em> node: its ranks join the running job as replacements
 * ({@code HCOMM_JOIN=1}), in the places of ranks that died, when the job's ranks grow.
 */
final class NodeRendezvous {
    /** Counter of the nodes other than node 0 that arrived. */
    static final String ARRIVED = "hcomm-launch/nodes/arrived";
    /** The number of nodes the job formed with, set once by node 0. */
    static final String FORMED = "hcomm-launch/nodes/formed";
    private static final long POLL_MILLIS = 20;

    private NodeRendezvous() {
    }

    /**
     * Where a node stands: its node rank, the number of nodes the job formed with, and whether it came late.
     *
     * @param nodeRank this node's index (node 0 serves the store)
     * @param nodes    nodes of the job as formed
     */
    record Place(int nodeRank, int nodes) {
        /** Whether this node came after the job formed: its ranks join as replacements. */
        boolean late() {
            return nodeRank >= nodes;
        }
    }

    /**
     * Node 0: waits for the others and closes the round.
     *
     * @param timeout how long to wait for MIN nodes
     * @return the number of nodes the job formed with
     * @throws HcommException fewer than {@code min} nodes came within {@code timeout}
     */
    static int form(Store store, int min, int max, Duration wait, Duration timeout) {
        long start = System.nanoTime();
        long minReachedAt = 0;
        while (true) {
            int nodes = 1 + (int) store.add(ARRIVED, 0);
            long now = System.nanoTime();
            if (nodes >= min && minReachedAt == 0) minReachedAt = now;
            if (nodes >= max || minReachedAt != 0 && now - minReachedAt >= wait.toNanos()) {
                int formed = Math.min(nodes, max);
                store.set(FORMED, Integer.toString(formed).getBytes(StandardCharsets.UTF_8));
                return formed;
            }
            if (minReachedAt == 0 && now - start > timeout.toNanos()) {
                throw new HcommException("only " + nodes + " of at least " + min + " nodes (--nnodes " + min + ":" + max
                        + ") came within " + timeout.toSeconds() + " s (HCOMM_INIT_TIMEOUT); start hcomm launch on the others"
                        + " with the same --master-addr, --master-port and secret");
            }
            sleep();
        }
    }

    /** {@link #form} through a client of node 0's own store at {@code store}. */
    static int formOnNode0(java.net.InetSocketAddress store, io.hcomm4j.security.Auth auth, int min, int max, Duration wait, Duration timeout) {
        try (io.hcomm4j.bootstrap.TcpStore client = io.hcomm4j.bootstrap.TcpStore.connect(store, auth, timeout, Duration.ZERO)) {
            return form(client, min, max, wait, timeout);
        }
    }

    /** {@link #arrive} through a client of node 0's store at {@code store}. */
    static Place arriveAt(java.net.InetSocketAddress store, io.hcomm4j.security.Auth auth, Duration timeout) {
        try (io.hcomm4j.bootstrap.TcpStore client = io.hcomm4j.bootstrap.TcpStore.connect(store, auth, timeout, Duration.ZERO)) {
            return arrive(client, timeout);
        }
    }

    /** Any node but node 0: takes the next node rank and learns how many nodes the job formed with. */
    static Place arrive(Store store, Duration timeout) {
        int nodeRank = (int) store.add(ARRIVED, 1);
        int nodes = Integer.parseInt(new String(store.get(FORMED, timeout), StandardCharsets.UTF_8));
        return new Place(nodeRank, nodes);
    }

    /** Parses {@code --nnodes}: {@code K} (a fixed number) or {@code MIN:MAX}; returns {min, max}. */
    static int[] parse(String spec) {
        String[] parts = spec.trim().split(":", -1);
        try {
            int min = Integer.parseInt(parts[0].trim());
            int max = parts.length == 2 ? Integer.parseInt(parts[1].trim()) : min;
            if (parts.length > 2 || min < 1 || max < min) throw new NumberFormatException();
            return new int[] {min, max};
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--nnodes must be K or MIN:MAX with 1 <= MIN <= MAX, was '" + spec + "'");
        }
    }

    private static void sleep() {
        try {
            Thread.sleep(POLL_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("interrupted while the nodes met");
        }
    }
}
