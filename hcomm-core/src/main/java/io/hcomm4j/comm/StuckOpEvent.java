package io.hcomm4j.comm;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** An op waited longer than HCOMM_STUCK_REPORT ({@code jfr print --events io.hcomm4j.StuckOp}); once per op. */
@Name("io.hcomm4j.StuckOp")
@Label("HComm4J Stuck Op")
@Category({"HComm4J", "Fault Tolerance"})
@Description("An op has waited longer than HCOMM_STUCK_REPORT; what it waits for")
@StackTrace(false)
final class StuckOpEvent extends jdk.jfr.Event {
    @Label("Op")
    String op;

    @Label("Communicator")
    long communicator;

    @Label("Rank")
    int rank;

    @Label("Sequence Number")
    @Description("A collective's number on its communicator; a point-to-point op's tag")
    long sequence;

    @Label("Waited")
    @Timespan(Timespan.NANOSECONDS)
    long waited;

    @Label("Waiting For")
    @Description("The ranks it waits for")
    String waitingFor;

    static void commit(String op, long communicator, int rank, long sequence, long waitedNanos, String waitingFor) {
        StuckOpEvent e = new StuckOpEvent();
        if (!e.isEnabled()) return;
        e.op = op;
        e.communicator = communicator;
        e.rank = rank;
        e.sequence = sequence;
        e.waited = waitedNanos;
        e.waitingFor = waitingFor;
        e.commit();
    }
}
