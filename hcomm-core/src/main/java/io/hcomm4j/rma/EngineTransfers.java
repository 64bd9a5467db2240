package io.hcomm4j.rma;

import io.hcomm4j.HcommException;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.SegmentDescriptor;
import io.hcomm4j.TransferOp;
import io.hcomm4j.TransferStatus;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.SendRequest;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;

/**
 * The origin's side of a transfer engine's batches: every op checked (naming {@code ops[i]} and the argument) before
 * anything moves, then each op on its path. A remote segment this process has mapped (same host, in the remote's pool)
 * is copied in place: on the caller's thread for a blocking transfer, on a virtual thread for an async one. Any other
 * goes as RMA frames to the remote's progress engine: WRITEs as PUTs of up to {@value #CHUNK} bytes (the next streams
 * while the remote takes the last), then one FLUSH whose answer says every PUT landed; READs as GETs of up to
 * {@value #CHUNK} bytes, each answered with its data straight into the local segment.
 */
final class EngineTransfers {
    static final int CHUNK = RemoteOps.CHUNK;

    private final EngineImpl engine;
    private final PeerTransport transport;
    private final EngineTarget target;
    private final EngineDirectory directory;
    private final ExecutorService copier;

    EngineTransfers(EngineImpl engine, PeerTransport transport, EngineTarget target, EngineDirectory directory, ExecutorService copier) {
        this.engine = engine;
        this.transport = transport;
        this.target = target;
        this.directory = directory;
        this.copier = copier;
    }

    /** Checks {@code ops}, then issues them to {@code peer} as one batch. */
    EngineBatch submit(EnginePeer peer, List<TransferOp> ops, long timeoutNanos, boolean async) {
        boolean self = peer.slot() == engine.id();
        int n = ops.size();
        TransferOp[] op = new TransferOp[n];
        SegmentDescriptor[] remote = new SegmentDescriptor[n];
        MemorySegment[] direct = new MemorySegment[n];
        long total = 0;
        boolean anyDirect = false;
        boolean left = false;
        for (int i = 0; i < n; i++) {
            TransferOp o = Objects.requireNonNull(ops.get(i), "ops[" + i + "]");
            op[i] = o;
            checkLocal(o, i);
            remote[i] = resolve(peer, o.remoteSegment(), i, self);
            if (remote[i] == null) { // the remote left (its segments went from the store with it): the batch fails
                left = true;
                total += o.length();
                continue;
            }
            long size = remote[i].byteSize();
            if (o.remoteOffset() < 0 || o.remoteOffset() > size - o.length()) {
                throw new IndexOutOfBoundsException(where(i) + "remoteOffset " + o.remoteOffset() + " + length " + o.length()
                        + " is outside segment '" + o.remoteSegment() + "' of engine '" + peer.handle.name() + "' (" + size + " bytes)");
            }
            total = Math.addExact(total, o.length());
            if (o.length() > 0) {
                direct[i] = self ? local(o.remoteSegment(), i) : peer.direct(remote[i], transport);
                anyDirect |= direct[i] != null;
            }
        }
        EngineBatch b = engine.newBatch(peer.handle, n, total, timeoutNanos);
        if (!self) {
            if (transport.failed(peer.slot())) {
                b.fail(failure(b, transport.failure(peer.slot(), "transfer")));
                return b;
            }
            if (left) {
                b.fail(failure(b, new PeerFailedException("engine '" + peer.handle.name() + "' left (it is no longer in the store)",
                        List.of(peer.slot()), null)));
                return b;
            }
            // a refusal means a descriptor went stale (unregistered meanwhile): look the names up again next time
            b.future().thenAccept(x -> {
                if (x.status() == TransferStatus.FAILED && !transport.failed(peer.slot())) {
                    for (TransferOp o : op) peer.forget(o.remoteSegment());
                }
            });
        }
        try {
            issueFrames(b, op, remote, direct);
        } catch (RuntimeException e) {
            b.fail(failure(b, e));
        }
        if (anyDirect) {
            if (async) {
                b.add(1);
                try {
                    copier.execute(() -> {
                        if (copy(b, op, direct, self)) b.partDone();
                    });
                } catch (java.util.concurrent.RejectedExecutionException e) { // the engine closed meanwhile
                    b.fail(failure(b, new io.hcomm4j.CommAbortedException("engine '" + engine.name() + "' is closed")));
                }
            } else if (!copy(b, op, direct, self)) {
                return b;
            }
        }
        b.partDone(); // every part issued
        return b;
    }

    private void checkLocal(TransferOp o, int i) {
        if (o.length() < 0) throw new IllegalArgumentException(where(i) + "length " + o.length() + " is negative");
        MemorySegment l = o.local();
        if (o.localOffset() < 0 || o.localOffset() > l.byteSize() - o.length()) {
            throw new IndexOutOfBoundsException(where(i) + "localOffset " + o.localOffset() + " + length " + o.length()
                    + " is outside the local segment (" + l.byteSize() + " bytes)");
        }
        if (o.kind() == TransferOp.Kind.READ && l.isReadOnly()) {
            throw new IllegalArgumentException(where(i) + "local segment is read-only (a READ writes into it)");
        }
        if (!transport.usableFromAnyThread(l)) {
            throw new IllegalArgumentException(where(i) + "local segment is confined to one thread; the engine's threads "
                    + "must reach it (use a heap segment, or a global, shared or automatic arena)");
        }
    }

