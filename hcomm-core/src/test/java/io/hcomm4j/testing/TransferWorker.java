package io.hcomm4j.testing;

import io.hcomm4j.Notification;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Predicate;
import java.util.zip.CRC32;

/**
 * One transfer engine of a test job, in a JVM of its own (configured from the environment: HCOMM_INIT_METHOD,
 * HCOMM_SECRET, HCOMM_TRANSPORT, HCOMM_SHM_DIR, HCOMM_ENGINE_NAME). Every engine registers the same four segments:
 * {@code out-pool} and {@code out-plain} (a pool buffer and plain shared-arena memory) hold a pattern of the engine's
 * index that the others read and check; {@code in-pool} and {@code in-plain} have one region per other engine, which
 * only that engine writes. Modes:
 *
 * <ul>
 *   <li>{@code serve <index> <writers>}: registers, prints READY, and serves until its standard input ends (or it is
 *       killed or stopped by the test).</li>
 *   <li>{@code random <index> <count> <batches>}: engines {@code r0..r<count-1>} do seeded random batches of READs and
 *       WRITEs of 0 B to 16 MiB to each other, sync and async, with a numbered notification after each; at the end each
 *       reads back its regions and compares them with its model byte for byte, and tells each target the CRC of its
 *       region, which the target checks against its own memory; the notifications must have come once each, in order.
 *       It prints the kinds of op its batches drew ({@code KINDS [...]}: read, write, heap, pool, plain, in-pool,
 *       in-plain, out-pool, out-plain, 0 B, 16 MiB, sync, async).</li>
 *   <li>{@code steady}, {@code leaver}, {@code late}: engines {@code steady} (index 0) and {@code leaver} (1) transfer
 *       to each other; {@code late} (2) starts later ({@code late on-stdin}: its JVM starts its engine when a line comes
 *       on its standard input), says hello, and the others take it in; 15 batches after its hello,
 *       {@code leaver} says it leaves and closes; the batches to it then end FAILED (never earlier: the notification
 *       that it leaves comes first), and {@code steady} and {@code late} go on with 25 verified batches each.</li>
 * </ul>
 *
 * Modes may follow each other in one JVM, joined by {@code then} (e.g. {@code random 0 3 20 then steady}): each runs
 * with an engine of its own, started when it begins and closed when it ends, the churn roles' engines named after the
 * role. A failed check throws: the JVM exits non-zero with the reason on stderr.
 */
public final class TransferWorker {
    /** One writer's region of an {@code in-} segment, and the size of an {@code out-} segment. */
    public static final long REGION = (16L << 20) + (64 << 10);
    static final long MAX_OP = 16L << 20;
    static final String[] KINDS = {"pool", "plain"};
    static final Duration T = Duration.ofSeconds(120);

