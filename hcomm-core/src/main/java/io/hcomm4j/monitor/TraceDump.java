package io.hcomm4j.monitor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One rank's flight record as a file: every communicator of its session with its last ops, as JSON (schema
 * {@value #SCHEMA}, documented in docs/observability.md; close to PyTorch's flight recorder: a version, the process,
 * then per communicator the entries with sequence numbers, ops, sizes, states and times). Written on a timeout, an
 * abort, {@code comm.dumpTrace(path)} and {@code hcomm status --dump}; read by {@code hcomm trace}.
 *
 * @param rank           the rank's world rank
 * @param worldSize      ranks of the job
 * @param pid            its process id
 * @param host           its host name
 * @param dumpedAtMillis when it was written (epoch milliseconds)
 * @param reason         why ({@code timeout: …}, {@code abort: …}, {@code requested}, {@code dumpTrace})
 * @param comms          its communicators
 */
public record TraceDump(int rank, int worldSize, long pid, String host, long dumpedAtMillis, String reason, List<Comm> comms) {
    /** The {@code schema} member of every dump this version writes. */
    public static final String SCHEMA = "hcomm-trace/1";

    /**
     * A communicator's part.
     *
     * @param id          its id (0: world)
     * @param rank        the rank's rank in it
     * @param size        its ranks
     * @param worldRanks  the world rank of each of its ranks
     * @param collectives collectives called on it (the last sequence number)
     * @param recorded    ops recorded on it (those before the last {@code capacity} are not in {@code entries})
     * @param capacity    the ring's size
     * @param entries     its last ops, oldest first
     */
    public record Comm(long id, int rank, int size, List<Integer> worldRanks, long collectives, long recorded, int capacity,
                       List<TraceEntry> entries) {
        /** @throws NullPointerException if a list is null */
        public Comm {
            worldRanks = List.copyOf(worldRanks);
            entries = List.copyOf(entries);
        }
    }

    /** @throws NullPointerException if host, reason or comms is null */
    public TraceDump {
        java.util.Objects.requireNonNull(host, "host");
        java.util.Objects.requireNonNull(reason, "reason");
        comms = List.copyOf(comms);
    }

    /**
     * A request that every rank of a session write its flight record (what a timeout, an abort and {@code hcomm status
     * --dump} make): a generation (each request a new one) and where (empty: each rank's HCOMM_TRACE_DIR).
     *
     * @param generation the request's number in the session (1, 2 …)
     * @param folder     where the ranks write, or empty
     * @param reason     who asked and why
     */
    public record Request(long generation, String folder, String reason) {
        /** The store key of requests in a session's namespace ({@code hcomm/<generation>/}). */
        public static String key(String namespace) {
            return namespace + "trace/dump";
        }

        /** Makes a request in the store: a new generation, then the request itself (ranks look every 2 s). */
        public static Request make(io.hcomm4j.bootstrap.Store store, String namespace, String folder, String reason) {
            long generation = store.add(key(namespace) + "-generation", 1);
            Request r = new Request(generation, folder, reason.replace('\n', ' '));
            store.set(key(namespace), (generation + "\n" + r.folder + "\n" + r.reason).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return r;
        }

        /** The request in the store now, or null. @throws IllegalArgumentException if its value is not one */
        public static Request read(io.hcomm4j.bootstrap.Store store, String namespace) {
            byte[] v = store.tryGet(key(namespace));
            if (v == null) return null;
            String[] parts = new String(v, java.nio.charset.StandardCharsets.UTF_8).split("\n", 3);
            try {
                return new Request(Long.parseLong(parts[0].trim()), parts.length > 1 ? parts[1].trim() : "",
                        parts.length > 2 ? parts[2] : "requested");
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a flight-record request: " + parts[0]);
            }
        }
    }

    /** The file name of {@code rank}'s dump in a dump folder. */
    public static String fileName(int rank) {
        return "hcomm-trace-rank" + rank + ".json";
    }

    /** Writes the dump to {@code file} (through a temporary file beside it, so a reader never sees half of it). */
    public void write(Path file) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, file.getFileName().toString(), ".tmp");
        try {
            Files.writeString(tmp, toJson());
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** The dump as JSON text. */
    public String toJson() {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("schema", SCHEMA);
        root.put("library", version());
        root.put("rank", rank);
        root.put("world_size", worldSize);
        root.put("pid", pid);
        root.put("host", host);
        root.put("dumped_at_ms", dumpedAtMillis);
        root.put("reason", reason);
        List<Object> cs = new ArrayList<>();
        for (Comm c : comms) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", Long.toHexString(c.id()));
            m.put("rank", c.rank());
            m.put("size", c.size());
            m.put("world_ranks", c.worldRanks());
            m.put("collectives", c.collectives());
            m.put("recorded", c.recorded());
            m.put("capacity", c.capacity());
            List<Object> es = new ArrayList<>();
            for (TraceEntry e : c.entries()) es.add(entry(e));
            m.put("entries", es);
            cs.add(m);
        }
        root.put("communicators", cs);
        return Json.write(root);
    }

