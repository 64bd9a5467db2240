package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.comm.ZeroCopyProbe;
import io.hcomm4j.kernel.ReduceKernel;
import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.ZeroCopyWorker;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Zero-copy collectives on one host: with registered buffers ({@code comm.memory()}) on every rank, allReduce,
 * reduceScatter(V), allGather(V) and broadcast run in shared memory; with any rank's buffer unregistered they run
 * through the transport. Every element on every rank is checked against a reference (ReductionCollectivesTest's exact
 * inputs, DataMovementCollectivesTest's byte patterns), and the engine's counters say which path each op took.
 */
public class ZeroCopyCollectivesTest {
    private static final ReduceOp[] COLLECTIVE_OPS =
            java.util.Arrays.stream(ReduceOp.values()).filter(ReduceOp::collective).toArray(ReduceOp[]::new);
    static final long SEED = 4_2026_1130L;
    static final long[] COUNTS = {0, 1, 2, 3, 13, 97, 1009, 4099, 20_011, 100_003};

    /** Where a rank's buffers of one op come from. */
    /** Where a rank's buffers of one op come from: pool buffers, the pool's arena, a plain native arena, the heap. */
    enum Mem { POOL, POOL_ARENA, NATIVE, HEAP }

    /** The buffers of one op: pooled ones are closed (back to the pool) at the end. */
    static final class Bufs implements AutoCloseable {
        final Communicator c;
        final Arena arena;
        final List<RegisteredBuffer> open = new ArrayList<>();
        /** {@code c.memory().arena()}, made at the first POOL_ARENA buffer. */
        Arena poolArena;

        Bufs(Communicator c, Arena arena) {
            this.c = c;
            this.arena = arena;
        }

        MemorySegment get(long bytes, Mem mem) {
            long b = Math.max(1, bytes);
            return switch (mem) {
                case POOL -> {
                    RegisteredBuffer buf = c.memory().allocate(b);
                    open.add(buf);
                    yield buf.segment();
                }
                case POOL_ARENA -> {
                    if (poolArena == null) poolArena = c.memory().arena();
                    yield poolArena.allocate(b, 8);
                }
                case NATIVE -> arena.allocate(b, 8);
                case HEAP -> MemorySegment.ofArray(new long[(int) ((b + 7) / 8)]);
            };
        }

        @Override
        public void close() {
            for (RegisteredBuffer b : open) b.close();
            open.clear();
            if (poolArena != null) poolArena.close();
            poolArena = null;
        }
    }

    /**
     * The seeded sequence (the same on every rank): every DataType with every ReduceOp in an all-reduce (counts 0, 1,
     * primes, not divisible by the rank count; in place and not; blocking, async and on a stream), then random
     * reduce-scatter(V), all-gather(V) and broadcasts from every root, mostly with every rank's buffers registered and
     * sometimes with one rank's native or heap memory instead (staged through a registered buffer: still in shared
     * memory). With {@code gridStride} s > 1 the all-reduces are a diagonal of the type x op grid instead, the pairs
     * whose type ordinal plus op index is the rank count modulo s: still every type and every op (checked here).
     * Checks the zero-copy and fallback ops expected against the engine's counters.
     */
    public static void sequence(Communicator c, long seed, int randomOps, int gridStride) {
        int n = c.size();
        int me = c.rank();
        Random rnd = new Random(seed);
        long zc = 0;
        long fb = 0;
        long zc0 = ZeroCopyProbe.zeroCopyOps(c);
        long fb0 = ZeroCopyProbe.fallbackOps(c);
        try (Arena arena = Arena.ofShared(); Stream stream = c.newStream()) {
            int k = 0;
            java.util.Set<DataType> typesRun = java.util.EnumSet.noneOf(DataType.class);
            java.util.Set<ReduceOp> opsRun = java.util.EnumSet.noneOf(ReduceOp.class);
            for (DataType t : DataType.values()) {
                for (int o = 0; o < COLLECTIVE_OPS.length; o++) {
                    ReduceOp op = COLLECTIVE_OPS[o];
                    if (!op.accepts(t)) continue; // BAND on floats, AVG on BOOL: refused (SmallTypesCollectivesTest)
                    if ((t.ordinal() + o) % gridStride != n % gridStride) continue;
                    typesRun.add(t);
                    opsRun.add(op);
                    long count = COUNTS[rnd.nextInt(COUNTS.length)];
                    boolean inPlace = rnd.nextBoolean();
                    int how = rnd.nextInt(3);
                    Choice ch = Choice.draw(rnd, n);
                    zc++; // a rank's unregistered (native or heap) buffers are staged through a registered one
                    allReduce(c, stream, arena, t, op, count, inPlace, how, ch.of(me), k++);
                }
            }
            assertThat(typesRun).as("types of the all-reduces").hasSize(DataType.values().length);
            assertThat(opsRun).as("ops of the all-reduces").hasSize(COLLECTIVE_OPS.length);
            for (int i = 0; i < randomOps; i++, k++) {
                DataType t = DataType.values()[rnd.nextInt(DataType.values().length)];
                ReduceOp op = ReductionCollectivesTest.randomOp(rnd, t);
                long count = COUNTS[rnd.nextInt(COUNTS.length)];
                boolean inPlace = rnd.nextBoolean();
                int how = rnd.nextInt(3);
                Choice ch = Choice.draw(rnd, n);
                int root = rnd.nextInt(n);
                long[] counts = new long[n];
                long[] displs = new long[n];
                long at = 0;
                for (int r = 0; r < n; r++) {
                    counts[r] = COUNTS[rnd.nextInt(COUNTS.length - 2)];
                    at += rnd.nextInt(3);
                    displs[r] = at;
                    at += counts[r];
                }
                int kind = rnd.nextInt(12);
                zc++; // a rank's unregistered (native or heap) buffers are staged through a registered one
                long rsCount = Math.min(count, 30_011);
                Mem m = ch.of(me);
                switch (kind) {
                    case 0 -> reduceScatter(c, stream, arena, t, op, rsCount, null, how, m, k);
                    case 1 -> reduceScatter(c, stream, arena, t, op, 0, counts, how, m, k);
                    case 2 -> allGather(c, stream, arena, t, count, null, null, inPlace, how, m, k);
                    case 3 -> allGather(c, stream, arena, t, 0, counts, displs, inPlace, how, m, k);
                    case 4 -> broadcast(c, stream, arena, t, count, root, how, m, k);
                    case 5 -> gather(c, arena, t, Math.min(count, 20_011), root, how, m, k);
                    case 6 -> scatter(c, arena, t, Math.min(count, 20_011), root, how, m, k);
                    case 7 -> allToAll(c, arena, t, Math.min(count, 20_011), how, m, k);
                    case 8 -> gatherV(c, arena, t, counts, displs, root, how, m, k);
                    case 9 -> scatterV(c, arena, t, counts, displs, root, how, m, k);
                    case 10 -> allToAllV(c, arena, t, how, m, k);
                    default -> reduce(c, arena, t, op, count, root, inPlace, how, m, k);
                }
            }
            // a broadcast from every root, small and large (the large ones copy in parallel slices)
            for (int root = 0; root < n; root++) {
                for (long count : new long[] {5, 70_001}) {
                    broadcast(c, stream, arena, DataType.INT8, count, root, root % 3, Mem.POOL, k++);
                    zc++;
                }
            }
            stream.synchronize();
        }
        assertThat(ZeroCopyProbe.zeroCopyOps(c) - zc0).as("rank %d: ops that ran in shared memory", me).isEqualTo(zc);
        assertThat(ZeroCopyProbe.fallbackOps(c) - fb0).as("rank %d: ops that went through the transport", me).isEqualTo(fb);
    }

    /**
     * Whose buffers are not registered in one op: nobody ({@code who < 0}), or rank {@code who}, which uses {@code mem}
     * (native or heap memory) instead; drawn alike by every rank.
     */
    record Choice(int who, Mem mem) {
        static Choice draw(Random rnd, int n) {
            int x = rnd.nextInt(8);
            int who = rnd.nextInt(n);
            if (x < 4) return new Choice(-1, Mem.POOL);
            if (x < 6) return new Choice(-1, Mem.POOL_ARENA); // every rank: registered memory through an Arena
            return new Choice(who, x == 6 ? Mem.NATIVE : Mem.HEAP);
        }

        Mem of(int rank) {
            if (who < 0) return mem;
            return rank == who ? mem : Mem.POOL;
        }
    }

    /** Runs {@code op} blocking (how 0), async (1) or on the stream (2), and waits for it. */
    private static void run(int how, Runnable blocking, java.util.function.Supplier<CommFuture<Void>> async,
                            java.util.function.Supplier<CommFuture<Void>> onStream) {
        switch (how) {
            case 0 -> blocking.run();
            case 1 -> async.get().await();
            default -> onStream.get().await();
        }
    }

    static void allReduce(Communicator c, Stream s, Arena arena, DataType t, ReduceOp op, long count, boolean inPlace, int how,
                          Mem mem, int k) {
        int me = c.rank();
        int es = t.byteSize();
        String what = "allReduce #" + k + " rank " + me + " of " + c.size() + " " + t + " " + op + " count " + count + " inPlace "
                + inPlace + " " + mem + " how " + how;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment send = b.get(count * es, mem);
            for (long i = 0; i < count; i++) ReductionCollectivesTest.put(send, t, i, ReductionCollectivesTest.input(t, op, me, k, i));
            MemorySegment recv = inPlace ? send : b.get(count * es, mem);
            run(how, () -> c.allReduce(send, recv, count, t, op), () -> c.allReduceAsync(send, recv, count, t, op),
                    () -> s.allReduce(send, recv, count, t, op));
            ReductionCollectivesTest.check(recv, 0, t, op, c.size(), k, 0, count, what);
        }
    }

    static void reduceScatter(Communicator c, Stream s, Arena arena, DataType t, ReduceOp op, long per, long[] counts, int how,
                              Mem mem, int k) {
        int n = c.size();
        int me = c.rank();
        int es = t.byteSize();
        long total = 0;
        long from = 0;
        for (int r = 0; r < n; r++) {
            long cr = counts == null ? per : counts[r];
            if (r == me) from = total;
            total += cr;
        }
        long mine = counts == null ? per : counts[me];
        long f = from;
        String what = (counts == null ? "reduceScatter" : "reduceScatterV") + " #" + k + " rank " + me + " " + t + " " + op + " total "
                + total + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment send = b.get(total * es, mem);
            for (long i = 0; i < total; i++) ReductionCollectivesTest.put(send, t, i, ReductionCollectivesTest.input(t, op, me, k, i));
            MemorySegment recv = b.get(mine * es, mem);
            if (counts == null) {
                run(how, () -> c.reduceScatter(send, recv, per, t, op), () -> c.reduceScatterAsync(send, recv, per, t, op),
                        () -> s.reduceScatter(send, recv, per, t, op));
            } else {
                run(how, () -> c.reduceScatterV(send, recv, counts, t, op), () -> c.reduceScatterVAsync(send, recv, counts, t, op),
                        () -> c.reduceScatterVAsync(send, recv, counts, t, op));
            }
            ReductionCollectivesTest.check(recv, 0, t, op, n, k, f, mine, what);
            // a rank's send buffer is only read
            for (long i = 0; i < total; i += 97) {
                MemorySegment one = arena.allocate(8);
                ReductionCollectivesTest.put(one, t, 0, ReductionCollectivesTest.input(t, op, me, k, i));
                if (ReductionCollectivesTest.bits(send, t, i) != ReductionCollectivesTest.bits(one, t, 0)) {
                    throw new AssertionError(what + ": send buffer changed at " + i);
                }
            }
        }
    }

    /** Reduce to {@code root}: the root's buffer holds the reduction, every element checked; in place at the root too. */
    static void reduce(Communicator c, Arena arena, DataType t, ReduceOp op, long count, int root, boolean inPlace, int how,
                       Mem mem, int k) {
        int me = c.rank();
        int es = t.byteSize();
        String what = "reduce #" + k + " rank " + me + " root " + root + " " + t + " " + op + " count " + count + " inPlace "
                + inPlace + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment send = b.get(count * es, mem);
            for (long i = 0; i < count; i++) ReductionCollectivesTest.put(send, t, i, ReductionCollectivesTest.input(t, op, me, k, i));
            MemorySegment recv = me != root ? null : inPlace ? send : b.get(count * es, mem);
            run(how % 2, () -> c.reduce(send, recv, count, t, op, root), () -> c.reduceAsync(send, recv, count, t, op, root), null);
            if (me == root) ReductionCollectivesTest.check(recv, 0, t, op, c.size(), k, 0, count, what);
        }
    }

    /** Gather to {@code root}: every rank's block, filled by its rank, lands at its place in the root's buffer. */
    static void gather(Communicator c, Arena arena, DataType t, long count, int root, int how, Mem mem, int k) {
        int n = c.size();
        int me = c.rank();
        long blk = count * t.byteSize();
        String what = "gather #" + k + " rank " + me + " root " + root + " " + t + " count " + count + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment send = b.get(blk, mem);
            DataMovementCollectivesTest.fill(send, 0, blk, me, k);
            MemorySegment recv = me == root ? b.get(blk * n, mem) : null;
            if (recv != null) recv.fill((byte) 0x5A);
            run(how % 2, () -> c.gather(send, recv, count, t, root), () -> c.gatherAsync(send, recv, count, t, root), null);
            if (me == root) for (int r = 0; r < n; r++) DataMovementCollectivesTest.check(recv, r * blk, blk, r, k, what);
        }
    }

    /**
     * Gather of blocks of different sizes (some empty) to {@code root} at displacements with gaps: every block lands at
     * its place, and the gaps keep what the root had there.
     */
    static void gatherV(Communicator c, Arena arena, DataType t, long[] counts, long[] displs, int root, int how, Mem mem, int k) {
        int n = c.size();
        int me = c.rank();
        int es = t.byteSize();
        long end = 0;
        for (int r = 0; r < n; r++) end = Math.max(end, (displs[r] + counts[r]) * es);
        String what = "gatherV #" + k + " rank " + me + " root " + root + " " + t + " counts " + java.util.Arrays.toString(counts) + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            long blk = counts[me] * es;
            MemorySegment send = b.get(blk, mem);
            DataMovementCollectivesTest.fill(send, 0, blk, me, k);
            MemorySegment recv = me == root ? b.get(Math.max(end, 1), mem) : null;
            if (recv != null) recv.fill((byte) 0x5A);
            run(how % 2, () -> c.gatherV(send, recv, counts, displs, t, root),
                    () -> c.gatherVAsync(send, recv, counts, displs, t, root), null);
            if (me == root) {
                for (int r = 0; r < n; r++) DataMovementCollectivesTest.check(recv, displs[r] * es, counts[r] * es, r, k, what);
                checkGaps(recv, end, displs, counts, es, what);
            }
        }
    }

    /** The bytes of {@code seg} below {@code end} outside every block (elements {@code displs[r]}, {@code counts[r]}) are still 0x5A. */
    private static void checkGaps(MemorySegment seg, long end, long[] displs, long[] counts, int es, String what) {
        boolean[] covered = new boolean[(int) end];
        for (int r = 0; r < displs.length; r++) {
            for (long i = displs[r] * es; i < (displs[r] + counts[r]) * es; i++) covered[(int) i] = true;
        }
        for (int i = 0; i < end; i++) {
            if (!covered[i] && seg.get(ValueLayout.JAVA_BYTE, i) != 0x5A) throw new AssertionError(what + ": gap byte " + i + " written");
        }
    }

    /** Scatter of blocks of different sizes (some empty) from displacements with gaps: each rank gets exactly its block. */
    static void scatterV(Communicator c, Arena arena, DataType t, long[] counts, long[] displs, int root, int how, Mem mem, int k) {
        int n = c.size();
        int me = c.rank();
        int es = t.byteSize();
        long end = 0;
        for (int r = 0; r < n; r++) end = Math.max(end, (displs[r] + counts[r]) * es);
        String what = "scatterV #" + k + " rank " + me + " root " + root + " " + t + " counts " + java.util.Arrays.toString(counts) + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment send = me == root ? b.get(Math.max(end, 1), mem) : null;
            if (send != null) for (int r = 0; r < n; r++) DataMovementCollectivesTest.fill(send, displs[r] * es, counts[r] * es, r, k);
            long blk = counts[me] * es;
            MemorySegment recv = b.get(blk + 8, mem); // 8 bytes past the block must stay as they are
            recv.fill((byte) 0x5A);
            MemorySegment into = recv.asSlice(0, blk);
            run(how % 2, () -> c.scatterV(send, counts, displs, into, t, root),
                    () -> c.scatterVAsync(send, counts, displs, into, t, root), null);
            DataMovementCollectivesTest.check(recv, 0, blk, me, k, what);
            for (long i = blk; i < blk + 8; i++) {
                if (recv.get(ValueLayout.JAVA_BYTE, i) != 0x5A) throw new AssertionError(what + ": byte " + i + " past the block written");
            }
        }
    }

    /**
     * All-to-all of blocks of different sizes (some empty), at displacements with gaps on both sides (the same random
     * layout on every rank: drawn from the op's number): block q of rank p holds what p filled for q, gaps stay.
     */
    static void allToAllV(Communicator c, Arena arena, DataType t, int how, Mem mem, int k) {
        int n = c.size();
        int me = c.rank();
        int es = t.byteSize();
        Random lay = new Random(7919L * k + 13);
        long[][] cnt = new long[n][n]; // cnt[p][q]: elements rank p sends to rank q
        for (int p = 0; p < n; p++) for (int q = 0; q < n; q++) cnt[p][q] = COUNTS[lay.nextInt(COUNTS.length - 2)];
        long[][] sDispl = new long[n][n];
        long[][] rDispl = new long[n][n];
        long[] sEnd = new long[n];
        long[] rEnd = new long[n];
        for (int p = 0; p < n; p++) {
            for (int q = n - 1; q >= 0; q--) { // send blocks in reverse order, with gaps
                sEnd[p] += lay.nextInt(3);
                sDispl[p][q] = sEnd[p];
                sEnd[p] += cnt[p][q];
            }
            for (int q = 0; q < n; q++) {
                rEnd[p] += lay.nextInt(3);
                rDispl[p][q] = rEnd[p];
                rEnd[p] += cnt[q][p];
            }
        }
        long[] sendCounts = cnt[me].clone();
        long[] recvCounts = new long[n];
        for (int q = 0; q < n; q++) recvCounts[q] = cnt[q][me];
        String what = "allToAllV #" + k + " rank " + me + " " + t + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment send = b.get(Math.max(1, sEnd[me] * es), mem);
            for (int q = 0; q < n; q++) DataMovementCollectivesTest.fill(send, sDispl[me][q] * es, cnt[me][q] * es, me, k * 64 + q);
            MemorySegment recv = b.get(Math.max(1, rEnd[me] * es), mem);
            recv.fill((byte) 0x5A);
            run(how % 2, () -> c.allToAllV(send, sendCounts, sDispl[me], recv, recvCounts, rDispl[me], t),
                    () -> c.allToAllVAsync(send, sendCounts, sDispl[me], recv, recvCounts, rDispl[me], t), null);
            for (int q = 0; q < n; q++) DataMovementCollectivesTest.check(recv, rDispl[me][q] * es, cnt[q][me] * es, q, k * 64 + me, what);
            checkGaps(recv, rEnd[me] * es, rDispl[me], recvCounts, es, what);
        }
    }

    /** Scatter from {@code root}: rank r gets block r of the root's buffer (filled as if by rank r). */
    static void scatter(Communicator c, Arena arena, DataType t, long count, int root, int how, Mem mem, int k) {
        int n = c.size();
        int me = c.rank();
        long blk = count * t.byteSize();
        String what = "scatter #" + k + " rank " + me + " root " + root + " " + t + " count " + count + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment send = me == root ? b.get(blk * n, mem) : null;
            if (send != null) for (int r = 0; r < n; r++) DataMovementCollectivesTest.fill(send, r * blk, blk, r, k);
            MemorySegment recv = b.get(blk, mem);
            recv.fill((byte) 0x5A);
            run(how % 2, () -> c.scatter(send, recv, count, t, root), () -> c.scatterAsync(send, recv, count, t, root), null);
            DataMovementCollectivesTest.check(recv, 0, blk, me, k, what);
        }
    }

    /** All-to-all: block r of rank q's buffer goes to block q of rank r's; each block filled by (q, r). */
    static void allToAll(Communicator c, Arena arena, DataType t, long count, int how, Mem mem, int k) {
        int n = c.size();
        int me = c.rank();
        long blk = count * t.byteSize();
        String what = "allToAll #" + k + " rank " + me + " " + t + " count " + count + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment send = b.get(blk * n, mem);
            for (int r = 0; r < n; r++) DataMovementCollectivesTest.fill(send, r * blk, blk, me, k * 64 + r);
            MemorySegment recv = b.get(blk * n, mem);
            recv.fill((byte) 0x5A);
            run(how % 2, () -> c.allToAll(send, recv, count, t), () -> c.allToAllAsync(send, recv, count, t), null);
            for (int q = 0; q < n; q++) DataMovementCollectivesTest.check(recv, q * blk, blk, q, k * 64 + me, what);
        }
    }

    static void allGather(Communicator c, Stream s, Arena arena, DataType t, long count, long[] counts, long[] displs, boolean inPlace,
                          int how, Mem mem, int k) {
        int n = c.size();
        int me = c.rank();
        int es = t.byteSize();
        long[] off = new long[n];
        long[] len = new long[n];
        long end = 0;
        for (int r = 0; r < n; r++) {
            off[r] = (counts == null ? r * count : displs[r]) * es;
            len[r] = (counts == null ? count : counts[r]) * es;
            end = Math.max(end, off[r] + len[r]);
        }
        String what = (counts == null ? "allGather" : "allGatherV") + " #" + k + " rank " + me + " " + t + " inPlace " + inPlace + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment recv = b.get(end, mem);
            MemorySegment send;
            if (inPlace) {
                send = recv;
                DataMovementCollectivesTest.fill(recv, off[me], len[me], me, k);
            } else {
                send = b.get(len[me], mem);
                DataMovementCollectivesTest.fill(send, 0, len[me], me, k);
            }
            if (counts == null) {
                run(how, () -> c.allGather(send, recv, count, t), () -> c.allGatherAsync(send, recv, count, t),
                        () -> s.allGather(send, recv, count, t));
            } else {
                run(how, () -> c.allGatherV(send, recv, counts, displs, t), () -> c.allGatherVAsync(send, recv, counts, displs, t),
                        () -> c.allGatherVAsync(send, recv, counts, displs, t));
            }
            for (int r = 0; r < n; r++) DataMovementCollectivesTest.check(recv, off[r], len[r], r, k, what);
        }
    }

    static void broadcast(Communicator c, Stream s, Arena arena, DataType t, long count, int root, int how, Mem mem, int k) {
        int me = c.rank();
        long bytes = count * t.byteSize();
        String what = "broadcast #" + k + " rank " + me + " root " + root + " bytes " + bytes + " " + mem;
        try (Bufs b = new Bufs(c, arena)) {
            MemorySegment buf = b.get(bytes, mem);
            if (me == root) DataMovementCollectivesTest.fill(buf, 0, bytes, root, k);
            else buf.fill((byte) 0x5A);
            run(how, () -> c.broadcast(buf, count, t, root), () -> c.broadcastAsync(buf, count, t, root),
                    () -> s.broadcast(buf, count, t, root));
            DataMovementCollectivesTest.check(buf, 0, bytes, root, k, what);
        }
    }

    // ---------------------------------------------------------------------------------------------- tests

    /** The whole type x op grid at 2, 3 and 4 ranks. */
    @ParameterizedTest(name = "{0} ranks (threads)")
    @ValueSource(ints = {2, 3, 4})
    void threadRanks(int n) throws Exception {
        Ranks.runThreads(n, Duration.ofMinutes(4), h -> sequence(h.world(), SEED + n, 40, 1));
    }

    /**
     * Processes map each other's memory for real; 2 and 3 of them (4 ranks are the threads' above: CI time), each with
     * a diagonal of the type x op grid (every type and every op; the threads above run the whole grid at each rank
     * count): the grid's kernels are the same in threads and processes, what processes add is the mapping.
     */
    @ParameterizedTest(name = "{0} ranks (processes)")
    @ValueSource(ints = {2, 3})
    void processRanks(int n) throws Exception {
        var out = Ranks.run(n, ZeroCopyWorker.class, Map.of("HCOMM_TRANSPORT", "shm"), Duration.ofMinutes(4), "sequence",
                String.valueOf(SEED + 100 + n));
        for (var o : out) assertThat(o.output()).contains("PASS");
    }

    /** Each element is reduced by one rank in rank order with the kernels, so every rank holds those exact bits. */
    @Test
    void bitIdenticalAcrossRanksWithInexactFloats() throws Exception {
        int n = 3;
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int me = c.rank();
            for (DataType t : new DataType[] {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16}) {
                for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PROD}) {
                    long count = 50_021;
                    int es = t.byteSize();
                    try (Arena arena = Arena.ofConfined(); RegisteredBuffer send = c.memory().allocate(count * es);
                         RegisteredBuffer recv = c.memory().allocate(count * es)) {
                        MemorySegment[] in = new MemorySegment[n];
                        for (int r = 0; r < n; r++) in[r] = inexactInput(arena, t, op, r, count);
                        MemorySegment.copy(in[me], 0, send.segment(), 0, count * es);
                        c.allReduce(send.segment(), recv.segment(), count, t, op);
                        // the reference: the kernels over the ranks' inputs in rank order, AVG divided once
                        ReduceKernel k = ReduceKernel.of(t, op);
                        MemorySegment want = arena.allocate(count * es);
                        k.combine(in[0], 0, in[1], 0, want, 0, count);
                        for (int r = 2; r < n; r++) k.accumulate(want, 0, in[r], 0, count);
                        k.finish(want, 0, count, n);
                        long diff = recv.segment().mismatch(want);
                        assertThat(diff).as("rank %d %s %s: first differing byte", me, t, op).isEqualTo(-1);
                    }
                }
            }
            assertThat(ZeroCopyProbe.zeroCopyOps(c)).isEqualTo(12);
        });
    }

    /** Rank {@code r}'s input of bitIdenticalAcrossRanksWithInexactFloats (seeded: every rank computes every rank's). */
    private static MemorySegment inexactInput(Arena arena, DataType t, ReduceOp op, int r, long count) {
        MemorySegment in = arena.allocate(count * t.byteSize());
        Random rnd = new Random(r * 1000 + t.ordinal() * 10 + op.ordinal());
        for (long i = 0; i < count; i++) {
            double x = op == ReduceOp.PROD ? 0.5 + rnd.nextDouble() : rnd.nextGaussian() * 1e3;
            ReductionCollectivesTest.put(in, t, i, x);
        }
        return in;
    }

    /**
     * Small all-reduces go in one step (each rank reduces every input itself and leaves without waiting): back to back,
     * with ranks delayed at random before and after their calls, every rank's result of every op is right, though a
     * rank may leave an op while another still reads its input slot (reused two ops later). Native, heap and in place.
     */
    @Test
    void smallAllReducesInOneStepStayRightWhenRanksDrift() throws Exception {
        oneStepWithDrift(4 * 1024, 3000);
    }

    /** The same up to 16 KiB, the one-step limit where ranks outnumber the cores (forced here on any machine). */
    @Test
    void oneStepUpTo16KiBStaysRightWhenRanksDrift() throws Exception {
        oneStepWithDrift(16 * 1024, 1000);
    }

    private static void oneStepWithDrift(int maxBytes, int ops) throws Exception {
        int n = 3;
        Ranks.runThreads(n, Duration.ofMinutes(3), h -> {
            Communicator c = h.world();
            int me = c.rank();
            ZeroCopyProbe.oneStepMax(c, maxBytes);
            Random delays = new Random(0xD81F7L + me);
            try (Arena arena = Arena.ofShared()) {
                long zc0 = ZeroCopyProbe.zeroCopyOps(c);
                for (int i = 0; i < ops; i++) {
                    int count = 1 + (i * 37) % (maxBytes / 4); // int32 up to the limit: all in one step
                    if (delays.nextInt(50) == 0) java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                    checkedIntSum(c, arena, i, count, () -> {
                        if (delays.nextInt(50) == 0) java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                    });
                }
                assertThat(ZeroCopyProbe.zeroCopyOps(c) - zc0).as("every op ran in shared memory").isEqualTo(ops);
            }
        });
    }

    /**
     * Op {@code i} of the one-step tests: an int32 sum of {@code count} elements of native memory, a heap array or in
     * place (by {@code i % 3}), {@code afterCall} run right after it, then every element checked on this rank.
     */
    private static void checkedIntSum(Communicator c, Arena arena, int i, int count, Runnable afterCall) {
        int n = c.size();
        int me = c.rank();
        int kind = i % 3;
        MemorySegment send = kind == 1 ? MemorySegment.ofArray(new int[count]) : arena.allocate(count * 4L, 4);
        for (int e = 0; e < count; e++) send.setAtIndex(ValueLayout.JAVA_INT, e, i * 1_000 + e * 7 + me);
        MemorySegment recv = kind == 2 ? send : arena.allocate(count * 4L, 4);
        c.allReduce(send, recv, count, DataType.INT32, ReduceOp.SUM);
        afterCall.run();
        for (int e = 0; e < count; e++) {
            int want = n * (i * 1_000 + e * 7) + n * (n - 1) / 2;
            int got = recv.getAtIndex(ValueLayout.JAVA_INT, e);
            if (got != want) {
                throw new AssertionError("rank " + me + ", op " + i + " (" + count + " elements, kind " + kind + "), element "
                        + e + ": " + got + ", want " + want);
            }
        }
    }

    /**
     * Ranks whose one-step limits differ (their hosts' oversubscription seen differently) must not each run their own
     * path: every all-reduce between the two limits falls back to the transport on every rank, with the right result
     * on every rank; those below both limits still go in one step. Native, heap and in place.
     */
    @Test
    void ranksThatDisagreeOnOneStepAllFallBack() throws Exception {
        int n = 3;
        Ranks.runThreads(n, Duration.ofMinutes(3), h -> {
            Communicator c = h.world();
            int me = c.rank();
            ZeroCopyProbe.oneStepMax(c, me == 1 ? 16 * 1024 : 4 * 1024);
            try (Arena arena = Arena.ofShared()) {
                int[] counts = {1, 1024, 1025, 2000, 4096, 3, 4095};
                long between = 0;
                long zc0 = ZeroCopyProbe.zeroCopyOps(c);
                long fb0 = ZeroCopyProbe.fallbackOps(c);
                for (int i = 0; i < counts.length * 3; i++) {
                    int count = counts[i % counts.length];
                    if (count > 1024) between++;
                    checkedIntSum(c, arena, i, count, () -> { });
                }
                assertThat(ZeroCopyProbe.fallbackOps(c) - fb0).as("ops between the limits fell back").isEqualTo(between);
                assertThat(ZeroCopyProbe.zeroCopyOps(c) - zc0).as("ops below both limits ran in one step")
                        .isEqualTo(counts.length * 3 - between);
            }
        });
    }

    /**
     * Steady state allocates nothing: after a warm-up (JIT, first mappings), a window of thousands of blocking zero-copy
     * ops of every kind allocates (ThreadMXBean) less than a few bytes per op on the calling thread. The spin time is long, so
     * no wait takes the slow path (blocking, which may allocate: it starts listening for notices).
     */
    @Test
    void noAllocationPerOpInSteadyState() throws Exception {
        Map<Integer, String> report = new java.util.concurrent.ConcurrentHashMap<>();
        Ranks.runThreads(2, Duration.ofMinutes(4), b -> b.spinTime(Duration.ofSeconds(30)), h -> {
            Communicator c = h.world();
            int n = c.size();
            var mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
            long count = 4096;
            try (RegisteredBuffer s = c.memory().allocate(DataType.FLOAT32, count * n); RegisteredBuffer r = c.memory().allocate(DataType.FLOAT32, count * n)) {
                MemorySegment send = s.segment();
                MemorySegment recv = r.segment();
                MemorySegment heap = MemorySegment.ofArray(new float[(int) count]); // staged through a registered buffer
                String[] names = {"allReduce native", "allReduce heap", "allReduce in place MAX", "reduceScatter",
                        "allGather", "broadcast", "barrier"};
                Runnable[] ops = {
                        () -> c.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.SUM),
                        () -> c.allReduce(heap, heap, count, DataType.FLOAT32, ReduceOp.SUM),
                        () -> c.allReduce(recv, recv, count, DataType.FLOAT32, ReduceOp.MAX),
                        () -> c.reduceScatter(send, recv, count, DataType.FLOAT32, ReduceOp.SUM),
                        () -> c.allGather(send, recv, count, DataType.FLOAT32),
                        () -> c.broadcast(send, count, DataType.FLOAT32, 1),
                        c::barrier};
                Runnable round = () -> {
                    for (Runnable op : ops) op.run();
                };
                // a short warm-up: C2 has compiled the ops after about 1000 rounds (alone: the first window then is clean, where
                // 300 took three more windows); the windows below wait for steady state however long it takes
                for (int i = 0; i < 1000; i++) round.run();
                long tid = Thread.currentThread().threadId();
                String oldName = Thread.currentThread().getName();
                Thread.currentThread().setName("zc-faults-" + c.rank()); // the native name too: found in /proc/self/task
                java.nio.file.Path task = taskOf("zc-faults-" + c.rank());
                // Steady state is what is asserted: on a loaded machine C2 may still be compiling (or recompiling, after
                // a deopt caused by an earlier test's types) a reduction kernel, and an interpreted or C1-compiled
                // Vector API kernel allocates its vectors; with two test JVMs side by side and other JVMs beside them,
                // the compile queue can be long. So measure windows of 500 rounds until one is clean on every rank or two
                // minutes have passed (the ranks agree after each window, outside it); an op that allocates allocates in
                // every window.
                int rounds = 500;
                long bytes = 0, faults = 0, ops0 = 0;
                int[] verdict = new int[2]; // {this window allocated or faulted, out of time}
                MemorySegment flag = MemorySegment.ofArray(verdict);
                long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
                for (int window = 0; ; window++) {
                    long zc0 = ZeroCopyProbe.zeroCopyOps(c);
                    long faults0 = minorFaults(task);
                    long before = mx.getThreadAllocatedBytes(tid);
                    for (int i = 0; i < rounds; i++) round.run();
                    bytes = mx.getThreadAllocatedBytes(tid) - before;
                    faults = minorFaults(task) - faults0;
                    ops0 = ZeroCopyProbe.zeroCopyOps(c) - zc0;
                    report.put(c.rank(), bytes + " bytes and " + faults + " page faults in " + ops0 + " ops (window " + window + ")");
                    verdict[0] = (double) bytes / ops0 < 8.0 && faults < 10 ? 0 : 1;
                    verdict[1] = System.nanoTime() - deadline > 0 ? 1 : 0;
                    c.allReduce(flag, flag, 2, DataType.INT32, ReduceOp.MAX);
                    if (verdict[0] == 0 || verdict[1] == 1) break;
                }
                if (verdict[0] == 1) { // name the op that allocates, for whoever reads the failure
                    StringBuilder perOp = new StringBuilder();
                    for (int k = 0; k < ops.length; k++) {
                        long b0 = mx.getThreadAllocatedBytes(tid);
                        for (int i = 0; i < 200; i++) ops[k].run();
                        perOp.append(", ").append(names[k]).append(' ').append((mx.getThreadAllocatedBytes(tid) - b0) / 200);
                    }
                    report.merge(c.rank(), "; bytes per op" + perOp, String::concat);
                }
                Thread.currentThread().setName(oldName);
                assertThat(ops0).isEqualTo(7L * rounds);
                assertThat((double) bytes / ops0).as("bytes allocated per op on rank %d: %s", c.rank(), report.get(c.rank()))
                        .isLessThan(8.0);
                // 6 of the 7 ops touch 16-48 KiB of buffers each (4-12 pages): a fault per page would be tens of thousands
                assertThat(faults).as("minor page faults of this thread during %d ops", ops0).isLessThan(10);
            }
        });
        System.out.println("ZeroCopyCollectivesTest allocation: " + report);
    }

    /**
     * A zero-copy collective queued on a stream that never runs it (an earlier op of the stream failed) gives up its
     * turn: the collectives called after it on other threads go ahead at once instead of waiting for the timeout.
     */
    @Test
    void skippedStreamOpDoesNotHoldUpTheNext() throws Exception {
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.timeout(Duration.ofSeconds(60)), h -> {
            Communicator c = h.world();
            int peer = 1 - c.rank();
            try (RegisteredBuffer buf = c.memory().allocate(DataType.INT32, 100); Stream s = c.newStream()) {
                MemorySegment seg = buf.segment();
                CommFuture<Status> tooSmall = s.recv(MemorySegment.ofArray(new byte[4]), peer, 5);
                c.send(new byte[16], peer, 5); // the stream's receive fails: its buffer is too small
                CommFuture<Void> skipped = s.allReduce(seg, seg, 100, DataType.INT32, ReduceOp.SUM);
                long t0 = System.nanoTime();
                seg.setAtIndex(ValueLayout.JAVA_INT, 0, 1 + c.rank());
                c.allReduce(seg, seg, 1, DataType.INT32, ReduceOp.SUM);
                assertThat(seg.getAtIndex(ValueLayout.JAVA_INT, 0)).isEqualTo(3);
                assertThat((System.nanoTime() - t0) / 1_000_000).as("ms until the next collective ran").isLessThan(10_000);
                org.assertj.core.api.Assertions.assertThatThrownBy(tooSmall::await).isInstanceOf(MessageTruncatedException.class);
                org.assertj.core.api.Assertions.assertThatThrownBy(skipped::await).isInstanceOf(CommAbortedException.class);
                // the stream reports its first failure once (close would, had nobody synchronized)
                org.assertj.core.api.Assertions.assertThatThrownBy(s::synchronize).isInstanceOf(MessageTruncatedException.class);
            }
        });
    }

    /**
     * Reduce-scatter into this rank's own block of its send buffer (the in-place form) runs in shared memory; a
     * receive buffer overlapping other blocks of the send buffer would race with the peers reading them, so that
     * op goes through the transport on every rank (with the same result).
     */
    @Test
    void reduceScatterIntoOwnBlock() throws Exception {
        int n = 3;
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int me = c.rank();
            long per = 4099;
            try (RegisteredBuffer b = c.memory().allocate(DataType.INT64, per * n)) {
                MemorySegment send = b.segment();
                for (int k = 0; k < 2; k++) {
                    for (long i = 0; i < per * n; i++) send.setAtIndex(ValueLayout.JAVA_LONG, i, i * 1000 + me + k);
                    long zc0 = ZeroCopyProbe.zeroCopyOps(c);
                    // k = 0: exactly this rank's block; k = 1: shifted by one element into a neighbour's block (unsafe)
                    long at = (me * per + (k == 0 ? 0 : me == 0 ? 1 : -1)) * 8;
                    MemorySegment recv = send.asSlice(at, (per - k) * 8);
                    c.reduceScatter(send, recv, k == 0 ? per : per - 1, DataType.INT64, ReduceOp.SUM);
                    long got = per - k;
                    for (long i = 0; i < got; i++) {
                        long want = 0;
                        for (int r = 0; r < n; r++) want += (me * (per - k) + i) * 1000 + r + k;
                        assertThat(recv.getAtIndex(ValueLayout.JAVA_LONG, i)).as("k %d element %d", k, i).isEqualTo(want);
                    }
                    assertThat(ZeroCopyProbe.zeroCopyOps(c) - zc0).as("k %d ran in shared memory", k).isEqualTo(k == 0 ? 1 : 0);
                }
            }
        });
    }

    /**
     * allToAllV whose counts disagree (rank 0 sends 4 elements to rank 1, which expects 3), buffers registered so it runs
     * in shared memory: the rank that finds it names the counts, the other learns that its peer failed; nobody hangs,
     * and the next op still works.
     */
    @Test
    void allToAllVWithDisagreeingCountsFailsOnEveryRank() throws Exception {
        Ranks.runThreads(2, Duration.ofMinutes(1), h -> {
            Communicator c = h.world();
            int me = c.rank();
            try (RegisteredBuffer send = c.memory().allocate(DataType.INT32, 8); RegisteredBuffer recv = c.memory().allocate(DataType.INT32, 8)) {
                // rank 0 sends 1 to itself, 4 to rank 1; rank 1 sends 2 to rank 0, 1 to itself; rank 1 expects 3 from rank 0
                long[] sc = me == 0 ? new long[] {1, 4} : new long[] {2, 1};
                long[] recvCounts = me == 0 ? new long[] {1, 2} : new long[] {3, 1};
                long[] sd = me == 0 ? new long[] {0, 1} : new long[] {0, 2};
                long[] rd = me == 0 ? new long[] {0, 1} : new long[] {0, 3};
                if (me == 0) {
                    assertThatThrownBy(() -> c.allToAllV(send.segment(), sc, sd, recv.segment(), recvCounts, rd, DataType.INT32))
                            .hasMessageContaining("rank 0").hasMessageContaining("rank 1 failed in its part");
                } else {
                    assertThatThrownBy(() -> c.allToAllV(send.segment(), sc, sd, recv.segment(), recvCounts, rd, DataType.INT32))
                            .isInstanceOf(CollectiveMismatchException.class)
                            .hasMessage("rank 1: allToAllV: rank 0 sends 16 bytes to this rank, whose recvCounts[0] says 12: the ranks "
                                    + "called it with different counts");
                }
                // the communicator is still usable
                MemorySegment one = send.segment().asSlice(0, 4);
                one.set(ValueLayout.JAVA_INT, 0, me + 1);
                c.allReduce(one, one, 1, DataType.INT32, ReduceOp.SUM);
                assertThat(one.get(ValueLayout.JAVA_INT, 0)).isEqualTo(3);
            }
        });
    }

    /**
     * Slices large enough for streaming copies (several MB per rank): out of place (through the large scratch, odd ranks
     * starting with half a chunk), in place on every rank (small chunks written back where they were read) and in
     * place on one rank only; pooled buffers, every element checked on every rank, every op in shared memory.
     */
    @Test
    void largeSlicesInAndOutOfPlace() throws Exception {
        int n = 3;
        long count = 4_200_007; // float32, 16.8 MB: slices of 5.6 MB, over the streaming threshold of two 2.5 MB chunks
        Ranks.runThreads(n, Duration.ofMinutes(3), h -> {
            Communicator c = h.world();
            int me = c.rank();
            try (RegisteredBuffer in = c.memory().allocate(DataType.FLOAT32, count); RegisteredBuffer out = c.memory().allocate(DataType.FLOAT32, count)) {
                for (int mode = 0; mode < 3; mode++) {
                    boolean inPlace = mode == 1 || mode == 2 && me == 1;
                    MemorySegment send = in.segment();
                    MemorySegment recv = inPlace ? send : out.segment();
                    fillSaw(send, count, 4093, me + 1, mode);
                    if (!inPlace) recv.fill((byte) 0x7f);
                    long zc0 = ZeroCopyProbe.zeroCopyOps(c);
                    c.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.SUM);
                    checkSaw(recv, count, 4093, 6, 3 * mode, "mode " + mode + " rank " + me);
                    assertThat(ZeroCopyProbe.zeroCopyOps(c) - zc0).as("mode %d ran in shared memory", mode).isEqualTo(1);
                }
            }
        });
    }

    /**
     * Large all-reduces with unregistered memory on some or all ranks go chunk by chunk through staging rings: native
     * and heap memory, in and out of place, mixed with registered ranks, a ragged last chunk, every element checked
     * on every rank; send and receive buffers that partly overlap are staged whole instead (still in shared memory).
     */
    @Test
    void largeUnregisteredMemoryChunkByChunk() throws Exception {
        int n = 3;
        record Case(DataType t, ReduceOp op, long count, boolean inPlace, Mem[] mem) {
        }
        Case[] cases = {
            new Case(DataType.FLOAT32, ReduceOp.SUM, 786_433, false, new Mem[] {Mem.NATIVE, Mem.NATIVE, Mem.NATIVE}),
            new Case(DataType.INT64, ReduceOp.MAX, 400_009, true, new Mem[] {Mem.HEAP, Mem.HEAP, Mem.HEAP}),
            new Case(DataType.FLOAT64, ReduceOp.AVG, 300_007, false, new Mem[] {Mem.NATIVE, Mem.POOL, Mem.HEAP}),
            new Case(DataType.BFLOAT16, ReduceOp.SUM, 1_500_001, true, new Mem[] {Mem.POOL, Mem.NATIVE, Mem.POOL}),
            new Case(DataType.INT8, ReduceOp.MIN, 2_097_153, false, new Mem[] {Mem.HEAP, Mem.HEAP, Mem.NATIVE}),
        };
        Ranks.runThreads(n, Duration.ofMinutes(3), h -> {
            Communicator c = h.world();
            int me = c.rank();
            try (Arena arena = Arena.ofShared(); Stream s = c.newStream()) {
                for (int k = 0; k < cases.length; k++) {
                    Case x = cases[k];
                    long zc0 = ZeroCopyProbe.zeroCopyOps(c);
                    long p0 = ZeroCopyProbe.pipelinedOps(c);
                    allReduce(c, s, arena, x.t(), x.op(), x.count(), x.inPlace(), k % 3, x.mem()[me], 500 + k);
                    assertThat(ZeroCopyProbe.zeroCopyOps(c) - zc0).as("case %d ran in shared memory", k).isEqualTo(1);
                    assertThat(ZeroCopyProbe.pipelinedOps(c) - p0).as("case %d went chunk by chunk", k).isEqualTo(1);
                }
                // send and receive buffers overlapping by half: no rings, staged whole
                long count = 600_001;
                MemorySegment buf = arena.allocate(count * 4 * 3 / 2, 8);
                MemorySegment send = buf.asSlice(0, count * 4);
                MemorySegment recv = buf.asSlice(count * 2, count * 4);
                for (long i = 0; i < count; i++) ReductionCollectivesTest.put(send, DataType.FLOAT32, i, ReductionCollectivesTest.input(DataType.FLOAT32, ReduceOp.SUM, me, 600, i));
                long zc0 = ZeroCopyProbe.zeroCopyOps(c);
                long p0 = ZeroCopyProbe.pipelinedOps(c);
                c.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.SUM);
                ReductionCollectivesTest.check(recv, 0, DataType.FLOAT32, ReduceOp.SUM, n, 600, 0, count, "overlapping rank " + me);
                assertThat(ZeroCopyProbe.zeroCopyOps(c) - zc0).as("overlapping buffers: in shared memory").isEqualTo(1);
                assertThat(ZeroCopyProbe.pipelinedOps(c) - p0).as("overlapping buffers are staged whole").isZero();
            }
        });
    }

    /**
     * A caller's own large off-heap buffers are adopted at their second all-reduce (HCOMM_MEM_ADOPT, on by default):
     * from then on the op runs as on registered memory (no rings), with every element right on every rank, in and out
     * of place, from buffers that start mid-page and end mid-page, beside a rank whose heap arrays still go through its
     * ring; and buffers of a closed arena are dropped, their successors adopted in turn.
     */
    @Test
    void callersBuffersAreAdoptedAtTheirSecondAllReduce() throws Exception {
        int n = 3;
        long count = 786_433; // 3 MiB of float32 and a ragged end
        Ranks.runThreads(n, Duration.ofMinutes(3), h -> {
            Communicator c = h.world();
            int me = c.rank();
            for (int round = 0; round < 2; round++) {
                try (Arena arena = Arena.ofShared()) {
                    long skew = 4L * (me + 1) + 4096L * round;
                    MemorySegment send = arena.allocate(count * 4 + skew + 64, 8).asSlice(skew, count * 4);
                    MemorySegment recv = arena.allocate(count * 4 + 64, 8).asSlice(12, count * 4);
                    float[] heap = new float[(int) count];
                    // iter 0: both buffers new (through the rings); iter 1: both adopted by their second op at the latest
                    // (send already at iter 0's in place op); iter 2: both found adopted (a fourth would repeat the third)
                    for (int iter = 0; iter < 3; iter++) {
                        // out of place on every rank's own memory
                        fillSaw(send, count, 4093, me + 1, iter);
                        recv.fill((byte) 0x7f);
                        long p0 = ZeroCopyProbe.pipelinedOps(c);
                        long z0 = ZeroCopyProbe.zeroCopyOps(c);
                        c.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.SUM);
                        checkSaw(recv, count, 4093, 6, 3 * iter, "round " + round + " iter " + iter + " rank " + me);
                        assertThat(ZeroCopyProbe.zeroCopyOps(c) - z0).as("iter %d in shared memory", iter).isEqualTo(1);
                        assertThat(ZeroCopyProbe.pipelinedOps(c) - p0).as("round %d iter %d: chunk by chunk only at first use", round, iter)
                                .isEqualTo(iter == 0 ? 1 : 0);
                        assertThat(c.memory().stats().adoptedBuffers()).as("iter %d: send and receive buffers adopted", iter)
                                .isEqualTo(iter == 0 ? 0 : 2);
                        // in place, rank 2 on a heap array (through its ring): the others' adopted send buffers too
                        MemorySegment mine = me == 2 ? MemorySegment.ofArray(heap) : send;
                        fillSaw(mine, count, 4091, me + 2, -iter);
                        c.allReduce(mine, mine, count, DataType.FLOAT32, ReduceOp.SUM);
                        checkSaw(mine, count, 4091, 9, -3 * iter, "in place, round " + round + " iter " + iter + " rank " + me);
                    }
                }
            }
            // send and receive buffers overlapping by half, again and again: never adopted (staged whole), right each time
            try (Arena arena = Arena.ofShared()) {
                long half = 600_001;
                MemorySegment buf = arena.allocate(half * 4 * 3 / 2, 8);
                MemorySegment send = buf.asSlice(0, half * 4);
                MemorySegment recv = buf.asSlice(half * 2, half * 4);
                for (int iter = 0; iter < 3; iter++) {
                    for (long i = 0; i < half; i++) ReductionCollectivesTest.put(send, DataType.FLOAT32, i, ReductionCollectivesTest.input(DataType.FLOAT32, ReduceOp.SUM, me, 700 + iter, i));
                    c.allReduce(send, recv, half, DataType.FLOAT32, ReduceOp.SUM);
                    ReductionCollectivesTest.check(recv, 0, DataType.FLOAT32, ReduceOp.SUM, n, 700 + iter, 0, half, "overlapping, iter " + iter + ", rank " + me);
                    // the earlier arenas' buffers were dropped at the first call (closed), and these are never taken
                    assertThat(c.memory().stats().adoptedBuffers()).as("overlapping buffers are not adopted").isZero();
                }
            }
        });
    }

    /**
     * The other collectives offer the caller's large send buffers adopted too, from their second op on: allGather (also
     * in place), reduceScatter, broadcast, allToAll, scatter and gather, each three times on the same native buffers, every
     * element checked on every rank, and the buffers adopted by the end.
     */
    @Test
    void otherCollectivesOfferAdoptedSendBuffers() throws Exception {
        int n = 3;
        long count = 600_011; // per rank: 2.4 MB of int32, a whole buffer of 7.2 MB
        Ranks.runThreads(n, Duration.ofMinutes(3), h -> {
            Communicator c = h.world();
            int me = c.rank();
            try (Arena arena = Arena.ofShared()) {
                MemorySegment small = arena.allocate(count * 4 + 8, 8).asSlice(4, count * 4);
                MemorySegment big = arena.allocate(n * count * 4 + 8, 8).asSlice(8, n * count * 4);
                MemorySegment out = arena.allocate(n * count * 4, 8);
                for (int iter = 0; iter < 3; iter++) {
                    String at = " iter " + iter + " rank " + me;
                    // allGather: block of rank r holds r * 1_000_000 + i + iter
                    fillRamp(small, 0, count, me * 1_000_000L + iter, 1);
                    c.allGather(small, out, count, DataType.INT32);
                    for (int r = 0; r < n; r++) checkRamp(out, r * count, count, r * 1_000_000L + iter, 1, "allGather" + at);
                    // allGather in place: rank r's block of big already holds its values
                    fillRamp(big, me * count, count, me * 7L - iter, 1);
                    c.allGather(big.asSlice(me * count * 4, count * 4), big, count, DataType.INT32);
                    for (int r = 0; r < n; r++) checkRamp(big, r * count, count, r * 7L - iter, 1, "allGather in place" + at);
                    // reduceScatter: element j of rank r's send is r + j + iter; block me sums over ranks
                    fillRamp(big, 0, n * count, me + iter, 1);
                    c.reduceScatter(big, small, count, DataType.INT32, ReduceOp.SUM);
                    checkRamp(small, 0, count, 3 + 3 * (me * count + iter), 3, "reduceScatter" + at); // 0 + 1 + 2, then 3 x (j + iter)
                    // broadcast from rank 1
                    if (me == 1) fillRamp(big, 0, n * count, iter, 3);
                    else big.fill((byte) -1);
                    c.broadcast(big, n * count, DataType.INT32, 1);
                    checkRamp(big, 0, n * count, iter, 3, "broadcast" + at);
                    // allToAll: rank r's block q holds r * 100 + q * 10_000_000 + i
                    for (int q = 0; q < n; q++) fillRamp(big, q * count, count, me * 100L + q * 10_000_000L + iter, 1);
                    c.allToAll(big, out, count, DataType.INT32);
                    for (int r = 0; r < n; r++) checkRamp(out, r * count, count, r * 100L + me * 10_000_000L + iter, 1, "allToAll" + at);
                    // scatter from rank 2, gather to rank 0
                    if (me == 2) fillXor(big, 0, n * count, iter);
                    else big.fill((byte) -1);
                    c.scatter(big, small, count, DataType.INT32, 2);
                    checkXor(small, 0, count, me * count, iter, "scatter" + at);
                    c.gather(small, out, count, DataType.INT32, 0);
                    if (me == 0) checkXor(out, 0, n * count, 0, iter, "gather" + at);
                }
                assertThat(c.memory().stats().adoptedBuffers()).as("rank %d: send buffers adopted", me).isPositive();
            }
        });
    }

    // The large tests' element loops are methods of their own (not loops in the ranks' lambdas): C2 compiles each once
    // for every call, where an on-stack replacement of a lambda with many loops was deoptimized at every loop's exit
    // and compiled again (callersBuffersAreAdoptedAtTheirSecondAllReduce: a dozen times), and none divides per element.

    /** Float32 element {@code i < count} of {@code seg} = {@code (i % mod) * mul + add} (whole numbers, exact in a float). */
    static void fillSaw(MemorySegment seg, long count, int mod, long mul, long add) {
        long m = 0;
        for (long i = 0; i < count; i++) {
            seg.setAtIndex(ValueLayout.JAVA_FLOAT, i, m * mul + add);
            if (++m == mod) m = 0;
        }
    }

    /** Every float32 element {@code i < count} of {@code seg} is {@code (i % mod) * mul + add}, or it throws naming it. */
    static void checkSaw(MemorySegment seg, long count, int mod, long mul, long add, String what) {
        long m = 0;
        for (long i = 0; i < count; i++) {
            float want = m * mul + add;
            float got = seg.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            if (got != want) throw new AssertionError(what + " element " + i + ": " + got + ", want " + want);
            if (++m == mod) m = 0;
        }
    }

    /** Int32 element {@code from + i} of {@code seg} = {@code base + i * step} for {@code i < count}. */
    static void fillRamp(MemorySegment seg, long from, long count, long base, long step) {
        for (long i = 0; i < count; i++) seg.setAtIndex(ValueLayout.JAVA_INT, from + i, (int) (base + i * step));
    }

    /** Every int32 element {@code from + i} ({@code i < count}) of {@code seg} is {@code base + i * step}, or it throws naming it. */
    static void checkRamp(MemorySegment seg, long from, long count, long base, long step, String what) {
        for (long i = 0; i < count; i++) {
            if (seg.getAtIndex(ValueLayout.JAVA_INT, from + i) != (int) (base + i * step)) {
                throw new AssertionError(what + " element " + (from + i));
            }
        }
    }

    /** Int32 element {@code from + i} of {@code seg} = {@code (from + i) ^ x} for {@code i < count}. */
    static void fillXor(MemorySegment seg, long from, long count, int x) {
        for (long i = 0; i < count; i++) seg.setAtIndex(ValueLayout.JAVA_INT, from + i, (int) ((from + i) ^ x));
    }

    /** Every int32 element {@code i < count} of {@code seg} at {@code from + i} is {@code (start + i) ^ x}, or it throws naming it. */
    static void checkXor(MemorySegment seg, long from, long count, long start, int x, String what) {
        for (long i = 0; i < count; i++) {
            if (seg.getAtIndex(ValueLayout.JAVA_INT, from + i) != (int) ((start + i) ^ x)) throw new AssertionError(what + " element " + (from + i));
        }
    }

    /**
     * Ranks on two "hosts" (HCOMM_HOST_ID): the world has no zero-copy engine (its collectives take the transport),
     * the per-host communicators of a split have one each.
     */
    @Test
    void perHostChildrenOfAWorldOnTwoHosts() throws Exception {
        int n = 4;
        int port = Ranks.freePort();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(n);
        try {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (int rank = 0; rank < n; rank++) {
                int me = rank;
                fs.add(pool.submit(() -> {
                    try (Hcomm h = Hcomm.init(Ranks.threadConfig(me, n, port).hostId(me < 2 ? "host-a" : "host-b").build());
                         Arena arena = Arena.ofShared()) {
                        Communicator w = h.world();
                        assertThat(ZeroCopyProbe.zeroCopyOps(w)).isEqualTo(-1);
                        try (Communicator host = w.split(me / 2, me); Stream s = host.newStream()) {
                            allReduce(host, s, arena, DataType.FLOAT32, ReduceOp.SUM, 1009, false, 0, Mem.POOL, 1);
                            allReduce(w, s, arena, DataType.FLOAT32, ReduceOp.SUM, 1009, false, 0, Mem.POOL, 2);
                            assertThat(ZeroCopyProbe.zeroCopyOps(host)).isEqualTo(1);
                        }
                    }
                    return null;
                }));
            }
            for (var f : fs) f.get(2, java.util.concurrent.TimeUnit.MINUTES);
        } finally {
            pool.shutdownNow();
        }
    }

    /** The /proc/self/task directory of the thread whose native name is {@code name}. */
    static java.nio.file.Path taskOf(String name) {
        try (var tasks = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/task"))) {
            return tasks.filter(t -> {
                try {
                    return java.nio.file.Files.readString(t.resolve("comm")).trim().equals(name);
                } catch (java.io.IOException e) {
                    return false;
                }
            }).findFirst().orElseThrow(() -> new AssertionError("no thread named " + name + " in /proc/self/task"));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Minor page faults of a thread so far ({@code stat} field 10). */
    static long minorFaults(java.nio.file.Path task) {
        try {
            String stat = java.nio.file.Files.readString(task.resolve("stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(f[7]); // field 10 of the line; f[0] is field 3
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** HCOMM_ZERO_COPY=0: no engine, everything through the transport, same results. */
    @Test
    void zeroCopyOff() throws Exception {
        Ranks.runThreads(2, Duration.ofMinutes(2), b -> b.zeroCopy(false), h -> {
            Communicator c = h.world();
            assertThat(ZeroCopyProbe.zeroCopyOps(c)).isEqualTo(-1);
            try (Arena arena = Arena.ofShared(); Stream s = c.newStream()) {
                allReduce(c, s, arena, DataType.FLOAT32, ReduceOp.SUM, 1009, false, 0, Mem.POOL, 1);
                broadcast(c, s, arena, DataType.INT32, 20_011, 1, 0, Mem.POOL, 2);
            }
        });
    }

    /** Sub-communicators (split, dup) get engines of their own; ops on them and on the parent interleave. */
    @Test
    void subCommunicators() throws Exception {
        int n = 4;
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            Communicator w = h.world();
            try (Communicator half = w.split(w.rank() % 2, w.rank()); Communicator dup = w.dup(); Arena arena = Arena.ofShared();
                 Stream s = w.newStream()) {
                for (int k = 0; k < 6; k++) {
                    allReduce(half, s, arena, DataType.INT32, ReduceOp.SUM, 4099, k % 2 == 0, 0, Mem.POOL, 10 + k);
                    allReduce(w, s, arena, DataType.FLOAT64, ReduceOp.MAX, 1009, false, 0, Mem.POOL, 20 + k);
                    allGather(dup, s, arena, DataType.INT8, 97, null, null, k % 2 == 1, 0, Mem.POOL, 30 + k);
                }
                assertThat(ZeroCopyProbe.zeroCopyOps(half)).isEqualTo(6);
                assertThat(ZeroCopyProbe.zeroCopyOps(dup)).isEqualTo(6);
            }
        });
    }
}