    /** Memory registered with the mode's engine: closed after the engine (memory must outlive its registration). */
    private static Arena arena;
    /** Pool buffers, closed before the engine (which says so if one is left open). */
    private static final List<io.hcomm4j.RegisteredBuffer> BUFFERS = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        int from = 0;
        for (int i = 0; i <= args.length; i++) {
            if (i < args.length && !args[i].equals("then")) continue;
            mode(java.util.Arrays.copyOfRange(args, from, i));
            from = i + 1;
        }
        System.out.println("CLOSED");
        System.out.flush();
    }

    /** One mode, with an engine of its own. */
    static void mode(String[] args) throws Exception {
        if (args.length > 1 && args[1].equals("on-stdin")) {
            int c;
            while ((c = System.in.read()) != '\n') if (c < 0) System.exit(2); // the test went away
        }
        TransferConfig.Builder config = TransferConfig.builderFromEnvironment();
        if (java.util.Arrays.asList(CHURN).contains(args[0])) config.name(args[0]);
        arena = Arena.ofShared();
        try (TransferEngine e = TransferEngine.start(config.build())) {
            switch (args[0]) {
                case "serve" -> serve(e, Integer.parseInt(args[1]), Integer.parseInt(args[2]));
                case "random" -> random(e, Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
                case "steady", "late", "leaver" -> churn(e, args[0]);
                default -> throw new IllegalArgumentException("unknown mode " + args[0]);
            }
            for (io.hcomm4j.RegisteredBuffer b : BUFFERS) b.close();
            BUFFERS.clear();
        }
        arena.close();
    }

    static MemorySegment pooled(TransferEngine e, long bytes) {
        io.hcomm4j.RegisteredBuffer b = e.memory().allocate(bytes);
        BUFFERS.add(b);
        return b.segment();
    }

    /** The pattern seed of engine {@code index}'s {@code out-<kind>} segment. */
    public static long outSeed(int index, int kind) {
        return 1000L + index * 10L + kind;
    }

    /** Registers {@code out-pool}, {@code out-plain} (patterns of {@code index}) and zeroed {@code in-pool}, {@code in-plain}. */
    public static MemorySegment[] segments(TransferEngine e, int index, int writers, Arena arena) {
        MemorySegment outPool = pooled(e, REGION);
        MemorySegment outPlain = arena.allocate(REGION, 4096);
        Engines.fill(outPool, 0, REGION, outSeed(index, 0), 0);
        Engines.fill(outPlain, 0, REGION, outSeed(index, 1), 0);
        long in = Math.max(1, writers) * REGION;
        MemorySegment inPool = pooled(e, in).fill((byte) 0);
        MemorySegment inPlain = arena.allocate(in, 4096);
        e.register(outPool, "out-pool");
        e.register(outPlain, "out-plain");
        e.register(inPool, "in-pool");
        e.register(inPlain, "in-plain");
        return new MemorySegment[] {inPool, inPlain};
    }

    static void serve(TransferEngine e, int index, int writers) throws Exception {
        {
            segments(e, index, writers, arena);
            System.out.println("READY " + e.name() + " " + e.id());
            System.out.flush();
            while (System.in.read() >= 0) {
                // serve until stdin ends
            }
        }
    }

    /** Notifications received so far, and waiting for some. */
    static final class Inbox {
        final TransferEngine e;
        final List<Notification> all = new ArrayList<>();

        Inbox(TransferEngine e) {
            this.e = e;
        }

        void poll() {
            all.addAll(e.drainNotifies());
        }

        List<Notification> named(String name, String from) {
            List<Notification> out = new ArrayList<>();
            for (Notification n : all) if (n.name().equals(name) && (from == null || n.from().equals(from))) out.add(n);
            return out;
        }

        void await(String what, Predicate<Inbox> done) throws InterruptedException {
            long deadline = System.nanoTime() + T.toNanos();
            while (true) {
                poll();
                if (done.test(this)) return;
                if (System.nanoTime() > deadline) throw new AssertionError(e.name() + ": timed out waiting for " + what + "; got " + all);
                Thread.sleep(2);
            }
        }
    }

    /** Where a region lies for a writer: its index among the target's writers. */
    static long regionOf(int writer, int target) {
        return (writer < target ? writer : writer - 1) * REGION;
    }

    static void random(TransferEngine e, int me, int count, int batches) throws Exception {
        {
            MemorySegment[] in = segments(e, me, count - 1, arena);
            Map<Integer, RemoteEngine> peers = new HashMap<>();
            for (int i = 0; i < count; i++) if (i != me) peers.put(i, e.connect("r" + i, T));
            Inbox inbox = new Inbox(e);
            for (RemoteEngine p : peers.values()) e.notify(p, "ready", new byte[0]);
            inbox.await("ready", x -> x.named("ready", null).size() == count - 1);
            Random rnd = new Random(7919L * me + 17);
            Map<Integer, MemorySegment[]> model = new HashMap<>();
            for (int p : peers.keySet()) model.put(p, new MemorySegment[] {arena.allocate(REGION, 8), arena.allocate(REGION, 8)});
            MemorySegment[] stage = {pooled(e, 40L << 20), arena.allocate(40L << 20, 4096)};
            Map<Integer, Integer> sent = new HashMap<>();
            java.util.Set<String> kinds = new java.util.TreeSet<>();
            Pending pending = null;
            long moved = 0;
            int async = 0;
            for (int b = 0; b < batches; b++) {
                List<Integer> others = new ArrayList<>(peers.keySet());
                int t = others.get(rnd.nextInt(others.size()));
                // one batch at a time per target (its writes may overlap the next one's), and per stage (its memory)
                if (pending != null && (pending.target == t || pending.stage == (b & 1))) {
                    moved += pending.finish();
                    pending = null;
                }
                Pending next = plan(rnd, me, t, b, stage[b & 1], model.get(t), kinds);
                next.stage = b & 1;
                boolean isAsync = rnd.nextBoolean();
                kinds.add(isAsync ? "async" : "sync");
                if (isAsync) {
                    if (pending != null) moved += pending.finish();
                    next.batch = e.transferAsync(peers.get(t), next.ops);
                    pending = next;
                    async++;
                } else {
                    next.batch = e.transfer(peers.get(t), next.ops);
                    moved += next.finish();
                }
                int seq = sent.merge(t, 1, Integer::sum) - 1;
                e.notify(peers.get(t), "seq", ByteBuffer.allocate(4).putInt(seq).array());
                inbox.poll();
            }
            if (pending != null) moved += pending.finish();
            // read back every region written, and tell each target what its region must hold
            for (Map.Entry<Integer, RemoteEngine> p : peers.entrySet()) {
                int t = p.getKey();
                for (int k = 0; k < 2; k++) {
                    MemorySegment m = model.get(t)[k];
                    MemorySegment back = stage[0].asSlice(0, REGION);
                    TransferBatch rb = e.transfer(p.getValue(), List.of(TransferOp.read(back, 0, "in-" + KINDS[k], regionOf(me, t), REGION)));
                    expect(rb.status() == TransferStatus.COMPLETED, e.name() + ": read-back from " + t + " " + rb + " " + rb.error());
                    long at = back.mismatch(m);
                    expect(at == -1, e.name() + ": region in engine r" + t + " in-" + KINDS[k] + " differs from the model at byte " + at);
                    e.notify(p.getValue(), "digest", ByteBuffer.allocate(12).putInt(k).putLong(crc(m)).array());
                }
                e.notify(p.getValue(), "done", ByteBuffer.allocate(4).putInt(sent.getOrDefault(t, 0)).array());
            }
            inbox.await("done", x -> x.named("done", null).size() == count - 1);
            // notifications: once each, in order per sender
            for (int i : peers.keySet()) {
                String from = "r" + i;
                List<Notification> seqs = inbox.named("seq", from);
                int expected = ByteBuffer.wrap(inbox.named("done", from).get(0).bytes()).getInt();
                expect(seqs.size() == expected, e.name() + ": " + seqs.size() + " seq notifications from " + from + ", expected " + expected);
                for (int s = 0; s < seqs.size(); s++) {
                    int got = ByteBuffer.wrap(seqs.get(s).bytes()).getInt();
                    expect(got == s, e.name() + ": seq notification " + s + " from " + from + " carries " + got);
                }
                expect(seqs.stream().allMatch(n -> n.fromId() == peers.get(i).id()), e.name() + ": wrong sender id");
                List<Notification> digests = inbox.named("digest", from);
                expect(digests.size() == 2, e.name() + ": " + digests.size() + " digests from " + from);
                for (Notification d : digests) {
                    ByteBuffer bb = ByteBuffer.wrap(d.bytes());
                    int k = bb.getInt();
                    long crc = bb.getLong();
                    long mine = crc(in[k].asSlice(regionOf(i, me), REGION));
                    expect(crc == mine, e.name() + ": in-" + KINDS[k] + " region of " + from + " has CRC " + mine + ", the writer's model " + crc);
                }
            }
            for (RemoteEngine p : peers.values()) e.notify(p, "bye", new byte[0]);
            inbox.await("bye", x -> x.named("bye", null).size() == count - 1);
            for (RemoteEngine p : peers.values()) System.out.println("transport to " + p.name() + ": " + e.transportTo(p));
            System.out.println("KINDS " + kinds);
            System.out.printf("PASS random %s: %d batches (%d async), %d bytes%n", e.name(), batches, async, moved);
            System.out.flush();
        }
    }

    static final String[] CHURN = {"steady", "leaver", "late"};

    static void churn(TransferEngine e, String role) throws Exception {
        int me = java.util.Arrays.asList(CHURN).indexOf(role);
        {
            segments(e, me, 2, arena);
            Inbox inbox = new Inbox(e);
            Map<Integer, RemoteEngine> live = new java.util.TreeMap<>();
            // a hello says the sender's segments are registered: only then does anybody transfer to it
            if (role.equals("late")) {
                for (int i = 0; i < 2; i++) live.put(i, e.connect(CHURN[i], T));
                for (RemoteEngine p : live.values()) e.notify(p, "hello", new byte[0]);
            } else {
                live.put(1 - me, e.connect(CHURN[1 - me], T));
                e.notify(live.get(1 - me), "hello", new byte[0]);
                inbox.await("hello", x -> !x.named("hello", CHURN[1 - me]).isEmpty());
            }
            Random rnd = new Random(31L * me + 5);
            MemorySegment buf = pooled(e, 12L << 20);
            int done = 0;
            int withLeaver = 0;
            int after = -1; // batches since the event this role counts from (late's hello, the leaver's departure)
            boolean gone = role.equals("leaver");
            for (int b = 0; ; b++) {
                inbox.poll();
                if (!role.equals("late") && !live.containsKey(2) && !inbox.named("hello", "late").isEmpty()) live.put(2, e.connect("late", T));
                // the leaver leaves 15 batches after the late engine did 10 with it
                if (role.equals("leaver") && after < 0 && !inbox.named("busy", "late").isEmpty()) after = 0;
                if (role.equals("leaver") && after >= 15) {
                    for (RemoteEngine p : live.values()) e.notify(p, "leaving", new byte[0]);
                    System.out.printf("LEFT after %d batches%n", done);
                    System.out.flush();
                    return; // closes the engine
                }
                if (after >= 25) break;
                List<Integer> targets = new ArrayList<>(live.keySet());
                int t = targets.get(b % targets.size());
                TransferStatus s = roundTrip(e, me, live.get(t), t, rnd, buf);
                if (s == TransferStatus.COMPLETED) {
                    done++;
                    if (after >= 0) after++;
                    if (t == 1 && ++withLeaver == 10 && role.equals("late")) e.notify(live.get(1), "busy", new byte[0]);
                } else {
                    // only the leaver may fail a batch, and only after it said it leaves (that notification comes first)
                    inbox.poll();
                    expect(t == 1 && !inbox.named("leaving", "leaver").isEmpty(), e.name() + ": a batch to " + CHURN[t] + " ended " + s);
                    live.remove(t);
                    System.out.printf("%s gone after %d batches (%d with it)%n", CHURN[t], done, withLeaver);
                    gone = true;
                    after = 0;
                }
                if (b == 10) System.out.println("BATCHES 10");
                System.out.flush();
                if (!gone && live.size() == 1 && role.equals("steady") && b > 2000) throw new AssertionError("late never came");
            }
            RemoteEngine other = live.get(me == 0 ? 2 : 0);
            e.notify(other, "done", new byte[0]);
            inbox.await("done", x -> !x.named("done", null).isEmpty());
            System.out.printf("PASS churn %s: %d batches%n", role, done);
            System.out.flush();
        }
    }

    /** A WRITE into this engine's region of {@code peer} with a READ of its out segment, checked, then the WRITE read back. */
    static TransferStatus roundTrip(TransferEngine e, int me, RemoteEngine peer, int t, Random rnd, MemorySegment buf) {
        int k = rnd.nextInt(2);
        long len = 1 + rnd.nextLong(4L << 20);
        long off = rnd.nextLong(REGION - len + 1);
        long rlen = rnd.nextLong(4L << 20);
        long roff = rnd.nextLong(REGION - rlen + 1);
        long seed = rnd.nextLong();
        Engines.fill(buf, 0, len, seed, 0);
        long in = regionOf(me, t) + off;
        TransferBatch b = e.transfer(peer, List.of(TransferOp.write(buf, 0, "in-" + KINDS[k], in, len),
                TransferOp.read(buf, 4L << 20, "out-" + KINDS[1 - k], roff, rlen)));
        if (b.status() != TransferStatus.COMPLETED) return checkedEnd(b);
        expect(Engines.mismatch(buf, 4L << 20, rlen, outSeed(t, 1 - k), roff) == -1, e.name() + ": READ from " + peer.name() + " differs");
        b = e.transfer(peer, List.of(TransferOp.read(buf, 8L << 20, "in-" + KINDS[k], in, len)));
        if (b.status() != TransferStatus.COMPLETED) return checkedEnd(b);
        expect(Engines.mismatch(buf, 8L << 20, len, seed, 0) == -1, e.name() + ": WRITE to " + peer.name() + " did not land");
        return TransferStatus.COMPLETED;
    }

    private static TransferStatus checkedEnd(TransferBatch b) {
        expect(b.status() == TransferStatus.FAILED, "batch ended " + b.status() + ": " + b.error());
        System.out.println("FAILED " + b.error().map(Throwable::getMessage).orElse("?"));
        return b.status();
    }

    /** A batch being planned, issued and checked: its ops, the READs' expected patterns and the WRITEs for the model. */
    static final class Pending {
        final int target;
        final List<TransferOp> ops = new ArrayList<>();
        final List<long[]> reads = new ArrayList<>(); // {op, seed}
        final List<Object[]> writes = new ArrayList<>(); // {op, model segment, model offset}
        TransferBatch batch;
        int stage;

        Pending(int target) {
            this.target = target;
        }

        /** Waits, checks every byte read, applies the writes to the model; returns the bytes moved. */
        long finish() {
            TransferStatus s = batch.await();
            expect(s == TransferStatus.COMPLETED, "batch to r" + target + " ended " + s + ": " + batch.error());
            expect(batch.bytesTransferred() == batch.bytesRequested(), "batch moved " + batch.bytesTransferred() + " of " + batch.bytesRequested());
            for (long[] r : reads) {
                TransferOp op = ops.get((int) r[0]);
                long at = Engines.mismatch(op.local(), op.localOffset(), op.length(), r[1], op.remoteOffset());
                expect(at == -1, "READ of " + op.length() + " bytes at " + op.remoteOffset() + " of r" + target + "'s " + op.remoteSegment()
                        + " differs at byte " + at);
            }
            for (Object[] w : writes) {
                TransferOp op = ops.get((int) w[0]);
                MemorySegment.copy(op.local(), op.localOffset(), (MemorySegment) w[1], (long) w[2], op.length());
            }
            return batch.bytesRequested();
        }
    }

    /** A length of 0 B to 16 MiB: many small, some medium, a few large, now and then exactly 0 or 16 MiB. */
    static long length(Random rnd) {
        int r = rnd.nextInt(100);
        if (r < 3) return 0;
        if (r < 6) return MAX_OP;
        if (r < 45) return rnd.nextInt(4097);
        if (r < 80) return rnd.nextInt(1 << 20);
        return rnd.nextLong(MAX_OP + 1);
    }

    /** Plans batch {@code b}: ops drawn from {@code rnd}, their kinds added to {@code kinds}. */
    static Pending plan(Random rnd, int me, int t, int b, MemorySegment stage, MemorySegment[] model, java.util.Set<String> kinds) {
        Pending p = new Pending(t);
        int n = 1 + rnd.nextInt(6);
        long used = 0;
        List<long[]> written = new ArrayList<>(); // {kind, from, to} in the region
        for (int i = 0; i < n; i++) {
            long len = length(rnd);
            if (used + len > stage.byteSize()) break;
            int k = rnd.nextInt(2);
            long off = rnd.nextLong(REGION - len + 1);
            // heap memory now and then for small ops; else a slice of the stage (pool or plain memory)
            boolean heap = len <= 65536 && rnd.nextInt(4) == 0;
            MemorySegment local = heap ? MemorySegment.ofArray(new byte[(int) len + 16]) : stage;
            long localOff = heap ? rnd.nextInt(16) : used;
            boolean write = rnd.nextBoolean() && !overlaps(written, k, off, len);
            if (write) {
                long seed = ((long) me << 40) ^ ((long) b << 8) ^ i;
                Engines.fill(local, localOff, len, seed, 0);
                written.add(new long[] {k, off, off + len});
                p.writes.add(new Object[] {p.ops.size(), model[k], off});
                p.ops.add(TransferOp.write(local, localOff, "in-" + KINDS[k], regionOf(me, t) + off, len));
            } else {
                p.reads.add(new long[] {p.ops.size(), outSeed(t, k)});
                p.ops.add(TransferOp.read(local, localOff, "out-" + KINDS[k], off, len));
            }
            if (!heap) used += (len + 7) & ~7L;
            kinds.add(write ? "write" : "read");
            kinds.add(heap ? "heap" : (b & 1) == 0 ? "pool" : "plain");
            kinds.add((write ? "in-" : "out-") + KINDS[k]);
            if (len == 0) kinds.add("0 B");
            if (len == MAX_OP) kinds.add("16 MiB");
        }
        return p;
    }

    private static boolean overlaps(List<long[]> written, int k, long from, long len) {
        for (long[] w : written) if (w[0] == k && from < w[2] && w[1] < from + len) return true;
        return false;
    }

    static long crc(MemorySegment s) {
        CRC32 c = new CRC32();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    static void expect(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

}
