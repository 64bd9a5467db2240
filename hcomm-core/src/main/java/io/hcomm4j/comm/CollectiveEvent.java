package io.hcomm4j.comm;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * One collective on one rank, for Java Flight Recorder ({@code -XX:StartFlightRecording}, JMC, {@code jfr print
 * --events io.hcomm4j.Collective}). Disabled, it costs a check per op ({@link #wanted}) and no allocation.
 */
@Name("io.hcomm4j.Collective")
@Label("HComm4J Collective")
@Category("HComm4J")
@Description("A collective op from the moment it started running on this rank until it returned")
@StackTrace(false)
final class CollectiveEvent extends jdk.jfr.Event {
    /** Whether a recording wants these events: checked before an event object is made, so ops allocate nothing otherwise. */
    static boolean wanted() {
        return Type.TYPE.isEnabled();
    }

    /** Registered on first use (not when the library loads). */
    private static final class Type {
        static final jdk.jfr.EventType TYPE = jdk.jfr.EventType.getEventType(CollectiveEvent.class);
    }

    @Label("Op")
    String op;

    @Label("Communicator")
    long communicator;

    @Label("Rank")
    int rank;

    @Label("Ranks")
    int ranks;

    @Label("Sequence Number")
    @Description("The op's number among this communicator's collectives (1, 2, 3 …)")
    long sequence;

    @Label("Size")
    @DataAmount
    long bytes;

    @Label("Algorithm")
    @Description("The tuner's choice (ring, recursive_doubling ...), zero_copy for the shared-memory path, fixed for an op with one algorithm")
    String algorithm;

    @Label("Channels")
    @Description("the most connections to one peer a message of it went over (0: zero copy in shared memory)")
    int channels;

    @Label("Outcome")
    @Description("ok, or the exception's simple class name")
    String outcome;
}
