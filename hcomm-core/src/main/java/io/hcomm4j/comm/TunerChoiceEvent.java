package io.hcomm4j.comm;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The algorithm a communicator runs for a collective's size class, when it is first chosen or changes
 * ({@code jfr print --events io.hcomm4j.TunerChoice}): a handful per communicator, not one per op.
 */
@Name("io.hcomm4j.TunerChoice")
@Label("HComm4J Tuner Choice")
@Category({"HComm4J", "Tuning"})
@Description("The algorithm chosen for a collective's power-of-two size class (HCOMM_ALGO, the tuning table, the model or feedback)")
@StackTrace(false)
final class TunerChoiceEvent extends jdk.jfr.Event {
    @Label("Op")
    String op;

    @Label("Communicator")
    long communicator;

    @Label("Rank")
    int rank;

    @Label("Size")
    @Description("The op's size; the choice holds for its power-of-two class")
    @DataAmount
    long bytes;

    @Label("Algorithm")
    String algorithm;

    @Label("Previous")
    @Description("The class's previous algorithm on this communicator, empty for the first choice")
    String previous;
}
