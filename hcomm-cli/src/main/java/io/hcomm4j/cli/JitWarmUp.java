package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Locale;

/**
 * The JIT warm-up of {@code hcomm perf p2p} and of the one-sided ops ({@code --jit-warmup}): rounds of
 * {@link #ROUND} untimed ops for at least {@link #MIN}, and on while any member's JIT compiled something during the last
 * round (at most {@link #MAX}). A rank bound to one CPU shares it with the JIT compiler threads and runs profiled code
 * meanwhile: after 1000 warmup round trips the first size of a p2p sweep measured 0.28-0.40 µs at 8 B and the next sizes
 * 0.19-0.21.
 *
 * <p>The members are ranks {@code 0 .. members-1}; each runs its part of a chunk of {@link #CHUNK} ops (a passive
 * one-sided target's part is empty: it serves the ops while it waits for rank 0's word). After each chunk rank 0 tells
 * the others whether the time limit has passed (a round may end after any chunk then: on a loaded machine one round can
 * take seconds, and the limit must hold all the same); after each round every other member tells rank 0 whether it
 * compiled, and rank 0 decides for all whether another round follows.
 */
final class JitWarmUp {
    /** Ops of one round. */
    static final int ROUND = 20_000;
    /** Ops after which rank 0 may end a round at the time limit. */
    static final int CHUNK = 1_000;
    /** The least and most time. */
    static final Duration MIN = Duration.ofMillis(500);
    static final Duration MAX = Duration.ofSeconds(10);
    /** What rank 0 prints in place of the JIT warm-up's lines when there is none, so that the reader knows. */
    static final String NONE = "# JIT warm-up: none (--iters or -w given, or --jit-warmup off; --jit-warmup on runs it)";

    private JitWarmUp() {
    }

    /**
     * Runs the warm-up on this member ({@code comm.rank() < members}; every member calls it): {@code chunk} runs this
     * rank's part of {@link #CHUNK} ops. Returns, on rank 0, the line to print ({@code # JIT warm-up: <ops> <what> in
     * <s> s (<why it ended>)}), null elsewhere.
     */
    static String run(Communicator comm, int members, Runnable chunk, String what) {
        int rank = comm.rank();
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean canTell = jit != null && jit.isCompilationTimeMonitoringSupported();
        long ops = 0;
        long start = System.nanoTime();
        long compiled = canTell ? jit.getTotalCompilationTime() : 0;
        boolean settled = false;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment flag = arena.allocate(4);
            do {
                boolean cut = false;
                for (int done = 0; done < ROUND && !cut; done += CHUNK) {
                    chunk.run();
                    ops += CHUNK;
                    if (rank == 0) {
                        cut = System.nanoTime() - start >= MAX.toNanos();
                        set(flag, cut);
                        for (int r = 1; r < members; r++) comm.send(flag, r, P2pBench.TAG_WARMUP);
                    } else {
                        comm.recv(flag, 0, P2pBench.TAG_WARMUP); // 1: the time limit passed, the round ends here
                        cut = flag.get(ValueLayout.JAVA_INT, 0) == 1;
                    }
                }
                long now = canTell ? jit.getTotalCompilationTime() : compiled;
                boolean compiling = !canTell || now != compiled;
                compiled = now;
                if (rank != 0) {
                    set(flag, compiling);
                    comm.send(flag, 0, P2pBench.TAG_WARMUP);
                    comm.recv(flag, 0, P2pBench.TAG_WARMUP); // 1: another round
                } else {
                    boolean othersCompiled = false;
                    for (int r = 1; r < members; r++) {
                        comm.recv(flag, r, P2pBench.TAG_WARMUP); // 1: rank r compiled during the round
                        othersCompiled |= flag.get(ValueLayout.JAVA_INT, 0) == 1;
                    }
                    settled = !cut && !compiling && !othersCompiled;
                    long elapsed = System.nanoTime() - start;
                    set(flag, elapsed < MIN.toNanos() || !settled && elapsed < MAX.toNanos());
                    for (int r = 1; r < members; r++) comm.send(flag, r, P2pBench.TAG_WARMUP);
                }
            } while (flag.get(ValueLayout.JAVA_INT, 0) == 1);
        }
        if (rank != 0) return null;
        return String.format(Locale.ROOT, "# JIT warm-up: %d %s in %.1f s (%s)", ops, what, (System.nanoTime() - start) / 1e9,
                settled ? "no compilation in the last round on " + (members == 2 ? "either rank" : "any rank") : "time limit");
    }

    private static void set(MemorySegment flag, boolean value) {
        flag.set(ValueLayout.JAVA_INT, 0, value ? 1 : 0);
    }
}
