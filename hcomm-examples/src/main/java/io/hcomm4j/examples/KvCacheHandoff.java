package io.hcomm4j.examples;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import io.hcomm4j.HcommException;
import io.hcomm4j.Notification;
import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.RemoteEngine;
import io.hcomm4j.TransferBatch;
import io.hcomm4j.TransferConfig;
import io.hcomm4j.TransferEngine;
import io.hcomm4j.TransferOp;
import io.hcomm4j.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The KV-cache hand-off of disaggregated inference, on the {@link TransferEngine} (no communicator: prefill and decode
 * instances come and go). One decode engine registers a pool of KV memory; {@code P} prefill engines, each a process
 * of its own, compute the KV cache of their requests and WRITE it straight into that pool, then tell the decode engine
 * with a notification carrying the request's block table. The decode engine checks every byte and answers with
 * credits, so a prefill reuses pool space only once its earlier requests are consumed. One process per launcher rank:
 * rank 0 is the decode engine ({@code kv-decode}), rank k &gt; 0 prefill k − 1 ({@code kv-prefill-<k-1>}); or say it
 * with {@code --role decode|prefill --id k}.
 *
 * <p><b>The KV blocks.</b> A request's KV cache is {@code --blocks} blocks (default 4), one per group of layers, each
 * 4 KiB per prompt token (the K and V of one layer with 8 KV heads of 128 dims in FP16). Prompt lengths come from a
 * seeded mix of traffic: half short chat turns (16 to 255 tokens), 35% medium (256 to 2047), 15% long documents (2048
 * to 4096), so a block is 64 KiB to 16 MiB and a request 256 KiB to 64 MiB (about 15 MiB on average). Block b of
 * request r of prefill p holds a pseudo-random pattern seeded by (p, r, b); the sizes are a function of (p, r) too, so
 * the decode engine knows what every byte and every block length must be.
 *
 * <p><b>The hand-off.</b>
 * <ol>
 *   <li>The decode engine allocates one region of {@code --region-mib} MiB (default 128) per prefill from its engine's
 *       registered pool ({@code engine.memory()}, so a same-host prefill copies into the mapping, with no message and
 *       no copy in the decode process) and registers it as {@code kv-<p>}.</li>
 *   <li>A prefill connects to {@code kv-decode} by name (through the job's store) and says {@code hello}; the decode
 *       engine connects back and answers {@code welcome} with the region's size (its segments exist by then).</li>
 *   <li>Per request, the prefill fills the blocks in one of two staging buffers of its own pool, places the request in
 *       its region (a ring: the next free range after the requests not yet consumed), issues one WRITE batch with one
 *       op per block ({@code transferAsync}) and fills the next request while it runs. When a batch is COMPLETED, it
 *       sends {@code notify(decode, "kv", table)}: prefill id, request id, its send time (just before the batch was
 *       issued) and each block's offset and length. A notification sent after a COMPLETED batch arrives after the
 *       batch's bytes landed, so the table is the decode engine's go-ahead.</li>
 *   <li>The decode engine drains its notifications, checks every block of every request byte for byte, the block
 *       lengths, and that each prefill's requests arrive once each and in order, and sends the prefill a
 *       {@code freed} credit: the number of its requests consumed. A prefill that has no room in its region waits for
 *       credits.</li>
 *   <li>A prefill ends with {@code done} (how many requests it sent) and waits for the credit of its last request.</li>
 * </ol>
 *
 * <p><b>A prefill killed midway.</b> With {@code --kill-prefill k --kill-after n}, prefill k waits until its first n
 * requests are consumed, issues the WRITE batch of request n and kills its own JVM with SIGKILL while it runs (no
 * {@code done}, no goodbye, half a request in the pool). The decode engine notices: every prefill that has been
 * silent for 300 ms is probed with an 8-byte READ of its small {@code alive} segment (not in its pool, so the
 * prefill's progress engine must answer), which ends FAILED within the failure-detection time once the process is
 * gone; a {@code freed} credit that cannot be sent says the same. The decode engine goes on serving the others, and
 * reports how many of the dead prefill's requests it had checked. Its check passes only if the prefills that died are
 * exactly the one that was told to.
 *
 * <p><b>Numbers.</b> The decode engine prints requests/s and GB/s (1e9 bytes: the KV bytes checked, from the first
 * request's send time to the end of the last check) and the hand-off latency p50/p99: from the prefill's send time to
 * the moment the decode engine drained the request's notification (the KV is in its pool and it knows where).
 * The send times are the prefills' wall clocks ({@link Instant#now()}, microseconds), so the latency is meaningful
 * only between processes of one host (or hosts with well-synchronised clocks). On one host a prefill first writes its
 * whole region once, untimed, to fault in its mapping of the decode pool. Each prefill prints its own rate
 * (requests/s with the fill of the blocks included) and the bandwidth of its WRITE batches alone (issue to
 * completion).
 *
 * <p>Checks (exit code 1 if one fails): the decode engine, as above; each prefill, that every batch was COMPLETED and
 * that the decode engine acknowledged all its requests.
 *
 * <p>Run: {@code scripts/example.sh kv-cache -n 3} (1 decode, 2 prefill engines; {@code --kill-prefill 1
 * --kill-after 5} to kill one), or as the command of any launcher, which must serve the job's store
 * ({@code hcomm launch} does; else {@code hcomm store} with {@code HCOMM_STORE_HOSTED=1}): {@code java -cp
 * hcomm-examples.jar io.hcomm4j.examples.KvCacheHandoff [--role decode|prefill --id k] [--prefills P] [--requests 40]
 * [--blocks 4] [--region-mib 128] [--kill-prefill k --kill-after n]}. Engines never serve the store.
 */
public final class KvCacheHandoff {
    static final String NAME = "kv-cache";
    static final String DECODE = "kv-decode";
    /** KV bytes of one prompt token in one block. */
    static final long BYTES_PER_TOKEN = 4096;
    static final int MAX_TOKENS = 4096;
    static final long SEED = 12_000_000L;
    /** A prefill silent this long is probed. */
    static final long PROBE_AFTER_NANOS = 300_000_000L;

    private KvCacheHandoff() {
    }

    /** Runs one engine; see the class comment for the options. */
    public static void main(String[] args) {
        Examples.exit(NAME, () -> run(new Examples.Options(args, "role", "id", "prefills", "requests", "blocks", "region-mib",
                "kill-prefill", "kill-after")));
    }

    /** The options, checked. */
    record Settings(int prefills, int requests, int blocks, long regionBytes, int killPrefill, int killAfter) {
        /** The largest request: every block at the longest prompt. */
        long maxRequestBytes() {
            return blocks * MAX_TOKENS * BYTES_PER_TOKEN;
        }
    }

    static boolean run(Examples.Options options) throws Exception {
        int[] launcher = launcherRankAndSize();
        String role = options.stringValue("role", launcher == null ? "" : launcher[0] == 0 ? "decode" : "prefill");
        if (!role.equals("decode") && !role.equals("prefill")) {
            throw new IllegalArgumentException(role.isEmpty()
                    ? "no launcher rank (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK or HCOMM_RANK) and no --role: say --role decode or --role prefill --id k"
                    : "--role is decode or prefill, not " + role);
        }
        int prefills = options.intValue("prefills", launcher == null ? -1 : launcher[1] - 1);
        if (prefills < 1) throw new IllegalArgumentException("the hand-off needs at least one prefill engine: --prefills or 2 or more ranks");
        int requests = options.intValue("requests", 40);
        if (requests < 1) throw new IllegalArgumentException("--requests must be at least 1, not " + requests);
        int blocks = options.intValue("blocks", 4);
        if (blocks < 1 || blocks > 64) throw new IllegalArgumentException("--blocks must be in [1, 64], not " + blocks);
        Settings s = new Settings(prefills, requests, blocks, (long) options.intValue("region-mib", 128) << 20,
                options.intValue("kill-prefill", -1), options.intValue("kill-after", 5));
        if (s.regionBytes() < s.maxRequestBytes()) {
            throw new IllegalArgumentException("--region-mib " + (s.regionBytes() >> 20) + " cannot hold the largest request of "
                    + blocks + " blocks (" + (s.maxRequestBytes() >> 20) + " MiB)");
        }
        if (s.killPrefill() >= prefills) throw new IllegalArgumentException("--kill-prefill " + s.killPrefill() + " is not a prefill (0 to " + (prefills - 1) + ")");
        if (s.killPrefill() >= 0 && (s.killAfter() < 0 || s.killAfter() >= requests)) {
            throw new IllegalArgumentException("--kill-after must be in [0, --requests), not " + s.killAfter());
        }
        if (role.equals("decode")) return decode(s, launcher != null ? launcher[0] : 0);
        int id = options.intValue("id", launcher == null ? -1 : launcher[0] - 1);
        if (id < 0 || id >= prefills) throw new IllegalArgumentException("prefill --id must be in [0, " + prefills + "), not " + id);
        return prefill(s, id, launcher != null ? launcher[0] : id + 1);
    }

    // ------------------------------------------------------------------------------------------------- the KV blocks

    /** Prompt tokens of request {@code r} of prefill {@code p}, from the seeded mix of the class comment. */
    static int tokens(int p, int r) {
        SplittableRandom rnd = new SplittableRandom(SEED + 1_000_003L * p + r);
        double u = rnd.nextDouble();
        if (u < 0.50) return rnd.nextInt(16, 256);       // chat turns
        if (u < 0.85) return rnd.nextInt(256, 2048);     // medium
        return rnd.nextInt(2048, MAX_TOKENS + 1);        // long documents
    }

    /** Bytes of each block of request {@code r} of prefill {@code p} (64 KiB to 16 MiB). */
    static long blockBytes(int p, int r) {
        return tokens(p, r) * BYTES_PER_TOKEN;
    }

    /** The pattern seed of block {@code b} of request {@code r} of prefill {@code p}. */
    static long seed(int p, int r, int b) {
        return ((long) p << 48) ^ ((long) r << 16) ^ b ^ 0x5DEECE66DL;
    }

    /** The 8 bytes at word {@code w} of pattern {@code seed} (a SplitMix64-style mix: every word different). */
    static long word(long seed, long w) {
        long x = (w + 1) * 0x9E3779B97F4A7C15L ^ (seed + 1) * 0xBF58476D1CE4E5B9L;
        x ^= x >>> 31;
        x *= 0x94D049BB133111EBL;
        return x ^ (x >>> 29);
    }

    /** Fills {@code s[off, off + len)} with pattern {@code seed} ({@code len} a multiple of 8). */
    static void fill(MemorySegment s, long off, long len, long seed) {
        for (long i = 0; i < len; i += 8) s.set(JAVA_LONG_UNALIGNED, off + i, word(seed, i >>> 3));
    }

    /** The first byte of {@code s[off, off + len)} that differs from pattern {@code seed}, or -1: every byte is checked. */
    static long mismatch(MemorySegment s, long off, long len, long seed) {
        for (long i = 0; i < len; i += 8) {
            long want = word(seed, i >>> 3);
            if (s.get(JAVA_LONG_UNALIGNED, off + i) != want) {
                for (int j = 0; j < 8; j++) if (s.get(JAVA_BYTE, off + i + j) != (byte) (want >>> (8 * j))) return i + j;
            }
        }
        return -1;
    }

    // ------------------------------------------------------------------------------------------------- the messages

    /** A request's block table, as the {@code kv} notification carries it. */
    record Table(int prefill, int request, long sentMicros, long[] offsets, long[] lengths) {
        byte[] encode() {
            ByteBuffer b = ByteBuffer.allocate(20 + 16 * offsets.length).putInt(prefill).putInt(request).putLong(sentMicros).putInt(offsets.length);
            for (int i = 0; i < offsets.length; i++) b.putLong(offsets[i]).putLong(lengths[i]);
            return b.array();
        }

        static Table decode(byte[] bytes) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            int p = b.getInt();
            int r = b.getInt();
            long sent = b.getLong();
            int n = b.getInt();
            if (n < 0 || bytes.length != 20 + 16L * n) throw new IllegalArgumentException("a block table of " + bytes.length + " bytes for " + n + " blocks");
            long[] off = new long[n];
            long[] len = new long[n];
            for (int i = 0; i < n; i++) {
                off[i] = b.getLong();
                len[i] = b.getLong();
            }
            return new Table(p, r, sent, off, len);
        }
    }

    static byte[] ints(int... values) {
        ByteBuffer b = ByteBuffer.allocate(4 * values.length);
        for (int v : values) b.putInt(v);
        return b.array();
    }

    static int intAt(byte[] bytes, int index) {
        return ByteBuffer.wrap(bytes).getInt(4 * index);
    }

    static long nowMicros() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }

    static String prefillName(int p) {
        return "kv-prefill-" + p;
    }

    static String mib(long bytes) {
        return bytes % (1 << 20) == 0 ? (bytes >> 20) + " MiB" : bytes % 1024 == 0 && bytes < (1 << 20) ? (bytes >> 10) + " KiB"
                : Examples.fmt("%.2f MiB", bytes / (double) (1 << 20));
    }

    // ------------------------------------------------------------------------------------------------- decode

    /** What the decode engine knows of one prefill. */
    static final class Prefill {
        final int id;
        RemoteEngine remote;
        int planned = -1;        // from its hello
        int sent = -1;           // from its done
        int checked;             // requests checked (its next request id)
        int credited;            // the last credit sent
        boolean dead;
        String deathCause = "";
        long lastHeard;
        TransferBatch probe;

        Prefill(int id) {
            this.id = id;
        }

        boolean finished() {
            return dead || (sent >= 0 && checked == sent);
        }
    }

    static boolean decode(Settings s, int rank) {
        TransferConfig config = TransferConfig.builderFromEnvironment().name(DECODE).build();
        try (TransferEngine engine = TransferEngine.start(config)) {
            List<RegisteredBuffer> regions = new ArrayList<>();
            try {
                for (int p = 0; p < s.prefills(); p++) {
                    RegisteredBuffer region = engine.memory().allocate(s.regionBytes());
                    regions.add(region);
                    engine.register(region.segment(), "kv-" + p);
                }
                return serve(engine, s, rank, regions, config.comm().timeout(), config.comm().initTimeout());
            } finally {
                for (RegisteredBuffer b : regions) b.close();
            }
        }
    }

    /** The decode engine's loop: drains, checks, credits, probes, until every prefill finished or died; then reports. */
    static boolean serve(TransferEngine engine, Settings s, int rank, List<RegisteredBuffer> regions, Duration timeout,
                         Duration joinTimeout) {
        int size = s.prefills() + 1;
        Prefill[] prefills = new Prefill[s.prefills()];
        for (int p = 0; p < prefills.length; p++) prefills[p] = new Prefill(p);
        MemorySegment probeBuf = MemorySegment.ofArray(new long[1]);
        List<String> errors = new ArrayList<>();
        TreeSet<String> via = new TreeSet<>();
        long[] latencies = new long[s.prefills() * s.requests()];
        int handoffs = 0;
        long bytes = 0;
        long blocks = 0;
        long minBlock = Long.MAX_VALUE;
        long maxBlock = 0;
        long firstSent = Long.MAX_VALUE;
        long lastChecked = 0;
        long joinDeadline = System.nanoTime() + joinTimeout.toNanos();

        while (!Arrays.stream(prefills).allMatch(Prefill::finished)) {
            List<Notification> notes = engine.drainNotifies();
            long drained = nowMicros();
            long now = System.nanoTime();
            for (Notification n : notes) {
                int p = n.bytes().length >= 4 ? intAt(n.bytes(), 0) : -1;
                if (p < 0 || p >= prefills.length || !n.from().equals(prefillName(p))) {
                    errors.add("a notification '" + n.name() + "' from " + n.from() + " names prefill " + p);
                    continue;
                }
                Prefill f = prefills[p];
                f.lastHeard = now;
                switch (n.name()) {
                    case "hello" -> {
                        f.planned = intAt(n.bytes(), 1);
                        try {
                            f.remote = engine.connect(n.from(), timeout);
                            engine.notify(f.remote, "welcome", ByteBuffer.allocate(8).putLong(s.regionBytes()).array());
                            via.add(engine.transportTo(f.remote));
                        } catch (HcommException e) {
                            f.dead = true;
                            f.deathCause = e.getMessage();
                        }
                    }
                    case "kv" -> {
                        Table t = Table.decode(n.bytes());
                        if (t.request() != f.checked) {
                            errors.add("prefill " + p + ": request " + t.request() + " arrived when " + f.checked + " was next");
                        }
                        long want = blockBytes(p, t.request());
                        if (t.offsets().length != s.blocks()) errors.add("prefill " + p + " request " + t.request() + ": " + t.offsets().length + " blocks, not " + s.blocks());
                        MemorySegment region = regions.get(p).segment();
                        for (int b = 0; b < t.offsets().length; b++) {
                            long off = t.offsets()[b];
                            long len = t.lengths()[b];
                            if (len != want || off < 0 || off > region.byteSize() - len) {
                                errors.add("prefill " + p + " request " + t.request() + " block " + b + ": " + len + " bytes at " + off
                                        + " (expected " + want + " bytes inside kv-" + p + ")");
                                continue;
                            }
                            long bad = mismatch(region, off, len, seed(p, t.request(), b));
                            if (bad >= 0) {
                                errors.add("prefill " + p + " request " + t.request() + " block " + b + ": byte " + bad + " of " + len
                                        + " (at kv-" + p + " offset " + (off + bad) + ") differs from its pattern");
                            }
                            bytes += len;
                            blocks++;
                            minBlock = Math.min(minBlock, len);
                            maxBlock = Math.max(maxBlock, len);
                        }
                        f.checked = t.request() + 1;
                        if (handoffs == latencies.length) latencies = Arrays.copyOf(latencies, 2 * handoffs + 1);
                        latencies[handoffs++] = drained - t.sentMicros();
                        firstSent = Math.min(firstSent, t.sentMicros());
                        lastChecked = nowMicros();
                    }
                    case "done" -> f.sent = intAt(n.bytes(), 1);
                    default -> errors.add("an unknown notification '" + n.name() + "' from " + n.from());
                }
            }
            // credits: the prefills may reuse the space of what was checked
            for (Prefill f : prefills) {
                if (f.dead || f.remote == null || f.checked == f.credited) continue;
                try {
                    engine.notify(f.remote, "freed", ints(f.checked));
                    f.credited = f.checked;
                } catch (HcommException e) {
                    if (!f.finished()) {
                        f.dead = true;
                        f.deathCause = e.getMessage();
                    }
                }
            }
            // a silent prefill is probed: a READ its progress engine must serve fails once the process is gone
            for (Prefill f : prefills) {
                if (f.finished() || f.remote == null) continue;
                if (f.probe == null && now - f.lastHeard > PROBE_AFTER_NANOS) {
                    f.probe = engine.transferAsync(f.remote, List.of(TransferOp.read(probeBuf, 0, "alive", 0, 8)), timeout);
                } else if (f.probe != null && f.probe.status().isFinal()) {
                    if (f.probe.status() == TransferStatus.FAILED) {
                        f.dead = true;
                        f.deathCause = f.probe.error().map(Throwable::getMessage).orElse("FAILED");
                    } else {
                        f.lastHeard = now;
                    }
                    f.probe = null;
                }
            }
            for (Prefill f : prefills) {
                if (f.remote == null && !f.dead && now > joinDeadline) {
                    f.dead = true;
                    f.deathCause = "never said hello within " + joinTimeout.toSeconds() + " s";
                }
            }
            if (notes.isEmpty()) LockSupport.parkNanos(50_000);
        }

        // the report
        boolean ok = errors.isEmpty();
        List<String> parts = new ArrayList<>();
        int expected = 0;
        for (Prefill f : prefills) {
            boolean toldToDie = f.id == s.killPrefill();
            if (f.dead) {
                parts.add(Examples.fmt("prefill %d killed after %d of %d requests (%d checked)", f.id, f.checked,
                        f.planned < 0 ? s.requests() : f.planned, f.checked));
                if (!toldToDie) {
                    ok = false;
                    errors.add("prefill " + f.id + " died unexpectedly: " + f.deathCause);
                }
            } else {
                expected += f.sent;
                if (toldToDie) {
                    ok = false;
                    errors.add("prefill " + f.id + " was to be killed (--kill-prefill) but finished");
                }
                if (f.sent != s.requests() || f.planned != s.requests()) {
                    ok = false;
                    errors.add("prefill " + f.id + " sent " + f.sent + " requests, not " + s.requests());
                }
            }
        }
        double seconds = Math.max(1, lastChecked - firstSent) / 1e6;
        long[] lat = Arrays.copyOf(latencies, handoffs);
        Arrays.sort(lat);
        String detail = Examples.fmt("%d prefills, %d requests (%d from the live prefills), %d blocks of %s to %s, %.1f MB checked byte"
                        + " for byte via %s; %.1f requests/s, %.2f GB/s; hand-off latency p50 %.2f ms, p99 %.2f ms",
                s.prefills(), handoffs, expected, blocks, blocks == 0 ? "-" : mib(minBlock), blocks == 0 ? "-" : mib(maxBlock),
                bytes / 1e6, via.isEmpty() ? "none" : String.join("/", via), handoffs / seconds, bytes / seconds / 1e9,
                percentile(lat, 50) / 1e3, percentile(lat, 99) / 1e3);
        if (!parts.isEmpty()) detail += "; " + String.join("; ", parts);
        for (String e : errors.subList(0, Math.min(errors.size(), 10))) System.err.println(NAME + " decode: " + e);
        if (!errors.isEmpty()) detail += "; " + errors.size() + " errors, the first: " + errors.getFirst();
        return Examples.result(NAME, rank, size, "(decode)", detail, ok && handoffs > 0);
    }

    /** Nearest-rank percentile of sorted {@code values}; 0 if empty. */
    static long percentile(long[] sorted, int pct) {
        if (sorted.length == 0) return 0;
        int i = (int) Math.ceil(pct / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    // ------------------------------------------------------------------------------------------------- prefill

    static boolean prefill(Settings s, int id, int rank) throws Exception {
        TransferConfig config = TransferConfig.builderFromEnvironment().name(prefillName(id)).build();
        Duration timeout = config.comm().timeout();
        try (TransferEngine engine = TransferEngine.start(config); Arena arena = Arena.ofShared()) {
            // the liveness probe's target: outside the pool, so this process's progress engine serves it
            engine.register(arena.allocate(64, 64), "alive");
            RemoteEngine decode = engine.connect(DECODE, config.comm().initTimeout());
            engine.notify(decode, "hello", ints(id, s.requests()));
            Credits credits = new Credits(engine);
            long region = credits.awaitWelcome(timeout);
            if (region < s.maxRequestBytes()) throw new IllegalStateException("the decode engine's region of " + mib(region) + " cannot hold a request of " + mib(s.maxRequestBytes()));
            try (RegisteredBuffer a = engine.memory().allocate(s.maxRequestBytes()); RegisteredBuffer b = engine.memory().allocate(s.maxRequestBytes())) {
                return handOff(engine, decode, credits, region, new MemorySegment[] {a.segment(), b.segment()}, s, id, rank, timeout);
            }
        }
    }

    /** A prefill's loop: fill, place, WRITE, notify; then done, and the credit of the last request. */
    static boolean handOff(TransferEngine engine, RemoteEngine decode, Credits credits, long region, MemorySegment[] staging,
                           Settings s, int id, int rank, Duration timeout) throws Exception {
        int size = s.prefills() + 1;
        String segment = "kv-" + id;
        if (engine.transportTo(decode).equals("shm")) {
            // Warm-up, not timed: on one host the prefill writes into its own mapping of the decode pool, and the first
            // write to each page of a fresh mapping takes a page fault here (slow on some kernels and sandboxes: ~50 us
            // a page measured on this machine); a serving system faults its peers' pools in at connect, so do we.
            long chunk = staging[0].byteSize();
            List<TransferOp> warm = new ArrayList<>();
            for (long off = 0; off < region; off += chunk) warm.add(TransferOp.write(staging[0], 0, segment, off, Math.min(chunk, region - off)));
            TransferBatch b = engine.transfer(decode, warm);
            if (b.status() != TransferStatus.COMPLETED) throw new IllegalStateException("the warm-up WRITE of " + segment + " ended " + b.status(), b.error().orElse(null));
        }
        Ring ring = new Ring(region);
        AtomicLong writeNanos = new AtomicLong();
        long bytes = 0;
        long t0 = System.nanoTime();
        InFlight prev = null;
        for (int r = 0; r < s.requests(); r++) {
            // "prefill": compute the request's KV blocks into a staging buffer
            long len = blockBytes(id, r);
            long total = len * s.blocks();
            MemorySegment buf = staging[r % 2];
            for (int b = 0; b < s.blocks(); b++) fill(buf, b * len, len, seed(id, r, b));

            boolean die = id == s.killPrefill() && r == s.killAfter();
            long start = ring.place(total);
            if (start < 0 || die) {
                // wait for room (or, to die midway, for the decode engine to have consumed every request so far):
                // first hand over the request in flight, which the decode engine needs to free anything
                finish(engine, decode, prev);
                prev = null;
                long deadline = System.nanoTime() + timeout.toNanos();
                while ((start = ring.place(total)) < 0 || (die && credits.freed < r)) {
                    if (System.nanoTime() > deadline) throw new IllegalStateException("prefill " + id + ": no credit from the decode engine within " + timeout.toSeconds() + " s");
                    if (!credits.poll()) LockSupport.parkNanos(50_000);
                    ring.free(credits.freed);
                }
            }
            long[] offsets = new long[s.blocks()];
            long[] lengths = new long[s.blocks()];
            List<TransferOp> ops = new ArrayList<>();
            for (int b = 0; b < s.blocks(); b++) {
                offsets[b] = start + b * len;
                lengths[b] = len;
                ops.add(TransferOp.write(buf, b * len, segment, offsets[b], len));
            }
            ring.add(r, start, start + total);
            long sent = nowMicros();
            long issued = System.nanoTime();
            TransferBatch batch = engine.transferAsync(decode, ops);
            // the batch's time as it ends, on whichever thread ends it
            batch.future().thenAccept(x -> writeNanos.addAndGet(System.nanoTime() - issued));
            if (die) die(id, r, s);
            finish(engine, decode, prev);
            prev = new InFlight(batch, new Table(id, r, sent, offsets, lengths));
            bytes += total;
            if (credits.poll()) ring.free(credits.freed);
        }
        finish(engine, decode, prev);
        engine.notify(decode, "done", ints(id, s.requests()));
        long deadline = System.nanoTime() + timeout.toNanos();
        while (credits.freed < s.requests()) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("prefill " + id + ": the decode engine acknowledged "
                    + credits.freed + " of " + s.requests() + " requests within " + timeout.toSeconds() + " s");
            if (!credits.poll()) LockSupport.parkNanos(50_000);
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        String detail = Examples.fmt("%d requests, %d blocks, %.1f MB written into %s's pool via %s; %.1f requests/s, %.2f GB/s"
                        + " with the fill, WRITE batches %.2f GB/s; all %d checked by the decode engine",
                s.requests(), (long) s.requests() * s.blocks(), bytes / 1e6, DECODE, engine.transportTo(decode), s.requests() / seconds,
                bytes / seconds / 1e9, (double) bytes / Math.max(1, writeNanos.get()), credits.freed);
        return Examples.result(NAME, rank, size, "(prefill " + id + " of " + s.prefills() + ")", detail, true);
    }

    /** A WRITE batch under way and the table to send once it is COMPLETED. */
    record InFlight(TransferBatch batch, Table table) {
    }

    /** Waits for {@code f}'s batch and, once COMPLETED, notifies the decode engine of its request. */
    static void finish(TransferEngine engine, RemoteEngine decode, InFlight f) {
        if (f == null) return;
        TransferStatus st = f.batch().await();
        if (st != TransferStatus.COMPLETED) {
            throw new IllegalStateException("the WRITE batch of request " + f.table().request() + " ended " + st,
                    f.batch().error().orElse(null));
        }
        engine.notify(decode, "kv", f.table().encode());
    }

    /** Kills this JVM with SIGKILL while the batch of request {@code r} is under way: no goodbye, as a crash. */
    static void die(int id, int r, Settings s) throws Exception {
        System.out.println(NAME + " prefill " + id + ": " + r + " requests consumed, request " + r + " on its way: killing this"
                + " process with SIGKILL (--kill-prefill " + s.killPrefill() + " --kill-after " + s.killAfter() + ")");
        System.out.flush();
        try {
            new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).inheritIO().start().waitFor();
            Thread.sleep(5_000); // the signal is on its way
        } finally {
            Runtime.getRuntime().halt(137); // no kill command: end the same way, without hooks, with the same code
        }
    }

    /** The decode engine's answers to a prefill: the welcome (its region's size), then credits. */
    static final class Credits {
        private final TransferEngine engine;
        long region = -1;
        int freed;

        Credits(TransferEngine engine) {
            this.engine = engine;
        }

        /** Takes what arrived; true if anything did. */
        boolean poll() {
            List<Notification> notes = engine.drainNotifies();
            for (Notification n : notes) {
                if (!n.from().equals(DECODE)) continue;
                if (n.name().equals("welcome")) region = ByteBuffer.wrap(n.bytes()).getLong();
                if (n.name().equals("freed")) freed = Math.max(freed, intAt(n.bytes(), 0));
            }
            return !notes.isEmpty();
        }

        long awaitWelcome(Duration timeout) {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (region < 0) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("no welcome from " + DECODE + " within " + timeout.toSeconds() + " s");
                if (!poll()) LockSupport.parkNanos(100_000);
            }
            return region;
        }
    }

    /**
     * A prefill's region of the decode pool as a ring: requests are placed one after the other, wrapping to the start
     * when the end has no room, and leave in order once the decode engine has consumed them.
     */
    static final class Ring {
        private final long size;
        private final ArrayDeque<long[]> used = new ArrayDeque<>(); // {request, start, end}, oldest first

        Ring(long size) {
            this.size = size;
        }

        /** Where a request of {@code total} bytes fits now, or -1. */
        long place(long total) {
            if (used.isEmpty()) return total <= size ? 0 : -1;
            long[] first = used.peekFirst();
            long[] last = used.peekLast();
            long tail = first[1];
            long head = last[2];
            if (last[1] >= first[1]) { // not wrapped: [tail, head) in use
                if (head + total <= size) return head;
                return total <= tail ? 0 : -1;
            }
            return head + total <= tail ? head : -1; // wrapped: [head, tail) free
        }

        void add(int request, long start, long end) {
            used.addLast(new long[] {request, start, end});
        }

        /** The decode engine consumed the requests before {@code consumed}. */
        void free(int consumed) {
            while (!used.isEmpty() && used.peekFirst()[0] < consumed) used.removeFirst();
        }
    }

    // ------------------------------------------------------------------------------------------------- launcher

    /**
     * {rank, size} from the launcher's variables (hcomm launch, torchrun, Slurm, mpirun, Hydra), read by init's own rule
     * ({@link io.hcomm4j.Hcomm#launchedAs()}: e.g. mpirun started from a batch script wins over the inherited
     * SLURM_PROCID), or null.
     */
    static int[] launcherRankAndSize() {
        return io.hcomm4j.Hcomm.launchedAs().map(p -> new int[] {p.rank(), p.worldSize()}).orElse(null);
    }
}
