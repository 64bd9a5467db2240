package io.hcomm4j.security;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;

/**
 * What one listener (a rank's data listener, the TCP store server) lets in before a connection has proven the job
 * secret (issue 18, "limits that hold"): at most {@link Limits#pending} connections in their handshake at once, at most
 * {@link Limits#perSource} of them from one source address, each handshake with its {@link Limits#deadline}; so a flood
 * of idle or garbage connections cannot take the descriptors and threads a job needs, and one flooding address cannot
 * take the places of the others.
 *
 * <p>Past the listener's cap the acceptor waits for a free place (the kernel's backlog holds the rest), so a peer is
 * late under a flood, never refused for it. Past an address's cap the connection is closed before the handshake starts
 * (waiting there would stall every other address behind it): the client sees the end of the stream before the server's
 * first handshake bytes ({@link Auth.RefusedException}), which both HComm4J clients take as "try again" (with backoff).
 * Accept errors (out of descriptors: EMFILE, ENFILE) back off from 1 ms to 100 ms instead of spinning; refusals and
 * accept errors are each logged at most once per {@link #LOG_EVERY_NANOS}, saying how many were not.
 *
 * <p>Use: {@link #next} takes each connection from the listener through the gate; {@link Pass#close} when its handshake
 * ended, whatever its outcome.
 */
public final class AcceptGate {
    /** Refusals and accept errors are each logged at most once per this (10 s). */
    public static final long LOG_EVERY_NANOS = TimeUnit.SECONDS.toNanos(10);

    /**
     * A listener's limits before the secret is proven.
     *
     * @param pending   connections in their handshake at once ({@code HCOMM_ACCEPT_PENDING}, default 256)
     * @param perSource of those, from one source address ({@code HCOMM_ACCEPT_PENDING_PER_SOURCE}, default 64)
     * @param deadline  each handshake step's deadline ({@code HCOMM_HANDSHAKE_TIMEOUT}, default 10 s)
     */
    public record Limits(int pending, int perSource, Duration deadline) {
        /** The defaults: 256 pending, 64 per source address, 10 s. */
        public static final Limits DEFAULT = new Limits(256, 64, Duration.ofSeconds(10));

        /** The limits {@code c} sets. */
        public static Limits of(io.hcomm4j.CommConfig c) {
            return new Limits(c.acceptPending(), c.acceptPendingPerSource(), c.handshakeTimeout());
        }

        /** Checks the values, naming the settings. */
        public Limits {
            if (pending < 1 || pending > 65_536) {
                throw new IllegalArgumentException("acceptPending (HCOMM_ACCEPT_PENDING) must be in [1, 65536], was " + pending);
            }
            if (perSource < 1 || perSource > pending) {
                throw new IllegalArgumentException("acceptPendingPerSource (HCOMM_ACCEPT_PENDING_PER_SOURCE) must be in [1, "
                        + "acceptPending (" + pending + ")], was " + perSource);
            }
            if (deadline == null || deadline.compareTo(Duration.ofMillis(100)) < 0 || deadline.compareTo(Duration.ofMinutes(10)) > 0) {
                throw new IllegalArgumentException("handshakeTimeout (HCOMM_HANDSHAKE_TIMEOUT) must be in [100 ms, 10 min], was " + deadline);
            }
        }
    }

    private final Limits limits;
    private final Semaphore places;
    private final Logger log;
    /** Who logs, e.g. {@code rank 3} or {@code store on host:9000}; and what it accepts, e.g. {@code data connection}. */
    private final String who;
    private final String what;
    /** Handshakes pending per source address; an address leaves the map at zero, so it holds at most {@code pending}. */
    private final Map<Object, Integer> bySource = new HashMap<>();
    private final AtomicInteger handshakes = new AtomicInteger();
    private long backoffMs = 1;
    private final Limited refusals = new Limited();
    private final Limited failures = new Limited();

    /** A gate of {@code limits} whose log lines start with {@code who} and call what it accepts {@code what}. */
    public AcceptGate(Limits limits, Logger log, String who, String what) {
        this.limits = limits;
        this.places = new Semaphore(limits.pending());
        this.log = log;
        this.who = who;
        this.what = what;
    }

    /** This gate's limits. */
    public Limits limits() {
        return limits;
    }

    /** A connection let in, with the pass its handshake holds. */
    public record Admitted(SocketChannel channel, Pass pass) {
    }