    private static Map<String, Object> entry(TraceEntry e) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("record_id", e.recordId());
        m.put("kind", e.kind().name().toLowerCase(java.util.Locale.ROOT));
        m.put("op", e.op());
        m.put("seq", e.seq());
        m.put("peer", e.peer());
        m.put("tag", e.tag());
        m.put("dtype", e.type());
        m.put("reduction", e.reduction());
        m.put("count", e.count());
        m.put("bytes", e.bytes());
        m.put("fingerprint", Integer.toHexString(e.fingerprint()));
        m.put("stream", e.stream());
        m.put("algorithm", e.algorithm());
        m.put("path", e.path());
        m.put("channels", e.channels());
        m.put("state", e.state().label());
        // microseconds: exact in a JSON number read as a double (epoch nanoseconds are not)
        m.put("called_us", e.calledEpochNanos() / 1000);
        m.put("started_us", e.startedEpochNanos() / 1000);
        m.put("ended_us", e.endedEpochNanos() / 1000);
        m.put("duration_us", e.durationNanos() / 1000);
        m.put("error", e.error());
        m.put("failed_ranks", e.failedRanks());
        return m;
    }

    /**
     * Reads what {@link #toJson()} wrote.
     *
     * @throws IllegalArgumentException if the text is not JSON, not a dump of schema {@value #SCHEMA}, or misses a member
     */
    public static TraceDump parse(String json) {
        if (!(Json.parse(json) instanceof Map<?, ?> root)) throw new IllegalArgumentException("a trace dump is a JSON object");
        Object schema = root.get("schema");
        if (!SCHEMA.equals(schema)) {
            throw new IllegalArgumentException("not a trace dump of schema " + SCHEMA + " (schema: " + schema + ")");
        }
        List<Comm> comms = new ArrayList<>();
        for (Object o : list(root, "communicators")) {
            Map<?, ?> c = (Map<?, ?>) o;
            long id = Long.parseUnsignedLong(text(c, "id"), 16);
            List<TraceEntry> es = new ArrayList<>();
            for (Object x : list(c, "entries")) {
                Map<?, ?> e = (Map<?, ?>) x;
                String error = (String) e.get("error");
                List<Integer> failed = new ArrayList<>();
                for (Object r : list(e, "failed_ranks")) failed.add(((Number) r).intValue());
                es.add(new TraceEntry(num(e, "record_id"), id, OpTrace.Kind.valueOf(text(e, "kind").toUpperCase(java.util.Locale.ROOT)),
                        text(e, "op"), num(e, "seq"), (int) num(e, "peer"), (int) num(e, "tag"), (String) e.get("dtype"),
                        (String) e.get("reduction"), num(e, "count"), num(e, "bytes"), Integer.parseUnsignedInt(text(e, "fingerprint"), 16),
                        (int) num(e, "stream"), (String) e.get("algorithm"), (String) e.get("path"),
                        e.get("channels") instanceof Number ch ? ch.intValue() : 0,
                        OpTrace.State.valueOf(text(e, "state").toUpperCase(java.util.Locale.ROOT)), num(e, "called_us") * 1000,
                        num(e, "started_us") * 1000, num(e, "ended_us") * 1000, num(e, "duration_us") * 1000, error, failed));
            }
            List<Integer> worldRanks = new ArrayList<>();
            for (Object r : list(c, "world_ranks")) worldRanks.add(((Number) r).intValue());
            comms.add(new Comm(id, (int) num(c, "rank"), (int) num(c, "size"), worldRanks, num(c, "collectives"), num(c, "recorded"),
                    (int) num(c, "capacity"), es));
        }
        return new TraceDump((int) num(root, "rank"), (int) num(root, "world_size"), num(root, "pid"), text(root, "host"),
                num(root, "dumped_at_ms"), text(root, "reason"), comms);
    }

    private static Object member(Map<?, ?> m, String name) {
        if (!m.containsKey(name)) throw new IllegalArgumentException("trace dump: member \"" + name + "\" is missing");
        return m.get(name);
    }

    private static long num(Map<?, ?> m, String name) {
        if (!(member(m, name) instanceof Number n)) throw new IllegalArgumentException("trace dump: \"" + name + "\" is not a number");
        return n.longValue();
    }

    private static String text(Map<?, ?> m, String name) {
        if (!(member(m, name) instanceof String s)) throw new IllegalArgumentException("trace dump: \"" + name + "\" is not a string");
        return s;
    }

    private static List<?> list(Map<?, ?> m, String name) {
        if (!(member(m, name) instanceof List<?> l)) throw new IllegalArgumentException("trace dump: \"" + name + "\" is not an array");
        return l;
    }

    private static String version() {
        String v = TraceDump.class.getPackage().getImplementationVersion();
        return "hcomm4j " + (v == null ? "dev" : v);
    }
}
