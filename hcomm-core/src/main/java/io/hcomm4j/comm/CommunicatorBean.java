package io.hcomm4j.comm;

import io.hcomm4j.CommunicatorMXBean;
import io.hcomm4j.Health;
import io.hcomm4j.OpStats;
import io.hcomm4j.monitor.TraceEntry;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A communicator's {@link CommunicatorMXBean}: registered with the platform MBean server when the communicator is made,
 * unregistered when it closes. Reads everything from the communicator when asked.
 */
final class CommunicatorBean implements CommunicatorMXBean {
    private static final Logger LOG = LoggerFactory.getLogger(CommunicatorBean.class);

    private final CommunicatorImpl comm;
    private final int worldRank;
    private ObjectName name;

    private CommunicatorBean(CommunicatorImpl comm, int worldRank) {
        this.comm = comm;
        this.worldRank = worldRank;
    }

    /** Registers {@code comm}'s bean; null (logged) if JMX refuses it. */
    static CommunicatorBean register(CommunicatorImpl comm, int worldRank) {
        CommunicatorBean b = new CommunicatorBean(comm, worldRank);
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        String base = "io.hcomm4j:type=Communicator,id=" + Long.toHexString(comm.id()) + ",worldRank=" + worldRank;
        // one JVM may hold several sessions of one rank at once (tests run ranks as threads): number the later ones
        for (int instance = 1; instance < 1000; instance++) {
            try {
                ObjectName n = new ObjectName(instance == 1 ? base : base + ",instance=" + instance);
                server.registerMBean(b, n);
                b.name = n;
                return b;
            } catch (InstanceAlreadyExistsException taken) {
                // next instance number
            } catch (JMException | RuntimeException e) {
                LOG.debug("rank {}: no JMX bean for {}: {}", worldRank, comm, e.toString());
                return null;
            }
        }
        return null;
    }

    /** Its name, once registered. */
    ObjectName name() {
        return name;
    }

    void unregister() {
        try {
            ManagementFactory.getPlatformMBeanServer().unregisterMBean(name);
        } catch (JMException | RuntimeException e) {
            LOG.debug("rank {}: could not unregister {}: {}", worldRank, name, e.toString());
        }
    }

    @Override
    public String getId() {
        return Long.toHexString(comm.id());
    }

    @Override
    public int getRank() {
        return comm.rank();
    }

    @Override
    public int getSize() {
        return comm.size();
    }

    @Override
    public int getWorldRank() {
        return worldRank;
    }

    @Override
    public String getHealth() {
        return comm.health().state().name();
    }

    @Override
    public String getHealthReason() {
        Health h = comm.health();
        return h.reason() == null ? "" : h.reason();
    }

    @Override
    public int[] getFailedRanks() {
        return comm.health().failedRanks().stream().mapToInt(Integer::intValue).toArray();
    }

    @Override
    public long getCollectivesCalled() {
        return comm.collectivesCalled();
    }

    private Map<String, Long> longs(java.util.function.ToLongFunction<OpStats> f) {
        Map<String, Long> m = new LinkedHashMap<>();
        for (OpStats s : comm.metrics()) m.put(s.op(), f.applyAsLong(s));
        return m;
    }

    private Map<String, Double> timed(ToDoubleFunction<OpStats> f) {
        Map<String, Double> m = new LinkedHashMap<>();
        for (OpStats s : comm.metrics()) if (s.totalNanos() > 0) m.put(s.op(), f.applyAsDouble(s));
        return m;
    }

    @Override
    public Map<String, Long> getCalls() {
        return longs(OpStats::calls);
    }

    @Override
    public Map<String, Long> getFailures() {
        return longs(OpStats::failures);
    }

    @Override
    public Map<String, Long> getBytes() {
        return longs(OpStats::bytes);
    }

    @Override
    public Map<String, Double> getMeanMicros() {
        return timed(OpStats::meanMicros);
    }

    @Override
    public Map<String, Double> getP50Micros() {
        return timed(s -> s.percentileMicros(0.5));
    }

    @Override
    public Map<String, Double> getP99Micros() {
        return timed(s -> s.percentileMicros(0.99));
    }

    @Override
    public Map<String, Double> getMaxMicros() {
        return timed(s -> s.maxNanos() / 1e3);
    }

    private List<TraceEntry> inFlight() {
        List<TraceEntry> out = new ArrayList<>();
        for (TraceEntry e : comm.trace().entries()) if (!e.ended()) out.add(e);
        return out;
    }

    @Override
    public String[] getOpsInFlight() {
        List<String> out = new ArrayList<>();
        for (TraceEntry e : inFlight()) {
            out.add(io.hcomm4j.monitor.TraceAnalysis.describe(e) + (e.seq() > 0 ? " #" + e.seq() : "") + " " + e.state().label()
                    + " for " + io.hcomm4j.Units.duration(e.durationNanos()));
        }
        return out.toArray(String[]::new);
    }

    @Override
    public long getOldestOpInFlightMillis() {
        long max = 0;
        for (TraceEntry e : inFlight()) max = Math.max(max, e.durationNanos() / 1_000_000);
        return max;
    }

    @Override
    public String[] getPeers() {
        int[] world = comm.worldRanks();
        List<String> out = new ArrayList<>();
        for (int r = 0; r < world.length; r++) {
            if (r == comm.rank()) continue;
            out.add("rank " + r + " (world " + world[r] + "): " + comm.transport().transportTo(world[r]));
        }
        return out.toArray(String[]::new);
    }

    @Override
    public String dumpTrace(String path) {
        java.nio.file.Path p = java.nio.file.Path.of(path);
        comm.dumpTrace(p);
        return p.toAbsolutePath().toString();
    }
}
