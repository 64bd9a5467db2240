package io.hcomm4j.transport;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** This rank learned that a peer failed ({@code jfr print --events io.hcomm4j.PeerFailure}); once per peer. */
@Name("io.hcomm4j.PeerFailure")
@Label("HComm4J Peer Failure")
@Category({"HComm4J", "Fault Tolerance"})
@Description("A peer was found failed: its connection broke beyond repair, it went silent, or another rank reported it")
@StackTrace(false)
final class PeerFailureEvent extends jdk.jfr.Event {
    @Label("Rank")
    int rank;

    @Label("Peer")
    @Description("The failed rank (world)")
    int peer;

    @Label("Reason")
    String reason;

    static void commit(int rank, int peer, String reason) {
        PeerFailureEvent e = new PeerFailureEvent();
        if (!e.isEnabled()) return;
        e.rank = rank;
        e.peer = peer;
        e.reason = reason;
        e.commit();
    }
}
