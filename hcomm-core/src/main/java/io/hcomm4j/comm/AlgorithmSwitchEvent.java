package io.hcomm4j.comm;

import io.hcomm4j.algo.Feedback;
import io.hcomm4j.algo.Tuner;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * Feedback replaced a collective's algorithm for one size class ({@link Feedback}): for Java Flight Recorder
 * ({@code jfr print --events io.hcomm4j.AlgorithmSwitch}). Rare: every rank commits one per switch.
 */
@Name("io.hcomm4j.AlgorithmSwitch")
@Label("HComm4J Algorithm Switch")
@Category("HComm4J")
@Description("The ranks agreed to run another algorithm for a collective's size class: the current one had become slow")
@StackTrace(false)
final class AlgorithmSwitchEvent extends jdk.jfr.Event {
    @Label("Op")
    String op;

    @Label("Size")
    @Description("The bytes of the op that voted; the switch holds for its power-of-two class")
    @DataAmount
    long bytes;

    @Label("From")
    String from;

    @Label("To")
    String to;

    @Label("Time Of From")
    @Description("The slowest rank's recent time of the replaced algorithm")
    @Timespan(Timespan.NANOSECONDS)
    long fromNanos;

    @Label("Expected Time Of To")
    @Timespan(Timespan.NANOSECONDS)
    long expectedNanos;

    @Label("Rank")
    int rank;

    @Label("Sequence Number")
    @Description("The collective whose vote decided; the next op of the class runs the new algorithm")
    long sequence;

    static void commit(Feedback.Switch s, int rank, long seq) {
        AlgorithmSwitchEvent e = new AlgorithmSwitchEvent();
        if (!e.isEnabled()) return;
        e.op = Tuner.name(s.op());
        e.bytes = s.bytes();
        e.from = Tuner.name(s.from());
        e.to = Tuner.name(s.to());
        e.fromNanos = Math.round(s.fromSeconds() * 1e9);
        e.expectedNanos = Math.round(s.expectedSeconds() * 1e9);
        e.rank = rank;
        e.sequence = seq;
        e.commit();
    }
}
