package io.hcomm4j.transport;

import io.hcomm4j.HcommException;
import io.hcomm4j.ucx.UcpEndpoint;
import io.hcomm4j.ucx.UcpTags;
import io.hcomm4j.ucx.UcxException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;

/**
 * The large messages of one {@link UcxConduit}: rendezvous messages whose bytes go by UCX's tag matching straight
 * between the two buffers. The receiver posts a tag receive into the matched receive's buffer before its CTS (flagged
 * {@link Frame#CTS_UCX}); the sender answers with a tag send from its buffer (a heap array copied to native memory
 * first). The tag is the sender's rank and the message id (bit 63 clear: frames have it set). The progress engine polls
 * them to completion. A receive whose op fails meanwhile (a timeout, an abort, the sender gave up) has its UCX receive
 * cancelled and completed on the failing thread before the failure is delivered ({@link RecvRequest#stopWritesOnFailure}),
 * so a caller may free its buffer as soon as it sees the failure; everything in flight is cancelled when the link goes.
 */
final class UcxLargeMessages {
    /** Bits of a tag below the sender's rank: the message id. */
    private static final int TAG_RANK_SHIFT = 40;
    private static final int IN_PROGRESS = 1; // UCS_INPROGRESS

    private final PeerLink link;
    private final UcxEngine engine;
    private final UcpEndpoint ep;
    private final UcpTags tags;
    /** In flight (guarded by itself; completed by the poller). */
    private final ArrayList<Transfer> inFlight = new ArrayList<>();
    private volatile int count;
    /** Those {@link #poll} found complete (poller only, reused). */
    private final ArrayList<Transfer> done = new ArrayList<>();
    /** This link's send and receive parameters (under {@link #inFlight}): they name a pool buffer's registration. */
    private final MemorySegment sendParams, recvParams;
    private final Arena paramsArena = Arena.ofShared();
    /** No new transfers: the link is going (under {@link #inFlight}). */
    private volatile boolean closed;

    /** A large message in flight: a receive ({@code r}) or a send ({@code s}, with its {@code copy}). */
    private static final class Transfer {
        final long msgId;
        final long request;
        final RecvRequest r;
        final SendRequest s;
        /** A heap array's bytes copied to native memory for UCX (a pool buffer or an arena), freed when the send completes. */
        final AutoCloseable copy;
        boolean cancelled;
        int status;

        Transfer(long msgId, long request, RecvRequest r, SendRequest s, AutoCloseable copy) {
            this.msgId = msgId;
            this.request = request;
            this.r = r;
            this.s = s;
            this.copy = copy;
        }
    }

    UcxLargeMessages(PeerLink link, UcxEngine engine, UcpEndpoint ep) {
        this.link = link;
        this.engine = engine;
        this.ep = ep;
        this.tags = engine.worker.tags();
        this.sendParams = UcpTags.params(paramsArena);
        this.recvParams = UcpTags.params(paramsArena);
    }

    /** Names the registration of a pool buffer at {@code address} in {@code params} (none elsewhere). */
    private void useRegistration(MemorySegment params, long address, long length) {
        io.hcomm4j.ucx.UcpMemory m = engine.registered(address, length);
        UcpTags.useMemory(params, m);
        if (m != null) engine.registeredTransfers.incrementAndGet();
    }

    private static long tagOf(int senderRank, long msgId) {
        return ((long) senderRank << TAG_RANK_SHIFT) | (msgId & ((1L << TAG_RANK_SHIFT) - 1));
    }

    /** Whether a rendezvous receive into {@code buf} goes this way: native memory UCX can write into. */
    boolean takes(MemorySegment buf) {
        return !closed && buf.isNative();
    }

    /**
     * Posts the UCX receive of the peer's message {@code msgId} ({@code size} bytes) straight into {@code r}'s buffer,
     * before its CTS goes; false if UCX refused (then the bytes come as chunks among the frames).
     */
    boolean receive(RecvRequest r, long msgId, long size) {
        synchronized (inFlight) {
            if (closed) return false;
            long request;
            try {
                useRegistration(recvParams, r.buf.address(), size);
                request = tags.receive(r.buf.address(), size, tagOf(link.peer, msgId), recvParams);
            } catch (UcxException e) {
                return false;
            }
            Transfer t = new Transfer(msgId, request, r, null, null);
            inFlight.add(t);
            count = inFlight.size();
            r.stopWritesOnFailure = () -> stopWrites(t);
        }
        if (r.finished()) stopWrites(find(r)); // failed while it was posted
        engine.taggedReceives.incrementAndGet();
        return true;
    }

    private Transfer find(RecvRequest r) {
        synchronized (inFlight) {
            for (Transfer t : inFlight) if (t.r == r) return t;
            return null;
        }
    }

    /**
     * The receive of {@code t} failed (its caller may free the buffer as soon as it learns): cancels the UCX receive and
     * progresses the worker until UCX completed it, on the failing thread, before the failure is delivered. Bounded by
     * 1 s; one that UCX has not let go of by then is logged.
     */
    private void stopWrites(Transfer t) {
        if (t == null || t.request == 0) return;
        synchronized (inFlight) {
            if (!inFlight.contains(t)) return; // completed and freed already: UCX is done with the buffer
            if (!t.cancelled) {
                t.cancelled = true;
                tags.cancel(t.request);
            }
            long deadline = System.nanoTime() + 1_000_000_000L;
            while (tags.status(t.request) == IN_PROGRESS && System.nanoTime() - deadline < 0) engine.worker.progress();
            if (tags.status(t.request) == IN_PROGRESS) {
                PeerTransport.LOG.warn("rank {}: UCX did not give back the buffer of a failed receive from rank {} within 1 s",
                        link.rank, link.peer);
            }
        }
    }

