package io.hcomm4j.comm;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Communicator;
import io.hcomm4j.HcommException;
import io.hcomm4j.Topology;
import io.hcomm4j.algo.LinkProbe;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.algo.TuningTable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A session's algorithm choice: the measured table ({@code HCOMM_TUNING_FILE}) read before init publishes this rank's
 * address, its fingerprint published with the address and compared across ranks (a rank that chose differently would
 * run another algorithm and the collective would hang or mix data), and the {@link Tuner} built from it.
 */
final class SessionTuning {
    private static final Logger LOG = LoggerFactory.getLogger(SessionTuning.class);
    /** The address field of a rank without a table. */
    static final String NONE = "-";

    private SessionTuning() {
    }

    /** The table {@code config} names, or null. @throws HcommException naming the rank and the file */
    static TuningTable load(CommConfig config, int rank) {
        String file = config.tuningFile().orElse(null);
        if (file == null) return null;
        try {
            return TuningTable.read(Path.of(file));
        } catch (IllegalArgumentException e) {
            throw new HcommException("rank " + rank + ": " + e.getMessage(), e);
        }
    }

    /** What this rank publishes with its address: the table's fingerprint, or {@link #NONE}. */
    static String field(TuningTable table) {
        return table == null ? NONE : table.fingerprint();
    }

    /**
     * Null if every rank published the same fingerprint, else the message every rank fails init with: which ranks
     * loaded which table.
     */
    static String disagreement(int rank, String[] fingerprints, TuningTable mine) {
        Map<String, List<Integer>> by = new LinkedHashMap<>();
        for (int p = 0; p < fingerprints.length; p++) by.computeIfAbsent(fingerprints[p], k -> new ArrayList<>()).add(p);
        if (by.size() <= 1) return null;
        StringBuilder b = new StringBuilder("rank " + rank + ": the ranks loaded different tuning tables (HCOMM_TUNING_FILE; "
                + "every rank must load the same file, or none): ");
        String sep = "";
        for (Map.Entry<String, List<Integer>> e : by.entrySet()) {
            b.append(sep).append("ranks ").append(e.getValue()).append(e.getKey().equals(NONE) ? " none"
                    : " fingerprint " + e.getKey());
            sep = "; ";
        }
        b.append(" (this rank: ").append(mine == null ? "none" : mine.source() + ", fingerprint " + mine.fingerprint()).append(')');
        return b.toString();
    }

    /** Budget of each of init's link probes. */
    static final long INIT_PROBE_NANOS = 50_000_000;

    /**
     * {@code HCOMM_TUNE_AT_INIT}: measures the link between hosts and the one within a host ({@link LinkProbe}, 50 ms
     * each). A table entry for the world's shape then applies only if it was tuned at a link speed within a factor of 2
     * of the measured one (a table made on another network is not taken for this one); without such an entry the model
     * is costed with the measured links. Every rank calls it at the end of init, before any op of the user's; the
     * figures come from one rank, so every rank's tuner changes alike.
     */
    static void measureAtInit(CommConfig config, Tuner tuner, Communicator world) {
        if (!config.tuneAtInit() || world.size() < 2) return;
        Tuner.Shape shape = Tuner.Shape.of(world.topology());
        TuningTable.Entry before = tuner.entry(shape);
        if (before != null && !(shape.hosts() > 1 && before.signature().betweenGbps() > 0)) return; // no speed to compare
        long t0 = System.nanoTime();
        LinkProbe.Result between = LinkProbe.between(world, world.topology(), INIT_PROBE_NANOS);
        if (between != null) tuner.useLinkSpeed(between.gbps());
        TuningTable.Entry entry = tuner.entry(shape);
        if (entry != null) {
            if (world.rank() == 0) {
                LOG.info("HCOMM_TUNE_AT_INIT: the link between hosts measures {}; the tuning table's entry for {} (tuned at "
                        + "{} GB/s) applies", between, entry.signature(), entry.signature().betweenGbps());
            }
            return;
        }
        LinkProbe.Result within = LinkProbe.within(world, world.topology(), INIT_PROBE_NANOS);
        tuner.useLinks(between == null ? null : between.cost(), within == null ? null : within.cost());
        if (world.rank() == 0) {
            if (before != null) {
                LOG.warn("HCOMM_TUNE_AT_INIT: the tuning table's entry for {} was tuned at {} GB/s between hosts, but the link "
                        + "measures {}: more than a factor of {} apart, so the cost model chooses, over the measured links",
                        before.signature(), before.signature().betweenGbps(), between, TuningTable.SPEED_TOLERANCE);
            }
            LOG.info("HCOMM_TUNE_AT_INIT: measured in {} ms: between hosts {}; within a host {}",
                    (System.nanoTime() - t0) / 1_000_000, between == null ? "none" : between, within == null ? "none" : within);
        }
    }

    /**
     * The session's tuner: {@code HCOMM_ALGO} first; then, with a table, the entry of each communicator's shape; the
     * built-in model for the others (what {@code hcomm tune} measured the entry's choices with).
     */
    static Tuner tuner(CommConfig config, TuningTable table, int rank, String[] hostIds) {
        // UCX is costed as TCP until it has measured costs of its own
        String within = config.transport().sharedMemoryWithinHost() ? "shm" : "tcp";
        Tuner tuner = new Tuner(Tuner.LinkCost.TCP_LOOPBACK, within.equals("tcp") ? Tuner.LinkCost.TCP_LOOPBACK : Tuner.LinkCost.SHM,
                Tuner.parse(config.algo()), table, within, "tcp");
        if (table != null) {
            Tuner.Shape shape = Tuner.Shape.of(Topology.of(rank, hostIds));
            TuningTable.Entry world = tuner.entry(shape);
            if (world != null) {
                // not the entry's measured links for the shapes it lacks: hcomm tune measured the world's algorithms with
                // their inner communicators (a hierarchical one's host and leader groups) chosen by the built-in model,
                // and measured links there changed those inner choices (all-reduce at 2 MiB on 4 ranks ran 0.80-0.85x)
                if (rank == 0) LOG.info("tuning table {} ({}): entry for {}", table.source(), table.fingerprint(), world.signature());
            } else if (rank == 0) {
                LOG.warn("tuning table {} has no entry for this job ({}); the cost model chooses",
                        table.source(), TuningTable.Signature.of(shape, within, "tcp"));
            }
        }
        return tuner;
    }
}
