package io.hcomm4j.comm;

import io.hcomm4j.CommFuture;
import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.Status;
import io.hcomm4j.Units;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A barrier that names the ranks that did not come (torch.distributed's monitored_barrier): every rank tells rank 0
 * it arrived; rank 0 waits up to the timeout for each, then sends every other rank its verdict (nothing, or the text
 * naming the late ranks), and every rank throws the same {@link CommTimeoutException} if some were late. Not a
 * collective of the sequence: it has its own counter and tags (bit 30 set) on the communicator's check channel, so it
 * works on a communicator whose collectives are stuck, which is what it is for. Every rank must call it the same
 * number of times.
 */
final class MonitoredBarrier {
    /** The longest verdict text (a longer one is cut). */
    private static final int VERDICT_BYTES = 512;
    /** How much longer than the timeout a rank waits for rank 0's verdict (rank 0 waits the timeout, then answers). */
    private static final long VERDICT_GRACE_NANOS = 5_000_000_000L;

    private final PeerTransport transport;
    private final long channel;
    private final int rank;
    private final int size;
    private final int[] group;
    private final AtomicLong calls = new AtomicLong();

    MonitoredBarrier(PeerTransport transport, long commId, int rank, int size, int[] group) {
        this.transport = transport;
        this.channel = commId | (3L << 62);
        this.rank = rank;
        this.size = size;
        this.group = group;
    }

    private int world(int r) {
        return group == null ? r : group[r];
    }

    void run(Duration timeout) {
        java.util.Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("rank " + rank + ": monitoredBarrier: timeout must be > 0, was " + Units.duration(timeout));
        }
        long n = calls.incrementAndGet();
        if (size == 1) return;
        int tag = (1 << 30) | (int) (n & 0x3fffffff);
        long timeoutNanos = timeout.toNanos();
        if (rank == 0) monitor(n, tag, timeoutNanos);
        else arrive(n, tag, timeoutNanos);
    }

    private void monitor(long n, int tag, long timeoutNanos) {
        List<CommFuture<Status>> arrivals = new ArrayList<>(size);
        arrivals.add(null);
        for (int p = 1; p < size; p++) arrivals.add(transport.recv(channel, world(p), tag, MemorySegment.ofArray(new byte[1])));
        long deadline = System.nanoTime() + timeoutNanos;
        List<Integer> late = new ArrayList<>();
        for (int p = 1; p < size; p++) {
            // a late rank's receive stays posted: its arrival, whenever it comes, is taken there
            if (!arrived(arrivals.get(p), deadline - System.nanoTime())) late.add(p);
        }
        String verdict = late.isEmpty() ? "" : "monitoredBarrier #" + n + ": " + (late.size() == 1 ? "rank " + late.get(0) + " has"
                : "ranks " + late + " have") + " not arrived within " + Units.duration(timeoutNanos) + " (" + (size - 1 - late.size())
                + " of the other " + (size - 1) + " ranks did); rank 0 timed it";
        byte[] text = verdict.getBytes(StandardCharsets.UTF_8);
        MemorySegment msg = MemorySegment.ofArray(java.util.Arrays.copyOf(text, Math.min(text.length, VERDICT_BYTES)));
        List<CommFuture<Void>> sends = new ArrayList<>(size);
        for (int p = 1; p < size; p++) sends.add(transport.send(channel, world(p), tag, msg)); // the late ones read it when they come
        for (int p = 1; p < size; p++) {
            if (late.contains(p)) continue;
            sends.get(p - 1).await(Duration.ofNanos(VERDICT_GRACE_NANOS));
        }
        if (!late.isEmpty()) throw new CommTimeoutException("rank 0: " + verdict);
    }

    /**
     * Whether {@code f} completed within {@code nanos}; a failure (its rank is gone) is not an arrival. A plain timed
     * wait: a timeout here is the barrier's verdict, not a stuck op to explain or withdraw.
     */
    private boolean arrived(CommFuture<?> f, long nanos) {
        try {
            f.get(Math.max(1, nanos), java.util.concurrent.TimeUnit.NANOSECONDS);
            return true;
        } catch (java.util.concurrent.TimeoutException e) {
            return false;
        } catch (java.util.concurrent.ExecutionException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new io.hcomm4j.HcommException("rank " + rank + ": monitoredBarrier: interrupted", e);
        }
    }

    private void arrive(long n, int tag, long timeoutNanos) {
        CommFuture<Status> verdict;
        byte[] text = new byte[VERDICT_BYTES];
        verdict = transport.recv(channel, world(0), tag, MemorySegment.ofArray(text));
        transport.send(channel, world(0), tag, MemorySegment.ofArray(new byte[1]));
        if (!arrived(verdict, timeoutNanos + VERDICT_GRACE_NANOS)) {
            throw new CommTimeoutException("rank " + rank + ": monitoredBarrier #" + n + ": rank 0, which times it, did not answer within "
                    + Units.duration(timeoutNanos + VERDICT_GRACE_NANOS) + " (is rank 0 late, or stuck?)");
        }
        Status st = verdict.await();
        if (st.bytes() > 0) {
            throw new CommTimeoutException("rank " + rank + ": " + new String(text, 0, (int) st.bytes(), StandardCharsets.UTF_8));
        }
    }
}
