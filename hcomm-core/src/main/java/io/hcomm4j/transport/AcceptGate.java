package io.hcomm4j.transport;

import java.io.IOException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;

/**
 * What one data listener lets in before a peer has proven the job secret (issue 18, "limits that hold"): at most
 * {@link #PENDING} connections in their handshake at once, each with its deadline, so a flood of idle or garbage
 * connections cannot take the descriptors and threads a job needs. The acceptor waits for a free place (the kernel's
 * backlog holds the rest) instead of refusing anyone, so a peer's connection is late under a flood, never refused.
 * Accept errors (out of descriptors: EMFILE, ENFILE) back off from 1 ms to 100 ms instead of spinning, and refusals and
 * accept errors are each logged at most once per {@link #LOG_EVERY_NANOS}, saying how many were not.
 */
final class AcceptGate {
    /** Connections of one listener in their handshake at once. */
    static final int PENDING = 256;
    static final long LOG_EVERY_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final Semaphore places = new Semaphore(PENDING);
    private final Logger log;
    private final int rank;
    private long backoffMs = 1;
    private final Limited refusals = new Limited();
    private final Limited failures = new Limited();

    AcceptGate(Logger log, int rank) {
        this.log = log;
        this.rank = rank;
    }

    /** Waits up to 100 ms for a place for the next connection; true if it has one (then {@link #leave} once). */
    boolean enter() throws InterruptedException {
        return places.tryAcquire(100, TimeUnit.MILLISECONDS);
    }

    /** The place taken by {@link #enter} is not used (the accept failed, or the listener closed). */
    void leave() {
        places.release();
    }

    /** The accepted connection's handshake starts, in the place {@link #enter} took; {@link #handshakeEnded} frees it. */
    void handshakeStarts() {
        handshakes.incrementAndGet();
    }

    /** A connection's handshake ended, whatever its outcome: its place is free. */
    void handshakeEnded() {
        handshakes.decrementAndGet();
        places.release();
    }

    /** Connections in their handshake now (at most {@link #PENDING}). */
    int pending() {
        return handshakes.get();
    }

    private final java.util.concurrent.atomic.AtomicInteger handshakes = new java.util.concurrent.atomic.AtomicInteger();

    /** An accept worked: the next error starts the backoff anew. */
    void accepted() {
        backoffMs = 1;
    }

    /** An accept failed: logged (limited) and waited for, 1 ms doubling to 100 ms. */
    void failed(IOException e) throws InterruptedException {
        long skipped = failures.logNow();
        if (skipped >= 0) {
            log.warn("rank {}: accept failed: {}{}", rank, e.toString(), skipped > 0 ? " (" + skipped + " more since the last report)" : "");
        }
        Thread.sleep(backoffMs);
        backoffMs = Math.min(100, backoffMs * 2);
    }

    /** A connection was refused (bad secret, a stranger's hello): logged, limited. */
    void refused(Object from, String why) {
        long skipped = refusals.logNow();
        if (skipped >= 0) {
            log.warn("rank {}: refused a data connection from {}: {}{}", rank, from, why,
                    skipped > 0 ? " (" + skipped + " more refused since the last report)" : "");
        }
    }

    /** Refusals so far. */
    long refusals() {
        return refusals.events.get();
    }

    /** Refusals logged so far. */
    long refusalsLogged() {
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
