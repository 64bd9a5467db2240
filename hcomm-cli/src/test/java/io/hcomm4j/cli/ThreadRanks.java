package io.hcomm4j.cli;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.hcomm4j.CommConfig;
import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Status;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.function.UnaryOperator;

/**
 * The ranks of a job as threads of this JVM, each with a session of its own: rank 0 serves the store on a
 * free loopback port ({@code tcp://127.0.0.1:port}) and the ranks talk over the core's TCP transport.
 */
final class ThreadRanks {
    /** Tag of the fence every rank exchanges with every other after its body. */
    static final int TAG_FENCE = 999;

    /** What one rank runs on the world communicator of its session. */
    @FunctionalInterface
    interface Body<T> {
        T run(Communicator comm) throws Exception;
    }

    private ThreadRanks() {
    }

    /** A port free on 127.0.0.1 a moment ago. */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByAddress(new byte[] {127, 0, 0, 1}))) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Runs {@code bodies.apply(r)} as rank {@code r} of {@code n}, then a fence: every rank sends every other
     * rank one message and receives one from each with {@link Communicator#ANY_TAG}. Messages between two
     * ranks do not overtake each other, so a message the body sent but nobody received would be matched
     * instead of the fence, and the fence check fails. Returns the bodies' results by rank; rethrows the
     * first failure.
     */
    static <T> List<T> run(int n, IntFunction<Body<T>> bodies) throws Exception {
        return run(n, UnaryOperator.identity(), bodies);
    }

    /** {@link #run(int, IntFunction)} with each rank's configuration changed by {@code configure} (e.g. its transport). */
    static <T> List<T> run(int n, UnaryOperator<CommConfig.Builder> configure, IntFunction<Body<T>> bodies) throws Exception {
        int port = freePort();
        ExecutorService pool = Executors.newFixedThreadPool(n, Thread.ofPlatform().name("test-rank-", 0).factory());
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                Body<T> body = bodies.apply(r);
                futures.add(pool.submit(() -> {
                    CommConfig config = configure.apply(CommConfig.builder().initMethod("tcp://127.0.0.1:" + port).rank(rank)
                            .worldSize(n).secret("thread-ranks-secret-1").timeout(Duration.ofSeconds(20)).initTimeout(Duration.ofSeconds(20))).build();
                    try (Hcomm hcomm = Hcomm.init(config)) {
                        Communicator comm = hcomm.world();
                        if (comm.rank() != rank || comm.size() != n) {
                            throw new AssertionError("session of rank " + rank + " of " + n + " is rank " + comm.rank()
                                    + " of " + comm.size());
                        }
                        T result = body.run(comm);
                        fence(comm);
                        return result;
                    }
                }));
            }
            List<T> results = new ArrayList<>();
            for (Future<T> f : futures) {
                try {
                    results.add(f.get(45, TimeUnit.SECONDS));
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) throw ex;
                    if (e.getCause() instanceof Error err) throw err;
                    throw e;
                }
            }
            return results;
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(20, TimeUnit.SECONDS);
        }
    }

    private static void fence(Communicator comm) {
        int rank = comm.rank();
        int size = comm.size();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mine = arena.allocate(JAVA_LONG);
            mine.set(JAVA_LONG, 0, 1000L + rank);
            List<MemorySegment> bufs = new ArrayList<>();
            List<CommFuture<Status>> recvs = new ArrayList<>();
            List<CommFuture<Void>> sends = new ArrayList<>();
            for (int p = 0; p < size; p++) {
                if (p == rank) continue;
                MemorySegment buf = arena.allocate(JAVA_LONG);
                bufs.add(buf);
                recvs.add(comm.recvAsync(buf, p, Communicator.ANY_TAG));
            }
            for (int p = 0; p < size; p++) {
                if (p != rank) sends.add(comm.sendAsync(mine, p, TAG_FENCE));
            }
            int i = 0;
            for (int p = 0; p < size; p++) {
                if (p == rank) continue;
                Status s = recvs.get(i).await();
                long got = bufs.get(i).get(JAVA_LONG, 0);
                if (s.tag() != TAG_FENCE || s.source() != p || s.bytes() != 8 || got != 1000L + p) {
                    throw new AssertionError("rank " + rank + ": expected the fence from rank " + p + ", got " + s
                            + " holding " + got + ": a message of the body was left unreceived");
                }
                i++;
            }
            for (CommFuture<Void> s : sends) s.await();
        }
    }
}
