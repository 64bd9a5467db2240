package io.hcomm4j.ddp;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import java.io.IOException;
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

/** Runs the ranks of a test job as threads of this JVM, each its own session over real loopback and shared memory. */
final class ThreadRanks {
    /** A rank's part of a test. */
    interface Body {
        void run(Communicator comm) throws Exception;
    }

    private ThreadRanks() {
    }

    static void run(int n, Body body) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                fs.add(pool.submit(() -> {
                    CommConfig config = CommConfig.builder().initMethod("tcp://127.0.0.1:" + port).rank(rank).worldSize(n)
                            .secret("ddp-test-job-secret").timeout(Duration.ofSeconds(60)).initTimeout(Duration.ofSeconds(60)).build();
                    try (Hcomm h = Hcomm.init(config)) {
                        body.run(h.world());
                    }
                    return null;
                }));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
            for (Future<?> f : fs) {
                try {
                    f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) throw ex;
                    throw e;
                }
            }
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(30, TimeUnit.SECONDS);
        }
    }
}
