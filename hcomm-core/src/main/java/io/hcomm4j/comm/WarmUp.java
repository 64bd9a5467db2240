package io.hcomm4j.comm;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.ReduceOp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Communicator#warmUp}: rounds of every collective, interleaved over sizes that take every path (one step,
 * sliced, staged, chunked) and over the three kinds of memory (registered, the caller's off-heap, heap arrays), until
 * no rank's JIT has compiled anything for a few rounds, or the budget is spent. After each round the ranks all-gather
 * what each saw, so they all decide alike and make the same calls.
 *
 * <p>Why: a fresh JVM runs the collectives interpreted until C2 has compiled them, and the compiler threads take the
 * cores the ranks run on, so a job's first thousands of calls are 100-1000x slower than steady state. Interleaving the
 * paths gives C2 one profile that covers them all, so a later change of size does not deoptimize shared code (which
 * stalls every rank while it is compiled again). The results are checked, so a warm-up also tests the job's links.
 */
final class WarmUp {
    private static final Logger LOG = LoggerFactory.getLogger(WarmUp.class);
    /** Float32 elements per size: 256 B and 4 KiB (one step), 32 KiB and 256 KiB (sliced), 4 MiB (chunked when unregistered). */
    private static final long[] COUNTS = {64, 1024, 8 * 1024, 64 * 1024, 1024 * 1024};
    /** Calls per size in a round: the small paths need many invocations before C2 compiles them. */
    private static final int[] CALLS = {48, 48, 8, 2, 1};
    /** Rounds after which the warm-up may stop: about C2's invocation threshold for the per-call code. */
    private static final int MIN_ROUNDS = 20;
    /** Rounds in a row in which no rank's JIT compiled anything before the warm-up may stop. */
    private static final int QUIET_ROUNDS = 3;
    /** Longs each rank reports after a round: time since the start, JIT milliseconds in the round, wrong elements, budget. */
    private static final int REPORT = 4;

    private final Communicator comm;
    private final int n;
    private final int rank;
    private final MemorySegment[] native_;
    private final MemorySegment[] nativeOut;
    private final RegisteredBuffer[] registered;
    private final RegisteredBuffer[] registeredOut;
    private final float[][] heap;
    private final float[][] heapOut;
    /** Per size, {@code rank + 1} in every element: copied into a send buffer before each round of collectives. */
    private final MemorySegment[] template;
    private long wrong;

    private WarmUp(Communicator comm, Arena arena) {
        this.comm = comm;
        this.n = comm.size();
        this.rank = comm.rank();
        int sizes = COUNTS.length;
        native_ = new MemorySegment[sizes];
        nativeOut = new MemorySegment[sizes];
        registered = new RegisteredBuffer[sizes];
        registeredOut = new RegisteredBuffer[sizes];
        heap = new float[sizes][];
        heapOut = new float[sizes][];
        template = new MemorySegment[sizes];
        for (int s = 0; s < sizes; s++) {
            long bytes = Math.max(COUNTS[s], n) * Float.BYTES; // the blocked ops move whole parts of count / n, at least 1
            native_[s] = arena.allocate(bytes, 64);
            nativeOut[s] = arena.allocate(bytes, 64);
            try {
                registered[s] = comm.memory().allocate(bytes);
                registeredOut[s] = comm.memory().allocate(bytes);
            } catch (RuntimeException e) { // a full pool (HCOMM_MEM_POOL_MAX): give back what was taken
                closeRegistered();
                throw e;
            }
            heap[s] = new float[(int) (bytes / Float.BYTES)];
            heapOut[s] = new float[(int) (bytes / Float.BYTES)];
            template[s] = arena.allocate(COUNTS[s] * Float.BYTES, 64);
            for (long i = 0; i < COUNTS[s]; i++) template[s].setAtIndex(ValueLayout.JAVA_FLOAT, i, rank + 1);
        }
    }

    /** {@code budget}, checked ({@code >= 0}) and capped at an hour (no warm-up needs more; nanoseconds overflow past 292 years). */
    static java.time.Duration checkedBudget(int rank, java.time.Duration budget) {
        java.util.Objects.requireNonNull(budget, "budget");
        if (budget.isNegative()) {
            throw new IllegalArgumentException("rank " + rank + ": warmUp budget must be >= 0, was " + io.hcomm4j.Units.duration(budget));
        }
        return budget.compareTo(java.time.Duration.ofHours(1)) > 0 ? java.time.Duration.ofHours(1) : budget;
    }

    /**
     * Warms {@code comm}'s ranks up for at most about {@code budget} (one round at least); every rank must call it.
     * Returns the rounds run. On {@code comm} itself, not a dup: its own first call sets up its zero-copy state
     * (control file, staging, peers' mappings), which took 15-20 ms.
     *
     * @throws IllegalStateException if a result came out wrong (the links or the library are broken)
     */
    static int run(Communicator comm, Duration budget) {
        long start = System.nanoTime();
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        boolean jitTimed = jit != null && jit.isCompilationTimeMonitoringSupported();
        try (Arena arena = Arena.ofShared()) {
            WarmUp w = new WarmUp(comm, arena);
            try {
                // every rank gets every rank's report of each round, so all decide alike without a root
                long[] mine = new long[REPORT];
                long[] all = new long[REPORT * w.n];
                int quiet = 0;
                int rounds = 0;
                long compiled = jitTimed ? jit.getTotalCompilationTime() : 0;
                while (true) {
                    w.round();
                    rounds++;
                    long nowCompiled = jitTimed ? jit.getTotalCompilationTime() : compiled;
                    mine[0] = System.nanoTime() - start;
                    mine[1] = jitTimed ? nowCompiled - compiled : 1;
                    mine[2] = w.wrong;
                    mine[3] = budget.toNanos();
                    compiled = nowCompiled;
                    comm.allGather(mine, all);
                    long elapsed = 0;
                    long compiling = 0;
                    long wrong = 0;
                    long shortest = Long.MAX_VALUE; // ranks that were given different budgets stop at the shortest
                    for (int r = 0; r < w.n; r++) {
                        elapsed = Math.max(elapsed, all[r * REPORT]);
                        compiling += all[r * REPORT + 1];
                        wrong += all[r * REPORT + 2];
                        shortest = Math.min(shortest, all[r * REPORT + 3]);
                    }
                    if (wrong != 0) {
                        throw new IllegalStateException("rank " + w.rank + ": warm-up computed " + wrong + " wrong elements across the ranks");
                    }
                    quiet = compiling == 0 ? quiet + 1 : 0;
                    LOG.trace("rank {}: warm-up round {} at {} ms, JIT {} ms", w.rank, rounds, mine[0] / 1_000_000, mine[1]);
                    if (rounds >= MIN_ROUNDS && quiet >= QUIET_ROUNDS || elapsed >= shortest) break;
                }
                LOG.debug("rank {}: warm-up ran {} rounds in {} ms{}", w.rank, rounds, (System.nanoTime() - start) / 1_000_000,
                        quiet >= QUIET_ROUNDS ? ", until the JIT was quiet" : ", the whole budget");
                return rounds;
            } finally {
                w.closeRegistered();
            }
        }
    }

    private void closeRegistered() {
        for (RegisteredBuffer b : registered) if (b != null) b.close();
        for (RegisteredBuffer b : registeredOut) if (b != null) b.close();
    }

    /** One round: every size, every memory kind, every collective. */
    private void round() {
        for (int s = 0; s < COUNTS.length; s++) {
            for (int i = 0; i < CALLS[s]; i++) {
                collectives(native_[s], nativeOut[s], s);
                collectives(registered[s].segment(), registeredOut[s].segment(), s);
                collectives(MemorySegment.ofArray(heap[s]), MemorySegment.ofArray(heapOut[s]), s);
            }
        }
        comm.barrier();
    }

    /**
     * Every collective on size {@code s}, and a barrier: {@code count} elements, or for the blocked ones parts of
     * {@code count / n} (at least one) per rank; checks the all-reduce and the all-gather.
     */
    private void collectives(MemorySegment in, MemorySegment out, int s) {
        long count = COUNTS[s];
        long part = Math.max(1, count / n);
        int root = s % n;
        MemorySegment.copy(template[s], 0, in, 0, count * Float.BYTES);
        comm.allReduce(in, out, count, DataType.FLOAT32, ReduceOp.SUM);
        wrong += check(out, 0, count, n * (n + 1) / 2f);
        comm.allGather(in.asSlice(0, part * Float.BYTES), out, part, DataType.FLOAT32);
        for (int r = 0; r < n; r++) wrong += check(out, r * part, part, r + 1);
        comm.reduceScatter(in, out, part, DataType.FLOAT32, ReduceOp.SUM);
        comm.broadcast(in, count, DataType.FLOAT32, root);
        comm.reduce(in, out, count, DataType.FLOAT32, ReduceOp.SUM, root);
        comm.allToAll(in, out, part, DataType.FLOAT32);
        comm.gather(in.asSlice(0, part * Float.BYTES), out, part, DataType.FLOAT32, root);
        comm.scatter(in, out.asSlice(0, part * Float.BYTES), part, DataType.FLOAT32, root);
        // nine collectives, an odd number: each op above meets both parities of the sequence number on alternate calls
        // (ops alternate shared state by it). With eight, every all-reduce had the same parity, the one-step path's
        // other slot was never used, and a program whose all-reduces came at the other parity deoptimized it at its
        // first call (then ran it in C1 code while C2 compiled it again: 1-5 ms stalls in its first few hundred calls)
        comm.barrier();
    }

    private static long check(MemorySegment seg, long from, long count, float expected) {
        long bad = 0;
        for (long i = from; i < from + count; i++) {
            if (seg.getAtIndex(ValueLayout.JAVA_FLOAT, i) != expected) bad++;
        }
        return bad;
    }
}