    /** The receiver of our message {@code msgId} posted a UCX receive for it (CTS_UCX): its bytes go by UCX's tag send. */
    void send(SendRequest s, long msgId) {
        MemorySegment src = s.buf;
        AutoCloseable copy = null;
        if (!src.isNative()) {
            io.hcomm4j.memory.Buffer b = engine.borrow(Math.max(1, s.size));
            MemorySegment n;
            if (b != null) {
                copy = b;
                n = b.segment();
            } else {
                Arena a = Arena.ofShared();
                copy = a;
                n = a.allocate(Math.max(1, s.size), 64);
            }
            MemorySegment.copy(src, 0, n, 0, s.size);
            src = n;
        }
        link.awaitingDone.put(msgId, s);
        synchronized (inFlight) {
            long request = -1;
            if (!closed) {
                try {
                    useRegistration(sendParams, src.address(), s.size);
                    request = tags.send(ep, src.address(), s.size, tagOf(link.rank, msgId), sendParams);
                } catch (UcxException e) {
                    request = -1;
                }
            }
            if (request != -1) {
                inFlight.add(new Transfer(msgId, request, null, s, copy));
                count = inFlight.size();
                engine.taggedSends.incrementAndGet();
                return;
            }
        }
        free(copy);
        if (link.awaitingDone.remove(msgId) != null) {
            s.fail(new HcommException("rank " + link.rank + ": " + s.describe() + ": UCX refused the send to rank " + link.peer));
        }
    }

    private static void free(AutoCloseable copy) {
        if (copy == null) return;
        try {
            copy.close();
        } catch (Exception e) {
            PeerTransport.LOG.warn("freeing a large message's native copy", e);
        }
    }

    /** Completes the transfers UCX finished (poller); cancels the receives of failed ops. Returns how many ended. */
    int poll() {
        if (count == 0) return 0;
        synchronized (inFlight) {
            for (int i = 0; i < inFlight.size(); i++) {
                Transfer t = inFlight.get(i);
                int st = t.request == 0 ? 0 : tags.status(t.request);
                if (st == IN_PROGRESS) {
                    if (t.r != null && !t.cancelled && t.r.finished()) {
                        t.cancelled = true; // the op failed: UCX must stop writing into its buffer
                        tags.cancel(t.request);
                    }
                    continue;
                }
                if (t.request != 0) tags.free(t.request);
                t.status = st;
                done.add(t);
                inFlight.remove(i--);
            }
            count = inFlight.size();
        }
        int n = done.size();
        for (int i = 0; i < n; i++) complete(done.get(i));
        done.clear();
        return n;
    }

    private void complete(Transfer t) {
        if (t.r != null) {
            RecvRequest r = link.awaitingData.remove(t.msgId);
            if (r == null || r.finished()) return; // failed meanwhile (the link, the op): nobody waits for these bytes
            if (t.status == 0) r.succeedMatched();
            else r.fail(new HcommException("rank " + link.rank + ": " + r.describe() + ": UCX failed to receive it from rank "
                    + link.peer + ": " + tags.statusText(t.status)));
        } else {
            free(t.copy);
            SendRequest s = link.awaitingDone.remove(t.msgId);
            if (s == null || s.isDone()) return;
            if (t.status == 0) s.succeed(null);
            else s.fail(new HcommException("rank " + link.rank + ": " + s.describe() + ": UCX failed to send it to rank "
                    + link.peer + ": " + tags.statusText(t.status)));
        }
    }

    /**
     * The link is gone (poller, or the engine's close): UCX must stop reading and writing the buffers still in flight
     * (their ops were failed with the link). Receives are cancelled and sends end with the endpoint's forced close; each
     * request is freed once UCX completed it (bounded: one that does not complete within 1 s is freed anyway).
     */
    void cancelAll() {
        synchronized (inFlight) {
            closed = true;
            if (inFlight.isEmpty()) {
                if (paramsArena.scope().isAlive()) paramsArena.close(); // nothing posts after closed was set
                return;
            }
            for (Transfer t : inFlight) {
                if (t.request != 0 && t.r != null && !t.cancelled) {
                    t.cancelled = true;
                    tags.cancel(t.request);
                }
            }
        }
        try {
            ep.close();
        } catch (UcxException e) {
            // closed anyway
        }
        long deadline = System.nanoTime() + 1_000_000_000L;
        synchronized (inFlight) {
            for (Transfer t : inFlight) {
                while (t.request != 0 && tags.status(t.request) == IN_PROGRESS && System.nanoTime() - deadline < 0) engine.worker.progress();
                if (t.request != 0) tags.free(t.request);
                free(t.copy);
            }
            inFlight.clear();
            count = 0;
        }
        if (paramsArena.scope().isAlive()) paramsArena.close(); // nothing posts after closed was set
    }
}
