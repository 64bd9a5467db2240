package io.hcomm4j;

import java.util.Map;

/**
 * What JMX shows of one communicator of this process (JDK Mission Control, jconsole, any JMX client): registered as
 * {@code io.hcomm4j:type=Communicator,id=<communicator id in hex>,worldRank=<this process's world rank>} when the
 * communicator is made, unregistered when it is closed. Every attribute is read when asked; nothing is collected for
 * JMX while nobody looks. See docs/observability.md.
 */
public interface CommunicatorMXBean {
    /** The communicator's id in hex ({@code 0}: the world). */
    String getId();

    /** This process's rank in the communicator. */
    int getRank();

    /** Its number of ranks. */
    int getSize();

    /** This process's world rank. */
    int getWorldRank();

    /** READY, DEGRADED or FAILED ({@link Communicator#health()}). */
    String getHealth();

    /** Why it is not READY, or empty. */
    String getHealthReason();

    /** Its failed members (communicator ranks). */
    int[] getFailedRanks();

    /** Collectives called so far (the sequence number of the last one). */
    long getCollectivesCalled();

    /** Calls per op that ran at least once ({@link Communicator#metrics()}). */
    Map<String, Long> getCalls();

    /** Failed calls per op. */
    Map<String, Long> getFailures();

    /** Bytes per op. */
    Map<String, Long> getBytes();

    /** Mean time per collective op, µs. */
    Map<String, Double> getMeanMicros();

    /** Median time per collective op, µs (from a power-of-two histogram: within a factor of two above). */
    Map<String, Double> getP50Micros();

    /** 99th percentile per collective op, µs (as the median). */
    Map<String, Double> getP99Micros();

    /** The slowest op per collective op, µs. */
    Map<String, Double> getMaxMicros();

    /** The ops that have not ended now (flight record), e.g. {@code allReduce #12 (4.0 KiB) started for 3.1 s}; empty if none. */
    String[] getOpsInFlight();

    /** How long the oldest op in flight has run, ms (0: none). */
    long getOldestOpInFlightMillis();

    /** Each other member: its rank, world rank and the link to it ({@code shm}, {@code tcp}, {@code tls}, {@code none}: not connected yet). */
    String[] getPeers();

    /** Writes this rank's flight record to {@code path} ({@link Communicator#dumpTrace}); returns the path written. */
    String dumpTrace(String path);
}
