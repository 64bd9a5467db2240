package io.hcomm4j.comm;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * One collective on one rank, for Java Flight Recorder ({@code -XX:StartFlightRecording}, JMC, {@code jfr print
 * --events io.hcomm4j.Collective}). Disabled, it costs a check per op.
 */
@Name("io.hcomm4j.Collective")
@Label("HComm4J Collective")
@Category("HComm4J")
@Description("A collective op from the moment it started running on this rank until it returned")
@StackTrace(false)
final class CollectiveEvent extends jdk.jfr.Event {
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

    @Label("Outcome")
    @Description("ok, or the exception's simple class name")
    String outcome;
}
