package io.hcomm4j.transport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The progress engine of one transport: a selector over every connection, polled by whoever holds the
 * poll token. A thread waiting for an op takes the token and polls itself (leader/follower): it spins on
 * {@code selectNow} for {@code spinNanos}, then blocks in {@code select}. A background thread holds the
 * token only while no thread waits, so async ops progress without a waiter and a waiter never pays the
 * wake-up of a sleeping thread for its own message. Spinning is bounded, so ranks that outnumber the
 * cores do not burn them. A waiter spins flat out for 20–35 µs (twice its recent waits; a reply on an idle
 * machine comes within that), then yields the core on every empty poll: when another runnable thread shares
 * the core (a peer rank, a JIT thread, another job) it runs at once instead of after the spinner's time
 * slice. Measured with one core taken by another process, an 8-byte ping-pong took 110 µs (≈ the spin
 * window) with a pure busy spin and 44 µs with this one; on an idle machine 5.6–7 µs (docs/performance.md).
 */
final class Progress implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Progress.class);
    private static final long MAX_BLOCK_MS = 100;
    private static final long BACKGROUND_QUIET_NANOS = 1_000_000;
    /** The background thread's sleep while one wait lasts: the wait's end wakes it (see {@link #waitEnded}). */
    private static final long BACKGROUND_LONG_NANOS = 100_000_000;
    /** Polls of a wait before its first clock read (about a microsecond). */
    private static final int QUICK_POLLS = 32;
    /**
     * How long a waiter looks on after handling something that came {@code gap} ns after the previous thing (or the
     * wait's start). Frames that come close together (a message's next frames, loopback or shared memory) are worth
     * the whole spin: the next one is due before a wake-up (~60 µs here) would end. Frames that come further apart
     * than half the spin are a trickle (a transfer paced by a slow link: a 2 Gbit/s veth delivers 64 KiB every
     * 260 µs): spinning through each gap burnt a core for the whole transfer (38 ms of CPU per 16 MiB all-reduce
     * over that link, against 18 ms blocking at once), the core that the application's computation, which
     * asynchronous ops are meant to overlap, needs. Then it looks only briefly and blocks in the selector, whose
     * wake-up comes long before the next frame is due.
     */
    private long spinAfterWork(long gap) {
        return gap <= spinNanos / 2 ? spinNanos : Math.min(spinNanos, TRICKLE_SPIN_NANOS);
    }

    /** The brief look after a frame of a trickle (see {@link #spinAfterWork}). */
    private static final long TRICKLE_SPIN_NANOS = 20_000;
    /** Bounds of the flat-out part of a spin (see {@link #adaptBusyWindow}). */
    private static final long BUSY_MIN_NANOS = 20_000;
    private static final long BUSY_MAX_NANOS = 35_000;
    /** How long a waiter spins without yielding before each empty poll yields the core. */
    // not volatile: a hint each wait reads once; a volatile store would fence on the way out of every wait
    private long busyWindow = BUSY_MIN_NANOS;
    /** More ranks on this host than CPUs: no flat-out spinning at all, every empty poll yields. */
    volatile boolean oversubscribed;
    private long recentWait = BUSY_MIN_NANOS;

    /**
     * Twice the recent wait, within [20, 35] µs: when replies take a little longer than the window, yielding
     * waiters notice them late and the longer waits would keep everyone yielding; widening the window breaks
     * that, while the cap keeps ranks that share a core from spinning each other out for long.
     */
    private void adaptBusyWindow(long waited) {
        long avg = (recentWait * 7 + Math.min(waited, 1_000_000)) / 8;
        recentWait = avg;
        busyWindow = Math.max(BUSY_MIN_NANOS, Math.min(BUSY_MAX_NANOS, 2 * avg));
    }

    final Selector selector;
    private final ReentrantLock token = new ReentrantLock();
    private final AtomicInteger waiters = new AtomicInteger();
    /**
     * Threads in {@link #withToken} (installing a re-established connection, test hooks, close): spinning waiters leave
     * the token to them, or a waiter that takes it again right after each poll could keep them out for long.
     */
    private volatile int urgent;
    private static final java.lang.invoke.VarHandle URGENT;
    private final ConcurrentLinkedQueue<Thread> parked = new ConcurrentLinkedQueue<>();
    private final long spinNanos;
    private final Consumer<SelectionKey> onKey;
    private final Thread background;
    private volatile boolean blocking;
    /**
     * Waits ended so far: the background thread stays away while waiters come and go. Not volatile: written before
     * {@link #waiters} is decremented and read after it is read, so the background thread that sees the decrement sees
     * this too, without a fence or a clock read on the way out of every wait. Racy increments may lose a count, never
     * all of those of a busy millisecond.
     */
    private long waitsEnded;
    /** {@link #waitsEnded} at the background thread's last look (background thread only). */
    private long waitsSeen;
    /** The background thread sleeps until a wait ends (set before it re-checks {@link #waiters}, cleared when it wakes). */
    private volatile boolean backgroundAsleep;
    private volatile boolean closed;
    private int handled;
    /** Same-host links: polled directly while spinning, armed before blocking (copy-on-write, under {@link #ringLock}). */
    private volatile ShmConduit[] rings = new ShmConduit[0];
    private final Object ringLock = new Object();
    /** The UCX worker and its links (HCOMM_TRANSPORT=ucx), polled and armed like the rings; null without UCX. */
    private volatile UcxEngine ucx;
    /** While there are rings, the selector (TCP peers, doorbells, deaths) is asked only every few µs of spinning. */
    private static final long RING_SELECT_EVERY_NANOS = 5_000;
    /**
     * While every registered channel is a ring's doorbell socket (no TCP peer) and no thread is parked on a shared
     * condition, only peer deaths (and doorbells nobody needs while we spin) come through the selector: asked this
     * rarely, a death is still noticed within 100 µs, and the spin no longer pays an epoll call per few round trips.
     */
    private static final long RINGS_ONLY_SELECT_EVERY_NANOS = 100_000;
    private long lastSelectNow;
    private int ringPolls;
    /** Polls so far (poller only; the watchdog reads it opaquely to tell whether anyone reads the connections). */
    private int polls;
    private static final java.lang.invoke.VarHandle POLLS;

    static {
        try {
            POLLS = java.lang.invoke.MethodHandles.lookup().findVarHandle(Progress.class, "polls", int.class);
            URGENT = java.lang.invoke.MethodHandles.lookup().findVarHandle(Progress.class, "urgent", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** How many polls ran so far: while it does not change, nobody reads what peers send (a callback holds the token). */
    int polls() {
        return (int) POLLS.getOpaque(this);
    }

    Progress(String name, long spinNanos) {
        try {
            this.selector = Selector.open();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.spinNanos = spinNanos;
        this.onKey = key -> {
            handled++;
            if (key.attachment() instanceof PeerLink l) {
                l.onReady(key);
            } else {
                ((Doorbelled) key.attachment()).onDoorbell();
                // a doorbell may be for a thread that sleeps on a shared condition while this one polls
                if (!parked.isEmpty()) for (Thread t : parked) LockSupport.unpark(t);
            }
        };
        this.background = Thread.ofPlatform().daemon().name(name).unstarted(this::runBackground);
    }

    void start() {
        background.start();
    }

    /** Tells a thread blocked in select that interest changed or a channel was registered. */
    void wakeup() {
        if (blocking) selector.wakeup();
    }

    /**
     * Waits until {@code r} finished or the deadline passed, driving progress meanwhile.
     *
     * @return true if {@code r} finished
     */
    /** What {@link #awaitUntil} waits for: a request, or any condition the engine's own frames complete. */
    interface Awaited {
        boolean finished();

        /** The thread parked on it (null: none), to be unparked when it finishes. */
        void waiter(Thread t);
    }

    /**
     * A {@link SharedWait} waited for like a request (polling from the start): for conditions that frames this engine
     * reads complete, or that peers' stores complete (armed before the engine blocks, like {@link #awaitShared}).
     */
    record PolledWait(SharedWait w) implements Awaited {
        @Override
        public boolean finished() {
            return w.done();
        }

        @Override
        public void waiter(Thread t) {
        }
    }

    boolean awaitUntil(Awaited r, long deadline) {
        if (r.finished()) return true;
        if (token.isHeldByCurrentThread()) {
            throw new IllegalStateException("a blocking wait inside a completion callback that runs on the progress "
                    + "engine; use the future's *Async methods for callbacks that block");
        }
        waiters.incrementAndGet();
        if (blocking) selector.wakeup();
        boolean quick = false;
        try {
            // a small message's reply usually comes within a few polls: those read no clock (a clock read costs as much
            // as a poll, more in a virtual machine), do not pause, and do not adapt the busy window
            if (!oversubscribed) {
                for (int i = 0; i < QUICK_POLLS && urgent == 0 && token.tryLock(); i++) {
                    try {
                        pollNow();
                    } finally {
                        token.unlock();
                    }
                    if (r.finished()) {
                        quick = true;
                        return true;
                    }
                }
            }
            // it usually comes within microseconds: spin flat out that long, then spin yielding the core
            long waitStart = System.nanoTime();
            long spinEnd = waitStart + spinNanos;
            long busy = oversubscribed ? 0 : busyWindow;
            long busyUntil = waitStart + busy;
            long now = waitStart;
            long lastWork = waitStart;
            int turns = 0;
            while (!r.finished()) {
                // reading the clock costs about as much as polling a ring: while spinning flat out, every 8th turn only
                if ((++turns & 7) == 0 || now - busyUntil >= 0) now = System.nanoTime();
                if (now - deadline >= 0) return r.finished();
                if (urgent != 0 && !token.isLocked()) {
                    Thread.yield(); // a thread in withToken is about to take it
                    continue;
                }
                if (token.tryLock()) {
                    try {
                        if (now - spinEnd < 0) {
                            if (pollNow() > 0) {
                                if (r.finished()) continue; // done: no clock read on the way out of a finished wait
                                now = System.nanoTime();
                                spinEnd = now + spinAfterWork(now - lastWork);
                                lastWork = now;
                                busyUntil = now + busy;
                            } else if (now - busyUntil < 0) {
                                Thread.onSpinWait();
                            } else {
                                Thread.yield(); // lets a runnable peer on this core go first
                            }
                        } else if (!r.finished()) {
                            // a shared condition is armed too: a peer that changes it rings the doorbell
                            pollBlocking(Math.max(1, Math.min(MAX_BLOCK_MS, (deadline - now) / 1_000_000)),
                                    r instanceof PolledWait p ? p.w() : null);
                            // woken after a whole spin found nothing: a trickle, look briefly for what follows at once
                            lastWork = System.nanoTime();
                            spinEnd = lastWork + Math.min(spinNanos, TRICKLE_SPIN_NANOS);
                        }
                    } finally {
                        token.unlock();
                    }
                } else if (now - spinEnd < 0) {
                    Thread.yield();
                } else {
                    // someone else polls and will complete r; sleep until then, or until the token may be free
                    Thread me = Thread.currentThread();
                    r.waiter(me);
                    parked.add(me);
                    if (!r.finished()) LockSupport.parkNanos(Math.min(deadline - now, 1_000_000));
                    parked.remove(me);
                    r.waiter(null);
                }
            }
            adaptBusyWindow(System.nanoTime() - waitStart);
            return true;
        } finally {
            if (quick) adaptBusyWindow(0);
            waitsEnded++;
            waiters.decrementAndGet();
            waitEnded();
            Thread next = parked.peek();
            if (next != null) LockSupport.unpark(next);
        }
    }

    /**
     * Waits until {@code w} is done or the deadline passed. First it spins on the condition alone, without the poll
     * token (the background thread or another waiter keeps polling, so peer deaths are still noticed): flat out for the
     * busy window (none when oversubscribed), then yielding the core on every look, for {@code spinNanos} in all
     * (longer than a wake-up, so sleeps do not chain). Then it becomes a waiter like {@link #awaitUntil}: it takes the
     * token, polls, and blocks in the selector with the condition armed, so a peer that changes it rings the doorbell.
     * A waiter that cannot get the token parks with the condition armed; the doorbell wakes the token holder, which
     * unparks it. Allocates nothing until it blocks.
     *
     * @return true if {@code w} is done
     */
    boolean awaitShared(SharedWait w, long deadline) {
        if (w.done()) return true;
        if (token.isHeldByCurrentThread()) {
            throw new IllegalStateException("a blocking wait inside a completion callback that runs on the progress "
                    + "engine; use the future's *Async methods for callbacks that block");
        }
        long now = System.nanoTime();
        long busyUntil = now + (oversubscribed ? 0 : busyWindow);
        long spinEnd = now + spinNanos;
        while (now - spinEnd < 0) {
            if (w.done()) return true;
            if (now - deadline >= 0) return false;
            if (now - busyUntil < 0) Thread.onSpinWait();
            else Thread.yield();
            now = System.nanoTime();
        }
        waiters.incrementAndGet();
        if (blocking) selector.wakeup();
        try {
            spinEnd = now; // block at once: the spin is over
            while (!w.done()) {
                now = System.nanoTime();
                if (now - deadline >= 0) return w.done();
                if (token.tryLock()) {
                    try {
                        if (now - spinEnd < 0) {
                            if (pollNow() == 0) {
                                if (oversubscribed) Thread.yield();
                                else Thread.onSpinWait();
                            }
                        } else {
                            pollBlocking(Math.max(1, Math.min(MAX_BLOCK_MS, (deadline - now) / 1_000_000)), w);
                            spinEnd = System.nanoTime() + spinNanos; // woken: a peer moved, the rest usually follows soon
                        }
                    } finally {
                        token.unlock();
                    }
                } else {
                    // someone else polls: sleep armed; the doorbell a peer rings wakes the poller, which unparks us
                    Thread me = Thread.currentThread();
                    parked.add(me);
                    if (!w.arm()) LockSupport.parkNanos(Math.min(deadline - now, 1_000_000));
                    w.disarm();
                    parked.remove(me);
                }
            }
            return true;
        } finally {
            waitsEnded++;
            waiters.decrementAndGet();
            waitEnded();
            Thread next = parked.peek();
            if (next != null) LockSupport.unpark(next);
        }
    }

    void addRing(ShmConduit c) {
        synchronized (ringLock) {
            ShmConduit[] rs = java.util.Arrays.copyOf(rings, rings.length + 1);
            rs[rs.length - 1] = c;
            rings = rs;
        }
        selector.wakeup(); // a poller about to block must arm the new ring too
    }

    void removeRing(ShmConduit c) {
        synchronized (ringLock) {
            rings = java.util.Arrays.stream(rings).filter(x -> x != c).toArray(ShmConduit[]::new);
        }
    }

    /** Polls {@code engine}'s worker and links with the rings from now on. */
    void setUcx(UcxEngine engine) {
        this.ucx = engine;
        selector.wakeup();
    }

    /** Handles every ring with bytes to read or room for queued frames; returns how many. */
    private int pollRings(ShmConduit[] rs) {
        int n = 0;
        for (ShmConduit c : rs) {
            if (c.ready()) {
                n++;
                c.link.onReady(c.writeWanted(), true);
            }
        }
        return n;
    }

    /**
     * The thread in a poll pass now (set and cleared by that thread: another thread never finds itself here), and the
     * clock read in the pass for the flight record of the ops it completed (0: none read yet). A pass that completes
     * a window of messages reads the clock once for all of them ({@link #passClock}).
     */
    private Thread passThread;
    private long passClock;

    /** {@link System#nanoTime()}, read once per poll pass when called in one (its ops ended within the pass). */
    long passClock() {
        if (passThread != Thread.currentThread()) return System.nanoTime();
        long c = passClock;
        if (c == 0) passClock = c = System.nanoTime();
        return c;
    }

    private int pollNow() {
        passThread = Thread.currentThread();
        passClock = 0;
        try {
            return pollPass();
        } finally {
            passThread = null;
        }
    }

    private int pollPass() {
        handled = 0;
        polls++;
        ShmConduit[] rs = rings;
        UcxEngine u = ucx;
        if (rs.length > 0 || u != null) {
            handled += pollRings(rs);
            // UCX's links are polled like rings; their sockets, like the rings' doorbells, only tell of a death
            int polled = 0;
            if (u != null) {
                handled += u.poll();
                polled = u.links();
            }
            if ((++ringPolls & 31) != 0) return handled; // the clock every 32nd poll only (it costs as much as a ring poll)
            long now = System.nanoTime();
            long since = now - lastSelectNow;
            if (since < RING_SELECT_EVERY_NANOS) return handled;
            if (since < RINGS_ONLY_SELECT_EVERY_NANOS && parked.isEmpty() && selector.keys().size() <= rs.length + polled) {
                return handled;
            }
            lastSelectNow = now;
        }
        try {
            selector.selectNow(onKey);
        } catch (IOException e) {
            LOG.warn("selector failed", e);
        }
        return handled;
    }

    private void pollBlocking(long ms) {
        pollBlocking(ms, null);
    }

    /** Blocks in the selector, with every ring and {@code extra} (if not null) armed first. */
    private void pollBlocking(long ms, SharedWait extra) {
        passThread = Thread.currentThread();
        passClock = 0;
        try {
            pollBlockingPass(ms, extra);
        } finally {
            passThread = null;
        }
    }

    private void pollBlockingPass(long ms, SharedWait extra) {
        handled = 0;
        polls++;
        ShmConduit[] rs = rings;
        UcxEngine u = ucx;
        if (rs.length > 0 || extra != null || u != null) {
            // set every ring's sleeping flag, then look once more: what came before the flags is handled now, what
            // comes after them rings the doorbell (see ShmRing); UCX's worker is armed last (its waiter wakes the selector)
            boolean work = extra != null && extra.arm();
            for (ShmConduit c : rs) work |= c.arm();
            if (!work && u != null) work = u.arm();
            if (work) {
                for (ShmConduit c : rs) c.disarm();
                if (extra != null) extra.disarm();
                handled += pollRings(rs);
                if (u != null) handled += u.poll();
                return;
            }
        }
        blocking = true;
        try {
            passClock = 0; // what completes now completes after the wait
            selector.select(onKey, ms);
        } catch (IOException e) {
            LOG.warn("selector failed", e);
        } finally {
            blocking = false;
            for (ShmConduit c : rs) c.disarm();
            if (extra != null) extra.disarm();
            if (u != null) u.disarm();
        }
        if (rs.length > 0) handled += pollRings(rs);
        if (u != null) handled += u.poll();
    }

    private void runBackground() {
        while (!closed) {
            // a thread that waits polls for itself; the background thread only polls when none has for a while,
            // so it never holds the token (in a blocking select) just when a waiter comes back
            if (waiters.get() > 0 || waitsEnded != waitsSeen) {
                boolean sameWait = waitsEnded == waitsSeen; // a waiter is there and none left since the last look
                waitsSeen = waitsEnded; // a waiter left since the last look: quiet for another while
                if (sameWait) {
                    // one wait has lasted a whole look (a barrier, a long receive): waking every millisecond would
                    // only take the core from the thread that polls; sleep until a wait ends (Dekker with waitEnded:
                    // the flag is written before waiters is read again, waiters is decremented before the flag is read)
                    backgroundAsleep = true;
                    if (waiters.get() > 0 && !closed) LockSupport.parkNanos(BACKGROUND_LONG_NANOS);
                    backgroundAsleep = false;
                } else if (!closed) {
                    LockSupport.parkNanos(BACKGROUND_QUIET_NANOS);
                }
                continue;
            }
            if (!token.tryLock()) {
                LockSupport.parkNanos(200_000);
                continue;
            }
            try {
                if (waiters.get() == 0 && !closed) {
                    pollBlocking(MAX_BLOCK_MS);
                    if (handled > 0) lingerAfterWork();
                }
            } catch (RuntimeException e) {
                LOG.error("progress thread: unexpected failure", e);
            } finally {
                releaseToken();
            }
        }
    }

    /**
     * Unlocks the token and wakes a waiter parked because the token was held when it looked. Without the unpark such a
     * waiter slept out its whole millisecond: while it sleeps nobody polls, so the doorbell its peers ring for it goes
     * unheard. Ranks that outnumber the cores hit that race all the time (the background thread, woken to hand the
     * token over, is itself descheduled while holding it): 4 ranks on 2 cores then took 1.1 ms per wait, two waits per
     * 8 KiB all-reduce, for hundreds of calls in a row.
     */
    private void releaseToken() {
        token.unlock();
        Thread next = parked.peek();
        if (next != null) LockSupport.unpark(next);
    }

    /**
     * The background thread handled something: more usually follows soon (a stream of one-sided requests while the
     * target's application computes, the next frames of a transfer), so it polls for {@code spinNanos} more before it
     * blocks again, yielding the core on every empty poll, and a burst does not pay a wake-up (tens of µs here) per
     * message. Bounded, and never flat out, so ranks that outnumber the cores do not starve each other; a waiter that
     * comes takes over at once.
     */
    private void lingerAfterWork() {
        long lastWork = System.nanoTime();
        long end = lastWork + spinNanos;
        while (waiters.get() == 0 && !closed && urgent == 0) {
            if (pollNow() > 0) {
                long now = System.nanoTime();
                end = now + spinAfterWork(now - lastWork);
                lastWork = now;
            } else {
                if (System.nanoTime() - end >= 0) return;
                Thread.yield();
            }
        }
    }

    /**
     * After a wait's {@code waiters} decrement: a background thread that sleeps until a wait ends goes back to its
     * short looks (from there it polls again once no waiter has come for {@code BACKGROUND_QUIET_NANOS}). Costs a
     * volatile read, and an unpark only after a wait that lasted at least one of its looks.
     */
    private void waitEnded() {
        if (backgroundAsleep) LockSupport.unpark(background);
    }

    /** Whether the calling thread holds the poll token (it runs a callback of the progress engine, or polls). */
    boolean heldByCurrentThread() {
        return token.isHeldByCurrentThread();
    }

    /** Runs {@code task} while holding the poll token (no poll runs concurrently). */
    void withToken(Runnable task) {
        waiters.incrementAndGet();
        URGENT.getAndAdd(this, 1);
        if (blocking) selector.wakeup();
        try {
            token.lock();
        } finally {
            URGENT.getAndAdd(this, -1);
        }
        try {
            task.run();
        } finally {
            releaseToken();
            waitsEnded++;
            waiters.decrementAndGet();
            waitEnded();
        }
    }

    /** Polls (holding the token) until {@code done} returns true or the deadline passes. */
    boolean pollUntil(java.util.function.BooleanSupplier done, long deadline) {
        waiters.incrementAndGet();
        if (blocking) selector.wakeup();
        try {
            while (!done.getAsBoolean()) {
                if (System.nanoTime() - deadline >= 0) return false;
                if (token.tryLock()) {
                    try {
                        if (pollNow() == 0) pollBlocking(1);
                    } finally {
                        releaseToken();
                    }
                } else {
                    LockSupport.parkNanos(100_000);
                }
            }
            return true;
        } finally {
            waitsEnded++;
            waiters.decrementAndGet();
            waitEnded();
        }
    }

    @Override
    public void close() {
        closed = true;
        selector.wakeup();
        LockSupport.unpark(background);
        try {
            background.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            selector.close();
        } catch (IOException e) {
            LOG.debug("selector close", e);
        }
    }
}
