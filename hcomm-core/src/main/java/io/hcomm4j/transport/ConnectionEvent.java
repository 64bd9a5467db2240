package io.hcomm4j.transport;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** A link to a peer set up, or set up again after it broke ({@code jfr print --events io.hcomm4j.Connection}). */
@Name("io.hcomm4j.Connection")
@Label("HComm4J Connection")
@Category({"HComm4J", "Transport"})
@Description("A link to a peer became usable: first set up, or re-established after a loss (the event spans the outage)")
@StackTrace(false)
final class ConnectionEvent extends jdk.jfr.Event {
    @Label("Rank")
    int rank;

    @Label("Peer")
    int peer;

    @Label("Transport")
    @Description("shm, tcp or tls")
    String transport;

    @Label("Reconnect")
    @Description("Re-established after the connection broke")
    boolean reconnect;

    @Label("Attempts")
    int attempts;

    @Label("Took")
    @Description("A reconnect: from the loss to the new connection; 0 for a first set-up")
    @Timespan(Timespan.NANOSECONDS)
    long took;

    @Label("Connection")
    @Description("The link's connection number (1: the first)")
    long epoch;

    /** Commits one if a recording wants it; {@code tookNanos}: the outage a reconnect ended (0: a first set-up). */
    static void commit(int rank, int peer, String transport, boolean reconnect, int attempts, long epoch, long tookNanos) {
        ConnectionEvent e = new ConnectionEvent();
        if (!e.isEnabled()) return;
        e.rank = rank;
        e.peer = peer;
        e.transport = transport;
        e.reconnect = reconnect;
        e.attempts = attempts;
        e.epoch = epoch;
        e.took = tookNanos;
        e.commit();
    }
}
