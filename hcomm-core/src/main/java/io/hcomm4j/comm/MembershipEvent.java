package io.hcomm4j.comm;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A communicator made from another by shrink or grow ({@code jfr print --events io.hcomm4j.Membership}). */
@Name("io.hcomm4j.Membership")
@Label("HComm4J Membership Change")
@Category({"HComm4J", "Fault Tolerance"})
@Description("shrink (without the failed members) or grow (with joiners): from the call to the new communicator")
@StackTrace(false)
final class MembershipEvent extends jdk.jfr.Event {
    @Label("Op")
    @Description("shrink or grow")
    String op;

    @Label("Communicator")
    long communicator;

    @Label("New Communicator")
    long newCommunicator;

    @Label("Ranks Before")
    int sizeBefore;

    @Label("Ranks After")
    int sizeAfter;

    @Label("Rank")
    @Description("This rank's rank in the new communicator")
    int rank;

    @Label("Outcome")
    String outcome;
}