    /**
     * Takes the next connection from {@code listener} through the gate: waits for a place (looking every 100 ms whether
     * {@code closing}), accepts, backs off on accept errors, and closes at once a connection whose address has its
     * handshakes pending already (an HComm4J client tries again: {@link Auth.RefusedException}). Null once the listener
     * is closed or {@code closing} is true.
     */
    public Admitted next(ServerSocketChannel listener, BooleanSupplier closing) throws InterruptedException {
        while (!closing.getAsBoolean()) {
            if (!places.tryAcquire(100, TimeUnit.MILLISECONDS)) continue; // every place taken: look again
            SocketChannel ch;
            try {
                ch = listener.accept();
                backoffMs = 1;
            } catch (ClosedChannelException e) {
                places.release();
                return null;
            } catch (IOException e) {
                places.release();
                if (closing.getAsBoolean()) return null;
                failed(e); // typically out of file descriptors: backs off instead of spinning
                continue;
            }
            Pass pass = admit(ch);
            if (pass != null) return new Admitted(ch, pass);
            try {
                ch.close();
            } catch (IOException ignored) {
                // refused anyway
            }
        }
        return null;
    }

    /**
     * The connection {@code ch} was accepted in a place of the gate: its pass for the handshake, or null if its source
     * address has {@link Limits#perSource} handshakes pending already (then the place is free again and the refusal
     * counted and logged; the caller closes {@code ch}).
     */
    private Pass admit(SocketChannel ch) {
        Object source = sourceOf(ch);
        synchronized (bySource) {
            int n = bySource.getOrDefault(source, 0);
            if (n < limits.perSource()) {
                bySource.put(source, n + 1);
                handshakes.incrementAndGet();
                return new Pass(source);
            }
        }
        places.release();
        refused(source, "its address has " + limits.perSource() + " handshakes pending (HCOMM_ACCEPT_PENDING_PER_SOURCE)");
        return null;
    }

    /** One connection's place in its handshake; {@link #close} (idempotent) frees it. */
    public final class Pass implements AutoCloseable {
        private final Object source;
        private boolean closed;

        private Pass(Object source) {
            this.source = source;
        }

        /** The handshake ended, whatever its outcome: the place and the address's count are free. */
        @Override
        public void close() {
            synchronized (this) {
                if (closed) return;
                closed = true;
            }
            synchronized (bySource) {
                int n = bySource.getOrDefault(source, 1) - 1;
                if (n <= 0) bySource.remove(source);
                else bySource.put(source, n);
            }
            handshakes.decrementAndGet();
            places.release();
        }
    }

    private static Object sourceOf(SocketChannel ch) {
        try {
            if (ch.getRemoteAddress() instanceof InetSocketAddress a && a.getAddress() != null) return a.getAddress();
        } catch (IOException ignored) {
            // reset already: counted under one key with every other such connection
        }
        return "unknown address";
    }

    /** Connections in their handshake now (at most {@link Limits#pending}). */
    public int pending() {
        return handshakes.get();
    }

    /** Connections in their handshake now from {@code address}. */
    public int pending(InetAddress address) {
        synchronized (bySource) {
            return bySource.getOrDefault(address, 0);
        }
    }

    /** An accept failed: logged (limited) and waited for, 1 ms doubling to 100 ms (anew after an accept that worked). */
    private void failed(IOException e) throws InterruptedException {
        long skipped = failures.logNow();
        if (skipped >= 0) {
            log.warn("{}: accept failed: {}{}", who, e.toString(), skipped > 0 ? " (" + skipped + " more since the last report)" : "");
        }
        Thread.sleep(backoffMs);
        backoffMs = Math.min(100, backoffMs * 2);
    }

    /** A connection was refused (bad secret, a stranger's hello, its address over its cap): logged, limited. */
    public void refused(Object from, String why) {
        long skipped = refusals.logNow();
        if (skipped >= 0) {
            log.warn("{}: refused a {} from {}: {}{}", who, what, from, why,
                    skipped > 0 ? " (" + skipped + " more refused since the last report)" : "");
        }
    }

    /** Refusals so far. */
    public long refusals() {
        return refusals.events.get();
    }

    /** Refusals logged so far. */
    public long refusalsLogged() {
        return refusals.logged.get();
    }

    /** One kind of event logged at most once per {@link #LOG_EVERY_NANOS}. */
    private static final class Limited {
        final AtomicLong events = new AtomicLong();
        final AtomicLong logged = new AtomicLong();
        private long lastLog = System.nanoTime() - LOG_EVERY_NANOS;
        private long lastCount;

        /** Counts an event: the number not logged since the last report if this one is to be logged, else -1. */
        synchronized long logNow() {
            long n = events.incrementAndGet();
            long now = System.nanoTime();
            if (now - lastLog < LOG_EVERY_NANOS) return -1;
            long skipped = n - 1 - lastCount;
            lastLog = now;
            lastCount = n;
            logged.incrementAndGet();
            return skipped;
        }
    }
}
