package io.hcomm4j.comm;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import java.time.Duration;

/**
 * Whose turn it is among a zero-copy communicator's ops: tickets are the communicator's collective sequence numbers
 * (1, 2, ... in call order), and an op runs only once every earlier ticket has left, so one descriptor slot per rank
 * suffices whatever threads and streams call the ops.
 */
final class ZeroCopyTurn {
    private final int rank;
    private final long timeoutNanos;
    /** The last ticket that left; guarded by this. */
    private long passed;
    /** The ticket of the op running now (written under the lock at enter, read by that op's thread). */
    private long current;

    ZeroCopyTurn(int rank, long timeoutNanos) {
        this.rank = rank;
        this.timeoutNanos = timeoutNanos;
    }

    /** The ticket of the op now running. */
    long current() {
        return current;
    }

    /** Waits until the op of {@code ticket} may run (every earlier ticket has left). */
    void enter(long ticket, String op) {
        synchronized (this) {
            if (passed != ticket - 1) awaitTurn(ticket, op);
            current = ticket;
        }
    }

    private void awaitTurn(long ticket, String op) {
        long deadline = System.nanoTime() + timeoutNanos;
        while (passed != ticket - 1) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new CommTimeoutException("rank " + rank + ": " + op + ": the collective before it on this communicator "
                        + "did not finish within " + io.hcomm4j.Units.duration(timeoutNanos) + " (HCOMM_TIMEOUT)");
            }
            try {
                wait(Math.max(1, left / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new HcommException("rank " + rank + ": " + op + ": interrupted while waiting for the collective before it", e);
            }
        }
    }

    /** The op of {@code ticket} is over (however it ended): the next may run. */
    void leave(long ticket) {
        synchronized (this) {
            passed = ticket;
            while (skipped != null && skipped.remove(passed + 1)) passed++;
            notifyAll();
        }
    }

    /** The op of {@code ticket} will never run (its queue refused or skipped it): its turn passes by itself. */
    void skip(long ticket) {
        synchronized (this) {
            if (passed == ticket - 1) {
                leave(ticket);
            } else {
                if (skipped == null) skipped = new java.util.TreeSet<>();
                skipped.add(ticket);
            }
        }
    }

    /** Tickets given up before their turn (rare; guarded by this). */
    private java.util.TreeSet<Long> skipped;
}
