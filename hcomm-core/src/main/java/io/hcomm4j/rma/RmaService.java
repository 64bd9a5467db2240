package io.hcomm4j.rma;

import io.hcomm4j.HcommException;
import io.hcomm4j.Window;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.RmaHandler;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one-sided layer of a session: its windows by id, the ops waiting for replies, and the transport's
 * {@link RmaHandler}: it applies the requests of origins that cannot reach this rank's memory themselves (other hosts,
 * or memory that is not in a shared file) and completes this rank's ops with their targets' replies. The handler runs
 * on whichever thread holds the progress token: the background progress thread while the application sleeps.
 */
public final class RmaService implements RmaHandler {
    private static final Logger LOG = LoggerFactory.getLogger(RmaService.class);
    private final PeerTransport transport;
    private final int worldRank;
    private final ConcurrentHashMap<Long, WindowImpl> windows = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Integer, Pending> pending = new ConcurrentHashMap<>();
    private final AtomicInteger nextOp = new AtomicInteger();
    /** Per world rank: where request payloads that are applied after arrival land (progress thread only). */
    private final MemorySegment[] scratch;

    public RmaService(PeerTransport transport, int worldRank) {
        this.transport = transport;
        this.worldRank = worldRank;
        this.scratch = new MemorySegment[transport.worldSize()];
        transport.setRmaHandler(this);
    }

    /** Collective on {@code group}: a window over a new zeroed block of {@code bytes} from the pool. */
    public Window allocate(WindowGroup group, long bytes) {
        return WindowImpl.create(this, group, null, bytes);
    }

    /** Collective on {@code group}: a window over the caller's {@code segment}. */
    public Window create(WindowGroup group, MemorySegment segment) {
        return WindowImpl.create(this, group, segment, segment.byteSize());
    }

    PeerTransport transport() {
        return transport;
    }

    int worldRank() {
        return worldRank;
    }

    void register(WindowImpl w) {
        if (windows.putIfAbsent(w.id, w) != null) {
            throw new HcommException("rank " + worldRank + ": window id " + Long.toHexString(w.id) + " is taken");
        }
    }

    void unregister(WindowImpl w) {
        windows.remove(w.id, w);
    }

    /** Registers a request that waits for a reply; returns its op id. */
    int expect(Pending p) {
        while (true) {
            int id = nextOp.incrementAndGet();
            if (pending.putIfAbsent(id, p) == null) return id;
        }
    }

    /** The op {@code id} will get no reply (its request could not be sent). */
    void forget(int id) {
        pending.remove(id);
    }

    /** World rank {@code p} failed: its ops waiting for replies fail. */
    public void peerFailed(int p, RuntimeException error) {
        pending.entrySet().removeIf(e -> {
            if (e.getValue().target != p) return false;
            e.getValue().future.completeExceptionally(error);
            return true;
        });
    }

    // ------------------------------------------------------------------------------------ RmaHandler

    @Override
    public MemorySegment payloadTarget(int peer, int flags, long windowId, int opId, long offset, long length) {
        int kind = RmaFrames.kind(flags);
        if (kind == RmaFrames.REPLY) {
            Pending p = pending.get(opId);
            if (p != null && p.result != null && RmaFrames.status(flags) == RmaFrames.OK && length <= p.result.byteSize()) {
                return length == p.result.byteSize() ? p.result : p.result.asSlice(0, length);
            }
            return scratch(peer, length);
        }
        if (kind == RmaFrames.PUT) {
            WindowImpl w = windows.get(windowId);
            if (w != null && offset >= 0 && offset <= w.local.byteSize() - length) return w.local.asSlice(offset, length);
            if (w != null) w.refused(peer, "put of " + length + " bytes at offset " + offset + " beyond its " + w.local.byteSize());
            return scratch(peer, length);
        }
        return scratch(peer, length);
    }

    private MemorySegment scratch(int peer, long length) {
        MemorySegment s = scratch[peer];
        if (s == null || s.byteSize() < length) {
            s = Arena.ofAuto().allocate(Math.max(length, 4096), 8);
            scratch[peer] = s;
        }
        return s.asSlice(0, length);
    }

    @Override
    public void onRma(int peer, int flags, long windowId, int opId, long offset, MemorySegment payload) {
        int kind = RmaFrames.kind(flags);
        if (kind == RmaFrames.REPLY) {
            onReply(opId, RmaFrames.status(flags), payload);
            return;
        }
        WindowImpl w = windows.get(windowId);
        if (w == null) {
            LOG.debug("rank {}: {} from rank {} for window {} that is not open here", worldRank, RmaFrames.kindName(kind), peer,
                    Long.toHexString(windowId));
            if (TargetOps.answers(flags)) transport.sendRma(peer, RmaFrames.reply(RmaFrames.ERROR), windowId, opId, 0, null);
            return;
        }
        try {
            TargetOps.apply(w, peer, flags, opId, offset, payload);
        } catch (RuntimeException e) {
            // a request this rank cannot apply harms neither this rank nor the link: the origin learns it
            LOG.warn("rank {}: refused {} from rank {}: {}", worldRank, RmaFrames.kindName(kind), peer, e.getMessage());
            w.refused(peer, e.getMessage());
            if (TargetOps.answers(flags)) transport.sendRma(peer, RmaFrames.reply(RmaFrames.ERROR), windowId, opId, 0, null);
        }
    }

    private void onReply(int opId, int status, MemorySegment payload) {
        Pending p = pending.remove(opId);
        if (p == null) return; // its origin gave up on it
        if (status == RmaFrames.ERROR) p.status[0] = RmaFrames.ERROR;
        else if (status == RmaFrames.BUSY && p.status[0] == RmaFrames.OK) p.status[0] = RmaFrames.BUSY;
        if (--p.due[0] > 0) return; // replies are read by one thread at a time (the progress token)
        if (p.status[0] == RmaFrames.ERROR) {
            p.future.completeExceptionally(new HcommException("rank " + worldRank + ": world rank " + p.target + " refused the "
                    + RmaFrames.kindName(p.kind) + " (see its log)"));
        } else if (p.kind == RmaFrames.FOP || p.kind == RmaFrames.CAS) {
            long v = payload.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
            p.future.complete(p.int32 ? (long) (int) v : v);
        } else {
            p.future.complete(p.status[0]);
        }
    }
}
