package io.hcomm4j.transport;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * One point-to-point op of the application (send or recv) from its post to its completion, for Java Flight Recorder
 * ({@code jfr print --events io.hcomm4j.PointToPoint}). Disabled, it costs a check per op and no allocation.
 */
@Name("io.hcomm4j.PointToPoint")
@Label("HComm4J Point-to-Point")
@Category({"HComm4J", "Point-to-Point"})
@Description("A send or receive from the moment it was posted until it completed")
@StackTrace(false)
final class P2pEvent extends jdk.jfr.Event {
    /** Whether a recording wants these events (checked before one is made). */
    static boolean wanted() {
        return Type.TYPE.isEnabled();
    }

    private static final class Type {
        static final jdk.jfr.EventType TYPE = jdk.jfr.EventType.getEventType(P2pEvent.class);
    }

    @Label("Op")
    @Description("send or recv")
    String op;

    @Label("Communicator")
    long communicator;

    @Label("Rank")
    @Description("This rank's world rank")
    int rank;

    @Label("Peer")
    @Description("The peer's world rank (a receive from any source: the one it matched, -1 if it failed first)")
    int peer;

    @Label("Tag")
    int tag;

    @Label("Size")
    @DataAmount
    long bytes;

    @Label("Transport")
    @Description("shm, tcp or tls: the link it went over")
    String transport;

    @Label("Channels")
    @Description("connections to the peer its data went over: more than 1 when a large message was striped")
    int channels;

    @Label("Outcome")
    @Description("ok, or the exception's simple class name")
    String outcome;
}
