package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.HcommException;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.ReduceOp;
import io.hcomm4j.Status;
import io.hcomm4j.transport.FaultHooks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A rank of the recovery jobs ({@code ReconnectTest}, {@code NetnsReconnectTest}); the arguments are its scenarios.
 * Every element and byte received is checked (a mismatch throws, so the rank exits non-zero). Lines it prints:
 * <ul>
 *   <li>{@code RUNNING}: in the middle of its loop;</li>
 *   <li>{@code ITER <i> at=<epoch ms>}: progress of the {@code loop} scenario (every 10 iterations);</li>
 *   <li>{@code OK <scenario> ...}: the scenario completed with the right results;</li>
 *   <li>{@code COUNTERS reconnects=R resent=F resentBytes=B duplicates=D}: this rank's recovery counters since init,
 *       after each scenario;</li>
 *   <li>{@code CLOSED threads=<hcomm threads alive> fds=<open fds after close minus before init>}.</li>
 * </ul>
 * Scenarios, one after the other in the order given ({@code p2p allreduce 7}): {@code p2p} (2 ranks: a 64 MiB message
 * cut off after 24 MiB by the receiver, once per way of breaking the connection; then 2000 tagged messages received with
 * ANY_TAG while rank 0 breaks the connection every 5 ms),
 * {@code allreduce <iterations>} (16 MiB float all-reduces; every second iteration, 1, 3, 5, ..., each rank breaks its
 * connection to the previous rank 3 MiB into it, in each way in turn), {@code loop <stop file> <floats>} (all-reduces
 * until rank 0 sees the stop file: the network-namespace tests take links down meanwhile).
 */
public final class ReconnectWorker {
    private static final String[] HOWS = {"reset", "close", "shutdown"};

    private ReconnectWorker() {
    }

    public static void main(String[] args) throws Exception {
        FaultWorker.warmUpJdk();
        java.util.Set<String> fdsAtStart = FaultWorker.fdTargets();
        long fdsBefore = fdsAtStart.size();
        try (Hcomm hcomm = Hcomm.init()) {
            System.out.println("READY");
            System.out.flush();
            // scenarios one after the other, e.g. "p2p allreduce 7", each followed by a COUNTERS line (counted since init)
            for (int i = 0; i < args.length; ) {
                String scenario = args[i];
                boolean failed = switch (scenario) {
                    case "p2p" -> {
                        i += 1;
                        yield p2p(hcomm);
                    }
                    case "allreduce" -> {
                        i += 2;
                        yield allReduce(hcomm, Integer.parseInt(args[i - 1]));
                    }
                    case "loop" -> {
                        boolean expectFailure = args.length > i + 3 && args[i + 3].equals("expect-failure");
                        int at = i;
                        i = args.length;
                        yield loop(hcomm, Path.of(args[at + 1]), Integer.parseInt(args[at + 2]), expectFailure);
                    }
                    default -> throw new IllegalArgumentException(scenario);
                };
                FaultHooks.disarm(hcomm);
                if (!failed) hcomm.world().barrier();
                System.out.println("COUNTERS " + FaultHooks.counters(hcomm));
                System.out.flush();
                if (failed) break;
            }
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (FaultWorker.hcommThreads() > 0 && System.nanoTime() < deadline) Thread.sleep(10);
        java.util.Set<String> after = FaultWorker.fdTargets();
        System.out.printf("CLOSED threads=%d fds=%d%n", FaultWorker.hcommThreads(), after.size() - fdsBefore);
        after.removeAll(fdsAtStart);
        if (!after.isEmpty()) System.out.println("FDS OPENED SINCE START: " + after);
        System.out.flush();
        System.exit(0);
    }

    static void fill(MemorySegment s, long seed) {
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, seed * 0x9E3779B97F4A7C15L + i);
        for (long i = s.byteSize() & ~7L; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (seed + i));
    }

    private static long sizeOf(int i) {
        return switch (i % 4) {
            case 0 -> 0;
            case 1 -> 1 + (i * 37L) % 4000;
            case 2 -> 60_000 + (i * 131L) % 10_000;
            default -> 100_000 + (i * 977L) % 100_000;
        };
    }

