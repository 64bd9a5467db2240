package io.hcomm4j.comm;

import io.hcomm4j.bootstrap.Store;
import io.hcomm4j.monitor.OpTrace;
import io.hcomm4j.monitor.TraceDump;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When a rank writes its flight record ({@link TraceDump}): on {@code comm.dumpTrace(path)}; on an op's timeout and on
 * an abort, to {@code HCOMM_TRACE_DIR}, and then it asks every rank to do the same; and when asked, by a rank or by
 * {@code hcomm status --dump}, through the store.
 *
 * <p>The request is one store key ({@link TraceDump.Request}: a generation, a folder, a reason). Every rank looks at it every {@value #POLL_MILLIS} ms from the watchdog's
 * tick, one read at a time on a virtual thread (so a slow store never delays heartbeats), and writes its dump once per
 * new generation. A rank's own timeouts and aborts dump at most once per {@value #POLL_MILLIS} ms, however many ops
 * fail at once.
 */
final class TraceDumps {
    private static final Logger LOG = LoggerFactory.getLogger(TraceDumps.class);
    static final long POLL_MILLIS = 2000;

    private final Session session;
    private final Store store;
    private final String namespace;
    private final int rank;
    private final int worldSize;
    private final Path dir;
    private final boolean enabled;
    private final AtomicBoolean polling = new AtomicBoolean();
    private long nextPoll;
    /** The generation of the last request this rank answered (or made). */
    private volatile long answered;
    /** The last status refresh request this rank answered ({@code hcomm status --watch}). */
    private long refreshed;
    private volatile long lastOwnDumpNanos = Long.MIN_VALUE / 2;
    private final long pid = ProcessHandle.current().pid();
    private volatile String host;

    TraceDumps(Session session, Store store, String namespace, int rank, int worldSize, io.hcomm4j.MonitorConfig config) {
        this.session = session;
        this.store = store;
        this.namespace = namespace;
        this.rank = rank;
        this.worldSize = worldSize;
        this.dir = config.traceDir();
        this.enabled = config.traceBuffer() > 0;
    }

    /** This rank's flight record now: every open communicator of its session. */
    TraceDump snapshot(String reason) {
        List<TraceDump.Comm> comms = new ArrayList<>();
        for (CommunicatorImpl c : session.communicators()) {
            OpTrace t = c.trace();
            List<Integer> world = new ArrayList<>();
            for (int w : c.worldRanks()) world.add(w);
            comms.add(new TraceDump.Comm(c.id(), c.rank(), c.size(), world, c.collectivesCalled(), t.recorded(), t.capacity(), t.entries()));
        }
        comms.sort((a, b) -> Long.compareUnsigned(a.id(), b.id()));
        String h = host;
        if (h == null) host = h = hostName();
        return new TraceDump(rank, worldSize, pid, h, System.currentTimeMillis(), reason, comms);
    }

    /** Writes this rank's flight record to {@code file}. */
    void write(Path file, String reason) throws IOException {
        snapshot(reason).write(file);
    }

    /** Writes it to {@code folder} under the rank's file name; logs instead of throwing. */
    private void writeQuietly(Path folder, String reason) {
        Path file = folder.resolve(TraceDump.fileName(rank));
        try {
            write(file, reason);
            LOG.info("rank {}: wrote its flight record to {} ({})", rank, file, reason);
        } catch (IOException | RuntimeException e) {
            LOG.warn("rank {}: could not write its flight record to {}: {}", rank, file, e.toString());
        }
    }

    /** An op of this rank timed out: dump here, and ask every rank to dump (at most once per poll period). */
    void timedOut(Throwable timeout) {
        ownIncident("timeout: " + firstLine(timeout.getMessage()));
    }

    /** A communicator of this rank was aborted (here or by a peer). */
    void aborted(String why) {
        ownIncident("abort: " + firstLine(why));
    }

    private void ownIncident(String reason) {
        if (!enabled || session.isClosed()) return;
        long now = System.nanoTime();
        if (now - lastOwnDumpNanos < POLL_MILLIS * 1_000_000L) return;
        lastOwnDumpNanos = now;
        // on a virtual thread: the failing op's thread returns its exception now, the store may be the slow part
        Thread.ofVirtual().name("hcomm-trace-dump-" + rank).start(() -> {
            writeQuietly(dir, reason);
            try {
                long generation = TraceDump.Request.make(store, namespace, "", "rank " + rank + " " + reason).generation();
                answered = Math.max(answered, generation);
            } catch (RuntimeException e) {
                LOG.debug("rank {}: could not ask the other ranks for their flight records: {}", rank, e.toString());
            }
        });
    }

    /**
     * The watchdog's tick: every {@value #POLL_MILLIS} ms, look for a new dump request, and for a request to publish this
     * rank's state ({@code hcomm status --watch}), which the {@link OpMonitor} then does.
     */
    void tick(long now) {
        if (now - nextPoll < 0) return;
        nextPoll = now + POLL_MILLIS * 1_000_000L;
        if (!polling.compareAndSet(false, true)) return;
        Thread.ofVirtual().name("hcomm-trace-poll-" + rank).start(() -> {
            try {
                byte[] refresh = store.tryGet(io.hcomm4j.monitor.JobStatus.refreshKey(namespace));
                if (refresh != null) {
                    long n = Long.parseLong(new String(refresh, java.nio.charset.StandardCharsets.UTF_8).trim());
                    if (n > refreshed) {
                        refreshed = n;
                        session.requestStatusPublish();
                    }
                }
                if (!enabled) return;
                TraceDump.Request r = TraceDump.Request.read(store, namespace);
                if (r == null || r.generation() <= answered) return;
                answered = r.generation();
                writeQuietly(r.folder().isEmpty() ? dir : Path.of(r.folder()), "requested: " + r.reason());
            } catch (RuntimeException e) {
                LOG.debug("rank {}: could not look for a flight-record request: {}", rank, e.toString());
            } finally {
                polling.set(false);
            }
        });
    }

    private static String firstLine(String s) {
        if (s == null) return "";
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown";
        }
    }
}
