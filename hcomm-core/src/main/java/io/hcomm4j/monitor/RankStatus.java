package io.hcomm4j.monitor;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One rank's state as it publishes it in the store (key {@code <session namespace>status/<rank>}) for
 * {@code hcomm status}: its health, its communicators and how many collectives each has called, and the ops that run
 * now with what they wait for. A rank publishes it only when something changes that matters to an operator: an op of it
 * waited longer than {@code HCOMM_STUCK_REPORT} (or stopped being stuck), a peer with a stuck op asked for it, or the
 * health of one of its communicators changed. So the store sees a few writes per incident, not a stream.
 *
 * <p>Ranks are world ranks throughout; communicators are named by their id (the world communicator is 0).
 *
 * @param rank        the publishing rank
 * @param worldSize   ranks of the job
 * @param pid         its process id
 * @param host        its host name
 * @param timeMillis  when it was published (epoch milliseconds)
 * @param health      READY, DEGRADED or FAILED: the worst health of its communicators
 * @param failedRanks world ranks it knows to have failed
 * @param reason      why the health is not READY (empty when it is)
 * @param comms       its communicators
 * @param ops         its ops that run now: every running collective and every pending point-to-point op (stuck: longer than the limit)
 */
public record RankStatus(int rank, int worldSize, long pid, String host, long timeMillis, String health,
                         List<Integer> failedRanks, String reason, List<Comm> comms, List<Op> ops) {
    private static final String MAGIC = "hcomm-status 1";

    /**
     * A communicator of the rank.
     *
     * @param id          communicator id (0: world)
     * @param size        its ranks
     * @param rank        the publishing rank's rank in it
     * @param collectives collectives called on it so far (the sequence number of the last one)
     */
    public record Comm(long id, int size, int rank, long collectives) {
    }

    /**
     * An op that runs now.
     *
     * @param commId       its communicator
     * @param kind         {@code allReduce}, {@code broadcast}, … for a collective; {@code send}, {@code recv}, {@code probe}
     * @param collective   true for a collective
     * @param seq          a collective's sequence number on its communicator; a point-to-point op's tag (-1: any)
     * @param bytes        its size (a collective's largest buffer; a receive's buffer), -1 if not known
     * @param waitedMillis how long it has run
     * @param waitingFor   world ranks it waits for (a message from, or room at); empty: none (it computes, or -1 for any source)
     * @param stuck        it waited longer than {@code HCOMM_STUCK_REPORT}
     */
    public record Op(long commId, String kind, boolean collective, long seq, long bytes, long waitedMillis,
                     List<Integer> waitingFor, boolean stuck) {
        /** @throws NullPointerException if kind or waitingFor is null */
        public Op {
            Objects.requireNonNull(kind, "kind");
            waitingFor = List.copyOf(waitingFor);
        }
    }

    /** @throws NullPointerException if a text or list argument is null */
    public RankStatus {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(health, "health");
        Objects.requireNonNull(reason, "reason");
        failedRanks = List.copyOf(failedRanks);
        comms = List.copyOf(comms);
        ops = List.copyOf(ops);
    }

    /** The store key of {@code rank}'s status in the session namespace {@code namespace} (e.g. {@code hcomm/1/}). */
    public static String key(String namespace, int rank) {
        return namespace + "status/" + rank;
    }

    /** Line-oriented text, as stored. */
    public String encode() {
        StringBuilder sb = new StringBuilder(MAGIC).append('\n');
        sb.append("rank ").append(rank).append(" of ").append(worldSize).append(" pid ").append(pid).append(" host ")
                .append(oneWord(host)).append(" time ").append(timeMillis).append('\n');
        sb.append("health ").append(oneWord(health)).append(" failed ").append(list(failedRanks)).append(" reason ")
                .append(reason.replace('\n', ' ')).append('\n');
        for (Comm c : comms) {
            sb.append("comm ").append(Long.toHexString(c.id())).append(" size ").append(c.size()).append(" rank ").append(c.rank())
                    .append(" collectives ").append(c.collectives()).append('\n');
        }
        for (Op o : ops) {
            sb.append("op comm ").append(Long.toHexString(o.commId())).append(o.collective() ? " collective " : " p2p ")
                    .append(oneWord(o.kind())).append(" seq ").append(o.seq()).append(" bytes ").append(o.bytes())
                    .append(" waited ").append(o.waitedMillis()).append(" for ").append(list(o.waitingFor()))
                    .append(o.stuck() ? " stuck" : " running").append('\n');
        }
        return sb.toString();
    }

    /**
     * Parses what {@link #encode()} wrote.
     *
     * @throws IllegalArgumentException if {@code text} is not a status of this version
     */
    public static RankStatus decode(String text) {
        String[] lines = text.split("\n");
        if (lines.length < 3 || !lines[0].equals(MAGIC)) throw new IllegalArgumentException("not an hcomm status: " + first(text));
        try {
            String[] a = lines[1].split(" ");
            int rank = Integer.parseInt(a[1]);
            int worldSize = Integer.parseInt(a[3]);
            long pid = Long.parseLong(a[5]);
            String host = a[7];
            long time = Long.parseLong(a[9]);
            String h = lines[2];
            if (!h.startsWith("health ")) throw new IllegalArgumentException("no health line");
            int fi = h.indexOf(" failed ");
            int ri = h.indexOf(" reason ");
            String health = h.substring(7, fi);
            List<Integer> failed = parseList(h.substring(fi + 8, ri));
            String reason = h.substring(ri + 8);
            List<Comm> comms = new ArrayList<>();
            List<Op> ops = new ArrayList<>();
            for (int i = 3; i < lines.length; i++) {
                String[] f = lines[i].split(" ");
                if (f[0].equals("comm")) {
                    comms.add(new Comm(Long.parseUnsignedLong(f[1], 16), Integer.parseInt(f[3]), Integer.parseInt(f[5]), Long.parseLong(f[7])));
                } else if (f[0].equals("op")) {
                    ops.add(new Op(Long.parseUnsignedLong(f[2], 16), f[4], f[3].equals("collective"), Long.parseLong(f[6]),
                            Long.parseLong(f[8]), Long.parseLong(f[10]), parseList(f[12]), f.length > 13 && f[13].equals("stuck")));
                }
            }
            return new RankStatus(rank, worldSize, pid, host, time, health, failed, reason, comms, ops);
        } catch (RuntimeException e) {
            if (e instanceof IllegalArgumentException iae && !(e instanceof NumberFormatException)) throw iae;
            throw new IllegalArgumentException("malformed hcomm status (" + e + "): " + first(text), e);
        }
    }

    private static String first(String text) {
        return text.length() > 80 ? text.substring(0, 80) + "..." : text;
    }

    private static String oneWord(String s) {
        return s.isEmpty() ? "-" : s.replaceAll("\\s+", "_");
    }

    private static String list(List<Integer> xs) {
        if (xs.isEmpty()) return "-";
        StringBuilder sb = new StringBuilder();
        for (int x : xs) {
            if (!sb.isEmpty()) sb.append(',');
            sb.append(x);
        }
        return sb.toString();
    }

    private static List<Integer> parseList(String s) {
        List<Integer> out = new ArrayList<>();
        if (s.equals("-") || s.isEmpty()) return out;
        for (String x : s.split(",")) out.add(Integer.parseInt(x));
        return out;
    }
}
