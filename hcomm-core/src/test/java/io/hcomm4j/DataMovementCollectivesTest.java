package io.hcomm4j;

import io.hcomm4j.testing.Memo;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Seeded random sequences of the data-movement collectives (broadcast, all-gather(V), gather(V),
 * scatter(V), all-to-all(V), barrier) on 1..8 ranks (threads of this JVM, real sockets), blocking and
 * async, in place and not; every rank checks every byte against what the op must produce.
 */
public class DataMovementCollectivesTest {
    static final long SEED = 20261130L;

    /** The byte rank r contributes at index i of its block in op k. */
    static byte val(int r, int k, long i) {
        long x = (i + 31) * 0x9E3779B97F4A7C15L ^ (r * 0x632BE59BD9B4E019L) ^ (k * 0x85EBCA6BL);
        return (byte) (x ^ (x >>> 31));
    }

    static void fill(MemorySegment s, long off, long len, int r, int k) {
        for (long i = 0; i < len; i++) s.set(ValueLayout.JAVA_BYTE, off + i, val(r, k, i));
    }

    /** From this many bytes on, {@link #check} compares with a block from {@link #reference}. */
    static final long SHARED_MIN = 4096;
    /** The blocks {@link #check} took from {@link #reference}, up to 24 MiB. */
    private static final Memo<List<Integer>, MemorySegment> REFERENCES = new Memo<>(24 << 20);

    /**
     * The {@code len} bytes {@link #val} gives rank r in op k: a pure function of its arguments, computed once and kept
     * for the other callers with the same arguments (the ranks of a thread job that all check one broadcast or all-gather
     * block) until newer ones push it out.
     */
    static MemorySegment reference(int r, int k, long len) {
        return REFERENCES.get(List.of(r, k, Math.toIntExact(len)), len, () -> {
            MemorySegment want = MemorySegment.ofArray(new byte[Math.toIntExact(len)]);
            fill(want, 0, len, r, k);
            return want;
        });
    }

    /** Throws unless bytes {@code off..off+len} of {@code s} are what {@link #fill} gives rank r in op k, naming the first that differs. */
    static void check(MemorySegment s, long off, long len, int r, int k, String what) {
        if (len >= SHARED_MIN) {
            long i = MemorySegment.mismatch(s, off, off + len, reference(r, k, len), 0, len);
            if (i >= 0) {
                throw new AssertionError(what + ": byte " + i + " of the block from rank " + r + " is " + s.get(ValueLayout.JAVA_BYTE, off + i)
                        + ", expected " + val(r, k, i));
            }
            return;
        }
        for (long i = 0; i < len; i++) {
            byte got = s.get(ValueLayout.JAVA_BYTE, off + i);
            if (got != val(r, k, i)) {
                throw new AssertionError(what + ": byte " + i + " of the block from rank " + r + " is " + got + ", expected " + val(r, k, i));
            }
        }
    }

    static long randomCount(Random rnd) {
        return switch (rnd.nextInt(6)) {
            case 0 -> 0;
            case 1 -> 1;
            case 2 -> 13;
            case 3 -> 997;
            case 4 -> 20_011;
            default -> 70_001 + rnd.nextInt(400_000);
        };
    }

    /** Every rank count with the cost model's choices, and a few with each algorithm forced (HCOMM_ALGO). */
    static Stream<Arguments> jobs() {
        Stream<Arguments> auto = Stream.of(1, 2, 3, 4, 5, 7, 8).map(n -> Arguments.of(n, ""));
        Stream<Arguments> forced = Stream.of(2, 3, 5).flatMap(n -> Stream.of(
                Arguments.of(n, "allreduce=ring;broadcast=chain;allgather=ring"),
                Arguments.of(n, "allreduce=recursive_doubling;broadcast=tree;allgather=bruck")));
        // Bruck's rounds depend on n (halving-doubling takes no part here): HalvingDoublingBruckTest runs Bruck on 1 to 8
        // ranks at every count, in place and not, up to blocks as large as these; here two rank counts in mixed sequences
        Stream<Arguments> halvingBruck = Stream.of(3, 6).map(n -> Arguments.of(n,
                "allreduce=halving_doubling;reducescatter=halving_doubling;alltoall=bruck"));
        return Stream.concat(Stream.concat(auto, forced), halvingBruck);
    }