    /**
     * The descriptor of segment {@code name} of {@code peer}: seen before, else from the store; null if the remote left
     * (then the batch fails).
     */
    private SegmentDescriptor resolve(EnginePeer peer, String name, int i, boolean self) {
        SegmentDescriptor d;
        if (self) {
            EngineTarget.Local l = target.byName.get(name);
            d = l == null ? null : l.descriptor();
        } else {
            d = peer.cached(name);
            if (d == null) {
                d = directory.segment(peer.slot(), name);
                if (d != null) peer.remember(d);
            }
        }
        if (d == null) {
            // missing because the engine left (a closing engine sends its BYE, then takes its entry out of the store, then
            // its segments'), or because it never registered that name
            if (!self && (transport.failed(peer.slot()) || !directory.listed(peer.slot()))) return null;
            throw new IllegalArgumentException(where(i) + "remoteSegment '" + name + "': engine '" + peer.handle.name()
                    + "' has no segment of that name");
        }
        return d;
    }

    private MemorySegment local(String name, int i) {
        EngineTarget.Local l = target.byName.get(name);
        if (l == null) throw new IllegalArgumentException(where(i) + "remoteSegment '" + name + "' is not registered here");
        return l.segment();
    }

    /** Sends the frames of the ops that are not copied in place (and the FLUSH that confirms their PUTs). */
    private void issueFrames(EngineBatch b, TransferOp[] op, SegmentDescriptor[] remote, MemorySegment[] direct) {
        int slot = b.slot();
        boolean puts = false;
        for (int i = 0; i < op.length; i++) {
            TransferOp o = op[i];
            if (o.length() == 0 || direct[i] != null) continue;
            long id = remote[i].segmentId();
            for (long c = 0; c < o.length(); c += CHUNK) {
                long len = Math.min(CHUNK, o.length() - c);
                MemorySegment local = o.local().asSlice(o.localOffset() + c, len);
                b.add(1);
                if (o.kind() == TransferOp.Kind.WRITE) {
                    puts = true;
                    SendRequest s = transport.sendRma(slot, RmaFrames.PUT, id, 0, o.remoteOffset() + c, local);
                    s.whenComplete((v, e) -> {
                        if (e != null) {
                            b.fail(failure(b, e));
                        } else {
                            b.moved(len);
                            b.partDone();
                        }
                    });
                } else {
                    request(b, RmaFrames.GET, id, o.remoteOffset() + c, new EngineTarget.Await(b, local, len),
                            MemorySegment.ofArray(new long[] {len}));
                }
            }
        }
        if (puts) {
            b.add(1);
            request(b, RmaFrames.FLUSH, 0, 0, new EngineTarget.Await(b, null, 0), null);
        }
    }

    /** Sends a request whose reply {@code a} awaits (one part of the batch, added by the caller). */
    private void request(EngineBatch b, int kind, long segmentId, long offset, EngineTarget.Await a, MemorySegment payload) {
        int opId = target.expect(a);
        b.awaits(opId);
        SendRequest s = transport.sendRma(b.slot(), kind, segmentId, opId, offset, payload);
        s.whenComplete((v, e) -> {
            if (e != null) b.fail(failure(b, e));
        });
    }

    /** Copies the ops that have a mapping; false if the batch failed (the remote failed, or a copy threw). */
    private boolean copy(EngineBatch b, TransferOp[] op, MemorySegment[] direct, boolean self) {
        try {
            for (int i = 0; i < op.length; i++) {
                if (direct[i] == null) continue;
                if (b.status().isFinal()) return false;
                if (!self && transport.failed(b.slot())) break;
                TransferOp o = op[i];
                if (o.kind() == TransferOp.Kind.WRITE) MemorySegment.copy(o.local(), o.localOffset(), direct[i], o.remoteOffset(), o.length());
                else MemorySegment.copy(direct[i], o.remoteOffset(), o.local(), o.localOffset(), o.length());
                b.moved(o.length());
            }
            // bytes copied into (or out of) the mapping of a process that died meanwhile went nowhere
            if (!self && transport.failed(b.slot())) {
                b.fail(failure(b, transport.failure(b.slot(), "transfer")));
                return false;
            }
            return true;
        } catch (RuntimeException e) {
            b.fail(failure(b, e));
            return false;
        }
    }

    /** What a batch fails with when one of its parts failed with {@code e}: the transport's exception, named for engines. */
    HcommException failure(EngineBatch b, Throwable e) {
        Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        String what = "engine '" + engine.name() + "': batch to engine '" + b.remote().name() + "' (id " + b.slot() + "): ";
        if (c instanceof PeerFailedException p) return new PeerFailedException(what + p.getMessage(), List.of(b.slot()), p);
        return new HcommException(what + c.getMessage(), c);
    }

    private static String where(int i) {
        return "ops[" + i + "]: ";
    }
}
