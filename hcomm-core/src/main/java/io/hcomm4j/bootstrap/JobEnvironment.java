package io.hcomm4j.bootstrap;

import io.hcomm4j.CommConfig;
import io.hcomm4j.HcommException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one reader of what launchers tell a process about its job: its rank, the world size and, for
 * {@code HCOMM_INIT_METHOD=env://}, where the store is. Init ({@link Bootstrap}) and the command line ({@code hcomm perf}
 * and {@code hcomm tune} inside a job) both ask here, so they read the same variables by the same rule.
 *
 * <p>The rule, strongest first (docs/deploy.md, "What every rank needs", says it for users):
 * <ol>
 *   <li>a rank or world size set in code ({@link CommConfig.Builder#rank}) wins over every variable;</li>
 *   <li>{@code HCOMM_RANK}/{@code HCOMM_WORLD_SIZE} (or {@code -Dhcomm.rank}/{@code -Dhcomm.world.size});</li>
 *   <li>the launcher that started the process: torchrun or {@code hcomm launch} ({@code RANK}/{@code WORLD_SIZE}),
 *       Open MPI ({@code OMPI_COMM_WORLD_RANK}/{@code OMPI_COMM_WORLD_SIZE}), MPICH or Intel MPI's Hydra
 *       ({@code PMI_RANK}/{@code PMI_SIZE});</li>
 *   <li>the allocation around it: a Kubernetes Indexed Job ({@code JOB_COMPLETION_INDEX} with the manifest's
 *       {@code WORLD_SIZE}), a Slurm srun step ({@code SLURM_PROCID}/{@code SLURM_NTASKS}, only with
 *       {@code SLURM_STEP_ID}).</li>
 * </ol>
 * Levels 2 and 3 describe the same process, so where both are set they must agree, and so must two launchers of level
 * 3 (or two allocations of level 4): otherwise one of them is stale (an exported variable, a launcher's variables that
 * leaked into another's) and guessing would put two processes on one rank, so it is an error naming both. Level 4 is
 * legitimately overridden by 2 or 3: mpirun run from a batch script, torchrun under srun or in an indexed pod number
 * their own ranks, and the allocation's numbers (the batch step's {@code SLURM_PROCID=0}, inherited by every rank of
 * mpirun; a pod's index, which is torchrun's node rank) are not this process's. What was overridden is logged with the
 * choice, at INFO; a choice that overrode nothing at DEBUG. Slurm variables without {@code SLURM_STEP_ID} belong to the
 * batch script itself (or an salloc shell), not to a task of an srun step, and never give a rank.
 */
public final class JobEnvironment {
    private static final Logger LOG = LoggerFactory.getLogger(JobEnvironment.class);
    /** Slurm's default store port is this plus the job id modulo {@link #SLURM_PORTS}: the recipe's formula. */
    static final int SLURM_PORT_BASE = 20000;
    static final int SLURM_PORTS = 20000;

    private JobEnvironment() {
    }

    /** A variable convention for rank and world size, and how strongly it speaks (lower {@code level} wins). */
    public enum Source {
        /** {@link CommConfig.Builder#rank}/{@link CommConfig.Builder#worldSize} set in code. */
        CONFIG(null, null, "CommConfig, set in code", 1),
        /** {@code HCOMM_RANK}/{@code HCOMM_WORLD_SIZE}, or the system properties {@code hcomm.rank}/{@code hcomm.world.size}. */
        HCOMM("HCOMM_RANK", "HCOMM_WORLD_SIZE", "set by you", 2),
        /** torchrun and {@code hcomm launch}. */
        TORCHRUN("RANK", "WORLD_SIZE", "torchrun / hcomm launch", 3),
        /** Open MPI's mpirun. */
        OPEN_MPI("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI mpirun", 3),
        /** MPICH's or Intel MPI's Hydra ({@code mpiexec}). */
        PMI("PMI_RANK", "PMI_SIZE", "MPICH / Intel MPI (Hydra)", 3),
        /** A Kubernetes Indexed Job: the controller sets the index, the manifest the size. */
        KUBERNETES("JOB_COMPLETION_INDEX", "WORLD_SIZE", "Kubernetes Indexed Job", 4),
        /** A task of a Slurm srun step. */
        SLURM("SLURM_PROCID", "SLURM_NTASKS", "Slurm srun", 4);

        final String rankVar;
        final String sizeVar;
        final String who;
        final int level;

        Source(String rankVar, String sizeVar, String who, int level) {
            this.rankVar = rankVar;
            this.sizeVar = sizeVar;
            this.who = who;
            this.level = level;
        }
    }

    /**
     * This process's place in its job.
     *
     * @param rank      this process's rank
     * @param worldSize number of ranks
     * @param source    where the rank came from
     * @param choice    what gave rank and size, for the log: e.g. {@code rank 2 of 4 from OMPI_COMM_WORLD_RANK=2,
     *                  OMPI_COMM_WORLD_SIZE=4 (Open MPI mpirun)}
     * @param ignored   variables that were set but overridden, each with its value and who sets it
     */
    public record Placement(int rank, int worldSize, Source source, String choice, List<String> ignored) {
    }

    /** Where the store is for {@code env://}, and which variables said so (for messages). */
    record StoreAddress(InetSocketAddress address, String origin) {
    }

    /**
     * The job the environment {@code env} describes (without code-set values or system properties: what the command line
     * sees), or empty when no launcher variable is set.
     *
     * @throws HcommException the variables contradict each other, or one is not a valid number
     */
    public static Optional<Placement> detect(Map<String, String> env) {
        return Optional.ofNullable(place(CommConfig.UNSET, CommConfig.UNSET, env, k -> null, false));
    }

    /**
     * Rank and world size for init: {@code config}'s where set, the rest from {@code env} (and the system properties
     * {@code props}) by the rule of the class comment. Logs the choice once.
     *
     * @throws HcommException nothing gives a rank or size, two sources contradict each other, or a value is invalid
     */
    static Placement resolve(CommConfig config, Map<String, String> env, Function<String, String> props) {
        Placement p = place(config.rank(), config.worldSize(), env, props, true);
        if (p.ignored().isEmpty()) {
            LOG.debug("{}", p.choice());
        } else {
            LOG.info("{}; ignored {}", p.choice(), String.join("; ", p.ignored()));
        }
        return p;
    }

    /** One convention's variables as found: raw strings, null where unset. */
    private record Reading(Source source, String rankVar, String sizeVar, String rank, String size) {
        boolean complete() { return rank != null && size != null; }

        boolean any() { return rank != null || size != null; }

        int rankValue() { return parse(rankVar, rank); }

        int sizeValue() { return parse(sizeVar, size); }

        String shown() {
            List<String> parts = new ArrayList<>(2);
            if (rank != null) parts.add(rankVar + "=" + rank);
            if (size != null) parts.add(sizeVar + "=" + size);
            return String.join(", ", parts) + " (" + source.who + ")";
        }
    }

    private static Placement place(int configRank, int configSize, Map<String, String> env, Function<String, String> props,
                                   boolean required) {
        Reading hcomm = hcommReading(env, props);
        // A config value equal to HCOMM_RANK came from there (CommConfig.fromEnvironment): it is checked like the variable.
        boolean codeRank = configRank != CommConfig.UNSET && !Integer.valueOf(configRank).equals(tryParse(hcomm.rank()));
        boolean codeSize = configSize != CommConfig.UNSET && !Integer.valueOf(configSize).equals(tryParse(hcomm.size()));
        List<Reading> launchers = new ArrayList<>();
        List<Reading> allocations = new ArrayList<>();
        List<String> halfSet = new ArrayList<>();
        List<String> ignored = new ArrayList<>();
        read(env, launchers, allocations, halfSet, ignored);
        boolean envNeeded = !(codeRank && codeSize);
        if (envNeeded) {
            agree(launchers);
            agree(allocations);
        }
        Reading launcher = !launchers.isEmpty() ? launchers.getFirst() : !allocations.isEmpty() ? allocations.getFirst() : null;
        if (envNeeded && !launchers.isEmpty()) {
            Reading l = launchers.getFirst();
            if (!codeRank && hcomm.rank() != null && hcomm.rankValue() != l.rankValue()) contradiction(hcomm, l);
            if (!codeSize && hcomm.size() != null && hcomm.sizeValue() != l.sizeValue()) contradiction(hcomm, l);
        }

        // Each of rank and size from the strongest that has it: code, then HCOMM_*, then the launcher or allocation.
        Reading rankFrom = codeRank ? null : hcomm.rank() != null ? hcomm : launcher;
        Reading sizeFrom = codeSize ? null : hcomm.size() != null ? hcomm : launcher;
        int rank = codeRank ? configRank : rankFrom != null ? rankFrom.rankValue() : CommConfig.UNSET;
        int size = codeSize ? configSize : sizeFrom != null ? sizeFrom.sizeValue() : CommConfig.UNSET;
        boolean haveRank = codeRank || rankFrom != null;
        boolean haveSize = codeSize || sizeFrom != null;
        if (!haveRank || !haveSize) {
            if (!required && !haveRank && !haveSize) return null;
            throw new HcommException(notFound(halfSet, ignored));
        }
        String rankName = codeRank ? Source.CONFIG.who : rankFrom.rankVar();
        String sizeName = codeSize ? Source.CONFIG.who : sizeFrom.sizeVar();
        if (size < 1) throw new HcommException("world size " + size + " (from " + sizeName + ") must be >= 1");
        if (rank < 0 || rank >= size) {
            throw new HcommException("rank " + rank + " (from " + rankName + ") is outside [0, " + size
                    + ") for world size " + size + " (from " + sizeName + ")");
        }
        if (hcomm.any() && (hcomm.rank() != null && hcomm.rankValue() != rank || hcomm.size() != null && hcomm.sizeValue() != size)) {
            ignored.add(hcomm.shown());
        }
        for (Reading r : launchers) overridden(r, rank, size, ignored);
        for (Reading r : allocations) overridden(r, rank, size, ignored);
        Source source = codeRank ? Source.CONFIG : rankFrom.source();
        String choice = codeRank && codeSize ? "rank " + rank + " of " + size + " from the " + Source.CONFIG.who
                : rankFrom != null && rankFrom == sizeFrom ? "rank " + rank + " of " + size + " from " + rankFrom.shown()
                : "rank " + rank + " (from " + rankName + ") of " + size + " (from " + sizeName + ")";
        return new Placement(rank, size, source, choice, List.copyOf(ignored));
    }

    /**
     * Sorts the complete pairs in {@code env} into launchers (level 3) and allocations (level 4), in the order of
     * {@link Source}; notes half pairs, and Slurm variables outside an srun step (which count as ignored).
     */
    private static void read(Map<String, String> env, List<Reading> launchers, List<Reading> allocations, List<String> halfSet,
                             List<String> ignored) {
        for (Source s : Source.values()) {
            if (s.level < 3) continue;
            Reading r = new Reading(s, s.rankVar, s.sizeVar, value(env, s.rankVar), value(env, s.sizeVar));
            if (!r.any()) continue;
            if (s == Source.SLURM && value(env, "SLURM_STEP_ID") == null && value(env, "SLURM_STEPID") == null) {
                ignored.add(r.shown().replace("(Slurm srun)", "(Slurm's batch script or salloc shell, not an srun step: "
                        + "no SLURM_STEP_ID)"));
                continue;
            }
            if (!r.complete()) {
                // WORLD_SIZE is both torchrun's and an Indexed Job's size: alone, it is reported once, as torchrun's
                boolean sharedSize = r.rank() == null && (s == Source.KUBERNETES
                        || s == Source.TORCHRUN && value(env, Source.KUBERNETES.rankVar) != null);
                if (!sharedSize) {
                    halfSet.add((r.rank() != null ? r.rankVar() + " is set but " + r.sizeVar() : r.sizeVar() + " is set but " + r.rankVar())
                            + " is not");
                }
                continue;
            }
            (s.level == 3 ? launchers : allocations).add(r);
        }
    }

    /** HCOMM_RANK/HCOMM_WORLD_SIZE, each replaced by its system property where that is set (as CommConfig reads them). */
    private static Reading hcommReading(Map<String, String> env, Function<String, String> props) {
        String rp = blankToNull(props.apply("hcomm.rank"));
        String sp = blankToNull(props.apply("hcomm.world.size"));
        return new Reading(Source.HCOMM, rp != null ? "hcomm.rank" : "HCOMM_RANK", sp != null ? "hcomm.world.size" : "HCOMM_WORLD_SIZE",
                rp != null ? rp : value(env, "HCOMM_RANK"), sp != null ? sp : value(env, "HCOMM_WORLD_SIZE"));
    }

    /** Two launchers (or two allocations) that both describe this process must describe the same place. */
    private static void agree(List<Reading> readings) {
        Reading first = readings.isEmpty() ? null : readings.getFirst();
        for (Reading r : readings) {
            if (r.rankValue() != first.rankValue() || r.sizeValue() != first.sizeValue()) contradiction(first, r);
        }
    }

    private static void contradiction(Reading a, Reading b) {
        throw new HcommException("contradicting launcher variables: " + a.shown() + " but " + b.shown() + "; both claim to "
                + "say where this process is, so one of them is stale (exported in the shell, or inherited from another "
                + "launcher): unset the variables that do not belong to the launcher that started this process");
    }

    private static void overridden(Reading r, int rank, int size, List<String> ignored) {
        if (r.rankValue() != rank || r.sizeValue() != size) ignored.add(r.shown());
    }

    private static String notFound(List<String> halfSet, List<String> ignored) {
        StringBuilder sb = new StringBuilder("cannot tell this process's rank and world size: set HCOMM_RANK and "
                + "HCOMM_WORLD_SIZE, or start it with a launcher; looked for ");
        List<Source> looked = new ArrayList<>();
        for (Source s : Source.values()) if (s.level >= 3) looked.add(s);
        for (int i = 0; i < looked.size(); i++) {
            Source s = looked.get(i);
            if (i > 0) sb.append(i == looked.size() - 1 ? " and " : ", ");
            sb.append(s.rankVar).append('/').append(s.sizeVar).append(" (").append(s.who)
                    .append(s == Source.SLURM ? ", with SLURM_STEP_ID" : "").append(')');
        }
        if (halfSet.isEmpty() && ignored.isEmpty()) return sb.append(", found none").toString();
        List<String> found = new ArrayList<>(halfSet);
        for (String i : ignored) found.add("found " + i);
        return sb.append("; ").append(String.join("; ", found)).toString();
    }

    /**
     * The store's address for {@code env://} as init finds it, from {@code env} alone ({@code HCOMM_STORE_PORT} as the
     * configured store port): for {@code hcomm status}, which looks at a job from beside it.
     *
     * @throws HcommException the variables do not name a store, or contradict each other
     */
    public static InetSocketAddress storeAddress(Map<String, String> env) {
        CommConfig.Builder b = CommConfig.builder();
        String storePort = value(env, "HCOMM_STORE_PORT");
        if (storePort != null) b.storePort(Bootstrap.parsePort(storePort, "HCOMM_STORE_PORT"));
        return storeAddress(b.build(), env, detect(env).map(Placement::source).orElse(null)).address();
    }

    /**
     * The store's address for {@code env://}: {@code MASTER_ADDR} and {@code MASTER_PORT} (or {@code HCOMM_STORE_PORT});
     * in an srun step whose task numbers gave the rank, the first node of the step and a port from the job id where they
     * are unset.
     *
     * @param rankSource where the rank came from, or null (a replacement process, which has none yet)
     * @throws HcommException an address or port is missing or malformed, or torchrun's own store holds MASTER_PORT
     */
    static StoreAddress storeAddress(CommConfig config, Map<String, String> env, Source rankSource) {
        boolean portFromConfig = config.storePort() != CommConfig.UNSET;
        String useAgentStore = value(env, "TORCHELASTIC_USE_AGENT_STORE");
        if (!portFromConfig && useAgentStore != null && isTrue(useAgentStore)) {
            throw new HcommException("torchrun's agent serves its own store at MASTER_ADDR:MASTER_PORT ("
                    + value(env, "MASTER_ADDR") + ":" + value(env, "MASTER_PORT") + "; TORCHELASTIC_USE_AGENT_STORE="
                    + useAgentStore + "), which is not an HComm4J store and whose port rank 0 cannot take; set "
                    + "HCOMM_STORE_PORT to another port, free on rank 0's host and the same on every rank, or "
                    + "HCOMM_INIT_METHOD=tcp://host:port or file:///shared/dir");
        }
        boolean slurm = rankSource == Source.SLURM;
        String host = value(env, "MASTER_ADDR");
        String hostFrom = "MASTER_ADDR";
        String nodes = null;
        if (host == null && slurm) {
            for (String v : List.of("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")) {
                if ((nodes = value(env, v)) != null) {
                    hostFrom = "the first node of " + v;
                    try {
                        host = SlurmHostlist.first(nodes);
                    } catch (IllegalArgumentException e) {
                        throw new HcommException(v + "='" + nodes + "' is not a Slurm host list: " + e.getMessage(), e);
                    }
                    break;
                }
            }
        }
        String port = portFromConfig ? Integer.toString(config.storePort()) : value(env, "MASTER_PORT");
        String portFrom = portFromConfig ? "HCOMM_STORE_PORT" : "MASTER_PORT";
        if (port == null && slurm && value(env, "SLURM_JOB_ID") != null) {
            long job;
            try {
                job = Long.parseLong(value(env, "SLURM_JOB_ID"));
            } catch (NumberFormatException e) {
                throw new HcommException("SLURM_JOB_ID='" + value(env, "SLURM_JOB_ID") + "' is not an integer");
            }
            port = Long.toString(SLURM_PORT_BASE + Math.floorMod(job, SLURM_PORTS));
            portFrom = SLURM_PORT_BASE + " + SLURM_JOB_ID % " + SLURM_PORTS;
        }
        List<String> missing = new ArrayList<>();
        if (host == null) missing.add("MASTER_ADDR");
        if (port == null) missing.add("MASTER_PORT");
        if (!missing.isEmpty()) {
            throw new HcommException("init method env:// finds the store at MASTER_ADDR:MASTER_PORT (or MASTER_ADDR "
                    + "and HCOMM_STORE_PORT" + (slurm ? "; in an srun step, the first node of SLURM_STEP_NODELIST and "
                    + "20000 + SLURM_JOB_ID % 20000" : "") + "), but " + String.join(" and ", missing)
                    + (missing.size() > 1 ? " are" : " is") + " not set; set them, or use HCOMM_INIT_METHOD=tcp://host:port "
                    + "or file:///shared/dir");
        }
        int p = Bootstrap.parsePort(port, portFrom);
        return new StoreAddress(new InetSocketAddress(host, p), hostFrom.equals("MASTER_ADDR") && !portFrom.contains("SLURM")
                ? (portFromConfig ? "MASTER_ADDR and HCOMM_STORE_PORT" : "MASTER_ADDR:MASTER_PORT")
                : hostFrom + " and " + portFrom);
    }

    private static boolean isTrue(String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "1", "true", "yes", "on" -> true;
            default -> false;
        };
    }

    private static String value(Map<String, String> env, String name) {
        return blankToNull(env.get(name));
    }

    private static String blankToNull(String v) {
        return v == null || v.isBlank() ? null : v.trim();
    }

    private static Integer tryParse(String v) {
        try {
            return v == null ? null : Integer.valueOf(v);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static int parse(String name, String v) {
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new HcommException(name + "='" + v + "' is not an integer");
        }
    }
}