    @ParameterizedTest(name = "{0} ranks, HCOMM_ALGO=''{1}''")
    @MethodSource("jobs")
    void randomSequences(int n, String algo) throws Exception {
        int ops = n <= 4 ? 40 : 25;
        Ranks.runThreads(n, Duration.ofMinutes(4), cfg -> cfg.algo(algo), h -> sequence(h.world(), SEED + n + algo.hashCode(), ops));
    }

    /** The random sequence of ops (the same on every rank for one seed), every result checked. */
    public static void sequence(Communicator c, long seed, int ops) {
        int n = c.size();
        {
            int me = c.rank();
            Random rnd = new Random(seed); // same sequence on every rank
            DataType[] types = DataType.values();
            try (Arena arena = Arena.ofShared()) {
                // each rank on its own picks heap arrays or off-heap memory per buffer
                Random local = new Random(seed * 31 + c.rank());
                for (int k = 0; k < ops; k++) {
                    int kind = rnd.nextInt(9);
                    DataType t = types[rnd.nextInt(types.length)];
                    int ts = t.byteSize();
                    long count = randomCount(rnd);
                    long blk = count * ts;
                    int root = rnd.nextInt(n);
                    boolean async = rnd.nextBoolean();
                    boolean inPlace = rnd.nextBoolean();
                    long[] counts = new long[n];
                    long[] displs = new long[n];
                    long at = 0;
                    for (int r = 0; r < n; r++) {
                        counts[r] = randomCount(rnd) % 5000;
                        at += rnd.nextInt(3);
                        displs[r] = at;
                        at += counts[r];
                    }
                    long vTotal = at;
                    String what = "op " + k + " kind " + kind + " n=" + n + " rank " + me + " count " + count + " " + t + " root " + root;
                    switch (kind) {
                        case 0 -> { // broadcast
                            MemorySegment buf = buffer(arena, local, Math.max(1, blk)).asSlice(0, blk);
                            if (me == root) fill(buf, 0, blk, root, k);
                            if (async) c.broadcastAsync(buf, count, t, root).await();
                            else c.broadcast(buf, count, t, root);
                            check(buf, 0, blk, root, k, what);
                        }
                        case 1 -> { // allGather
                            MemorySegment recv = buffer(arena, local, Math.max(1, blk * n));
                            MemorySegment send;
                            if (inPlace) {
                                send = recv;
                                fill(recv, me * blk, blk, me, k);
                            } else {
                                send = buffer(arena, local, Math.max(1, blk));
                                fill(send, 0, blk, me, k);
                            }
                            if (async) c.allGatherAsync(send, recv, count, t).await();
                            else c.allGather(send, recv, count, t);
                            for (int r = 0; r < n; r++) check(recv, r * blk, blk, r, k, what);
                        }
                        case 2 -> { // allGatherV
                            MemorySegment recv = buffer(arena, local, Math.max(1, vTotal * ts));
                            MemorySegment send = buffer(arena, local, Math.max(1, counts[me] * ts));
                            fill(send, 0, counts[me] * ts, me, k);
                            if (async) c.allGatherVAsync(send, recv, counts, displs, t).await();
                            else c.allGatherV(send, recv, counts, displs, t);
                            for (int r = 0; r < n; r++) check(recv, displs[r] * ts, counts[r] * ts, r, k, what);
                        }
                        case 3 -> { // gather
                            MemorySegment send = buffer(arena, local, Math.max(1, blk));
                            fill(send, 0, blk, me, k);
                            MemorySegment recv = buffer(arena, local, Math.max(1, blk * n));
                            if (async) c.gatherAsync(send, recv, count, t, root).await();
                            else c.gather(send, recv, count, t, root);
                            if (me == root) for (int r = 0; r < n; r++) check(recv, r * blk, blk, r, k, what);
                        }
                        case 4 -> { // gatherV
                            MemorySegment send = buffer(arena, local, Math.max(1, counts[me] * ts));
                            fill(send, 0, counts[me] * ts, me, k);
                            MemorySegment recv = buffer(arena, local, Math.max(1, vTotal * ts));
                            if (async) c.gatherVAsync(send, recv, counts, displs, t, root).await();
                            else c.gatherV(send, recv, counts, displs, t, root);
                            if (me == root) for (int r = 0; r < n; r++) check(recv, displs[r] * ts, counts[r] * ts, r, k, what);
                        }
                        case 5 -> { // scatter: root's block b is what rank b must get; fill it as "rank b's" data
                            MemorySegment send = buffer(arena, local, Math.max(1, blk * n));
                            if (me == root) for (int r = 0; r < n; r++) fill(send, r * blk, blk, r, k);
                            MemorySegment recv = buffer(arena, local, Math.max(1, blk));
                            if (async) c.scatterAsync(send, recv, count, t, root).await();
                            else c.scatter(send, recv, count, t, root);
                            check(recv, 0, blk, me, k, what);
                        }
                        case 6 -> { // scatterV
                            MemorySegment send = buffer(arena, local, Math.max(1, vTotal * ts));
                            if (me == root) for (int r = 0; r < n; r++) fill(send, displs[r] * ts, counts[r] * ts, r, k);
                            MemorySegment recv = buffer(arena, local, Math.max(1, counts[me] * ts));
                            if (async) c.scatterVAsync(send, counts, displs, recv, t, root).await();
                            else c.scatterV(send, counts, displs, recv, t, root);
                            check(recv, 0, counts[me] * ts, me, k, what);
                        }
                        case 7 -> { // allToAll: block b of rank r's send carries val(r * n + b)
                            long small = Math.min(count, 30_000);
                            long b = small * ts;
                            MemorySegment send = buffer(arena, local, Math.max(1, b * n));
                            for (int d = 0; d < n; d++) fill(send, d * b, b, me * n + d, k);
                            MemorySegment recv = inPlace ? send : buffer(arena, local, Math.max(1, b * n));
                            if (async) c.allToAllAsync(send, recv, small, t).await();
                            else c.allToAll(send, recv, small, t);
                            for (int s = 0; s < n; s++) check(recv, s * b, b, s * n + me, k, what);
                        }
                        default -> { // allToAllV: rank s sends (s + d) % 7 * 100 elements to d
                            long[] sc = new long[n], sd = new long[n], rc = new long[n], rd = new long[n];
                            long sAt = 0, rAt = 0;
                            for (int d = 0; d < n; d++) {
                                sc[d] = ((me + d) % 7) * 100L;
                                sd[d] = sAt;
                                sAt += sc[d] + 1;
                                rc[d] = ((d + me) % 7) * 100L;
                                rd[d] = rAt;
                                rAt += rc[d] + 2;
                            }
                            MemorySegment send = buffer(arena, local, Math.max(1, sAt * ts));
                            for (int d = 0; d < n; d++) fill(send, sd[d] * ts, sc[d] * ts, me * n + d, k);
                            MemorySegment recv = buffer(arena, local, Math.max(1, rAt * ts));
                            if (async) c.allToAllVAsync(send, sc, sd, recv, rc, rd, t).await();
                            else c.allToAllV(send, sc, sd, recv, rc, rd, t);
                            for (int s = 0; s < n; s++) check(recv, rd[s] * ts, rc[s] * ts, s * n + me, k, what);
                        }
                    }
                    if (k % 10 == 9) {
                        if (async) c.barrierAsync().await();
                        else c.barrier();
                    }
                }
            }
        }
    }

    /**
     * A buffer of {@code bytes}: half the time a slice of a heap {@code long[]} (what the array overloads and
     * {@code MemorySegment.ofArray} give), otherwise off-heap memory of {@code arena}.
     */
    static MemorySegment buffer(Arena arena, Random local, long bytes) {
        if (local.nextBoolean()) return MemorySegment.ofArray(new long[(int) ((bytes + 7) / 8)]).asSlice(0, bytes);
        return arena.allocate(bytes);
    }
}