    private static boolean p2p(Hcomm h) throws Exception {
        Communicator comm = h.world();
        int rank = comm.rank();
        if (comm.size() != 2) throw new IllegalArgumentException("p2p needs 2 ranks");
        long size = 64L << 20;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(size);
            MemorySegment expect = arena.allocate(size);
            for (int round = 0; round < HOWS.length; round++) {
                if (rank == 0) {
                    fill(buf, round);
                    comm.send(buf, 1, 100 + round);
                } else {
                    buf.fill((byte) 0);
                    FaultHooks.dropAfter(h, 0, 24L << 20, HOWS[round]);
                    Status st = comm.recv(buf, 0, 100 + round);
                    fill(expect, round);
                    if (st.bytes() != size || buf.mismatch(expect) != -1) {
                        throw new AssertionError("64 MiB message " + round + ": " + st.bytes() + " bytes, first difference at " + buf.mismatch(expect));
                    }
                }
            }
            notInterrupted("the 64 MiB messages");
            System.out.println("MESSAGE OK 3 x 64 MiB cut off after 24 MiB (" + String.join(", ", HOWS) + ")");
            int count = 2000;
            if (rank == 0) {
                AtomicBoolean done = new AtomicBoolean();
                AtomicInteger drops = new AtomicInteger();
                Thread dropper = Thread.ofPlatform().name("dropper").start(() -> {
                    while (!done.get()) {
                        try {
                            Thread.sleep(5);
                        } catch (InterruptedException e) {
                            return;
                        }
                        if (FaultHooks.drop(h, 1, HOWS[ThreadLocalRandom.current().nextInt(HOWS.length)])) drops.incrementAndGet();
                    }
                });
                List<io.hcomm4j.CommFuture<Void>> inFlight = new ArrayList<>();
                List<MemorySegment> bufs = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    MemorySegment m = arena.allocate(Math.max(1, sizeOf(i))).asSlice(0, sizeOf(i));
                    fill(m, i);
                    inFlight.add(comm.sendAsync(m, 1, i));
                    bufs.add(m);
                    if (inFlight.size() >= 32) {
                        for (var f : inFlight) f.await();
                        inFlight.clear();
                    }
                }
                for (var f : inFlight) f.await();
                comm.recv(new byte[1], 1, 9999); // the receiver has them all
                notInterrupted("the stream");
                done.set(true);
                dropper.join();
                System.out.println("STREAM OK " + count + " messages, " + drops.get() + " drops");
            } else {
                MemorySegment m = arena.allocate(256 * 1024), e = arena.allocate(256 * 1024);
                for (int i = 0; i < count; i++) {
                    Status st = comm.recv(m, 0, Communicator.ANY_TAG);
                    long n = sizeOf(i);
                    if (st.tag() != i) throw new AssertionError("message " + i + " came with tag " + st.tag() + " (out of order, lost or twice)");
                    if (st.bytes() != n) throw new AssertionError("message " + i + ": " + st.bytes() + " bytes, expected " + n);
                    fill(e.asSlice(0, n), i);
                    if (m.asSlice(0, n).mismatch(e.asSlice(0, n)) != -1) throw new AssertionError("message " + i + " corrupted");
                }
                if (comm.iprobe(0, Communicator.ANY_TAG).isPresent()) throw new AssertionError("a message more than was sent");
                notInterrupted("the stream");
                comm.send(new byte[1], 0, 9999);
                System.out.println("STREAM OK " + count + " messages received once and in order");
            }
        }
        System.out.println("OK p2p");
        return false;
    }

    /** The library must never leave the calling thread's interrupt status set. */
    private static void notInterrupted(String after) {
        if (Thread.currentThread().isInterrupted()) throw new AssertionError("the main thread was interrupted (after " + after + ")");
    }

    /** Fills {@code data} with rank- and iteration-dependent integers (exact in float32 when summed over a few ranks). */
    private static void fillFloats(MemorySegment data, int count, int rank, int it) {
        for (int i = 0; i < count; i++) data.setAtIndex(ValueLayout.JAVA_FLOAT, i, (rank + 1) * (i % 1000) + it);
    }

    private static void checkSum(MemorySegment data, int count, int n, int it) {
        for (int i = 0; i < count; i++) {
            float want = (float) (i % 1000) * n * (n + 1) / 2 + (float) n * it;
            float got = data.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            if (got != want) throw new AssertionError("iteration " + it + ": element " + i + " is " + got + ", expected " + want);
        }
    }

    private static boolean allReduce(Hcomm h, int iterations) throws Exception {
        Communicator comm = h.world();
        int rank = comm.rank(), n = comm.size(), prev = (rank - 1 + n) % n;
        int count = 4 << 20;
        int drops = 0;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate((long) count * 4);
            for (int it = 0; it < iterations; it++) {
                fillFloats(data, count, rank, it);
                if (it % 2 == 1) {
                    FaultHooks.dropAfter(h, prev, 3L << 20, HOWS[(it / 2) % HOWS.length]);
                    drops++;
                }
                comm.allReduce(data, data, count, DataType.FLOAT32, ReduceOp.SUM);
                checkSum(data, count, n, it);
                notInterrupted("all-reduce " + it);
                if (it == 2) {
                    System.out.println("RUNNING");
                    System.out.flush();
                }
            }
        }
        System.out.println("OK allreduce " + iterations + " x 16 MiB, " + drops + " drops armed");
        return false;
    }

    /**
     * All-reduces of {@code count} floats until rank 0 sees {@code stopFile}. With {@code expectFailure} an
     * {@link HcommException} ends it with a {@code CAUGHT} line (returns true) instead of failing the rank.
     */
    private static boolean loop(Hcomm h, Path stopFile, int count, boolean expectFailure) throws Exception {
        Communicator comm = h.world();
        int rank = comm.rank(), n = comm.size();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate((long) count * 4);
            int[] stop = new int[1];
            for (int it = 0; ; it++) {
                fillFloats(data, count, rank, it);
                try {
                    comm.allReduce(data, data, count, DataType.FLOAT32, ReduceOp.SUM);
                    checkSum(data, count, n, it);
                    stop[0] = rank == 0 && Files.exists(stopFile) ? 1 : 0;
                    comm.allReduce(stop, ReduceOp.MAX);
                } catch (HcommException e) {
                    if (!expectFailure) throw e;
                    String ranks = e instanceof PeerFailedException p ? p.failedRanks().toString() : "-";
                    // one write, so that no log line of another thread lands in its middle
                    System.out.println(String.format("CAUGHT %s at=%d ranks=%s after %d all-reduces msg=%s", e.getClass().getSimpleName(),
                            System.currentTimeMillis(), ranks, it, String.valueOf(e.getMessage()).replace('\n', ' ')));
                    return true;
                }
                if (it == 5) System.out.println("RUNNING");
                if (it % 10 == 0) System.out.println("ITER " + it + " at=" + System.currentTimeMillis());
                System.out.flush();
                if (stop[0] == 1) {
                    System.out.println("OK loop " + (it + 1) + " all-reduces of " + count + " floats");
                    return false;
                }
            }
        }
    }
}
