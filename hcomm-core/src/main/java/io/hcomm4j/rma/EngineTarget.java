package io.hcomm4j.rma;

import io.hcomm4j.HcommException;
import io.hcomm4j.Notification;
import io.hcomm4j.SegmentDescriptor;
import io.hcomm4j.TransferEngine;
import io.hcomm4j.transport.PeerTransport;
import io.hcomm4j.transport.RmaHandler;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A transfer engine's {@link RmaHandler}, on its progress engine: serves the other engines' requests on the segments
 * registered here (a PUT lands straight in the segment, a GET is answered from it, a FLUSH once every earlier frame of
 * that engine was applied: OK, or ERROR naming a PUT that was refused), queues their notifications, and hands the
 * replies to this engine's own requests to the batches that await them. A request this engine cannot serve (a segment
 * unregistered meanwhile, a range outside it) harms nobody: the origin's batch fails with the reason.
 *
 * <pre>
 * NOTIFY payload: i32 name bytes, name (UTF-8), i32 sender-name bytes, sender name (UTF-8), the notification's bytes
 * </pre>
 */
final class EngineTarget implements RmaHandler {
    private static final Logger LOG = LoggerFactory.getLogger(EngineTarget.class);
    /** Largest NOTIFY payload: the bytes and two names of at most 200 characters (4 UTF-8 bytes each at most). */
    private static final int MAX_NOTIFY_FRAME = TransferEngine.MAX_NOTIFY_BYTES + 2 * (4 + 800);

    /** A segment registered here. */
    record Local(String name, long id, MemorySegment segment, SegmentDescriptor descriptor) {
    }

    /** A reply one of this engine's requests waits for: a GET's ({@code into}: where its data goes) or a FLUSH's. */
    record Await(EngineBatch batch, MemorySegment into, long bytes) {
    }

    private final PeerTransport transport;
    private final String self;
    final ConcurrentHashMap<String, Local> byName = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Local> byId = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Integer, Await> awaits = new ConcurrentHashMap<>();
    private final AtomicInteger nextOp = new AtomicInteger();
    private final ConcurrentLinkedQueue<Notification> notes = new ConcurrentLinkedQueue<>();
    // progress engine only
    /** Per slot: why a PUT from that engine was refused since its last FLUSH, or null. */
    private final String[] refused;
    /** Per slot: where payloads that are not data land (GET lengths, refused PUTs, error texts). */
    private final HashMap<Integer, MemorySegment> scratch = new HashMap<>();

    EngineTarget(PeerTransport transport, String self, int slots) {
        this.transport = transport;
        this.self = self;
        this.refused = new String[slots];
    }

    // ------------------------------------------------------------------------------------ registry

    void add(Local l) {
        byId.put(l.id(), l);
    }

    void remove(Local l) {
        byId.remove(l.id(), l);
    }

    // ------------------------------------------------------------------------------------ this engine's requests

    /** Registers a reply {@code a} waits for; returns its op id. */
    int expect(Await a) {
        while (true) {
            int id = nextOp.incrementAndGet();
            if (id != 0 && awaits.putIfAbsent(id, a) == null) return id;
        }
    }

    /** The batch of the replies {@code ids} ended: they are no longer awaited (late ones are dropped). */
    void forget(List<Integer> ids) {
        for (int id : ids) awaits.remove(id);
    }

    /** The notifications received so far, taken out. */
    List<Notification> drain() {
        List<Notification> out = new ArrayList<>();
        for (Notification n; (n = notes.poll()) != null; ) out.add(n);
        return out;
    }

    /** A notification to this engine itself. */
    void deliver(Notification n) {
        notes.add(n);
    }

    /** The NOTIFY payload for a notification {@code name} with {@code bytes} from engine {@code from}. */
    static MemorySegment notification(String from, String name, byte[] bytes) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        byte[] f = from.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + n.length + f.length + bytes.length);
        b.putInt(n.length).put(n).putInt(f.length).put(f).put(bytes);
        return MemorySegment.ofArray(b.array());
    }

    // ------------------------------------------------------------------------------------ RmaHandler

    @Override
    public MemorySegment payloadTarget(int peer, int flags, long segmentId, int opId, long offset, long length) {
        switch (RmaFrames.kind(flags)) {
            case RmaFrames.REPLY -> {
                Await a = awaits.get(opId);
                if (a != null && a.into() != null && RmaFrames.status(flags) == RmaFrames.OK && a.into().byteSize() == length) {
                    return a.into();
                }
            }
            case RmaFrames.PUT -> {
                Local l = byId.get(segmentId);
                String bad = outside(l, segmentId, offset, length);
                if (bad == null) return l.segment().asSlice(offset, length);
                refuse(peer, "write of " + bad);
            }
            case RmaFrames.NOTIFY -> {
                if (length <= MAX_NOTIFY_FRAME) return MemorySegment.ofArray(new byte[(int) length]);
                LOG.warn("engine '{}': dropped a notification of {} bytes from engine slot {} (at most {})", self, length, peer, MAX_NOTIFY_FRAME);
            }
            default -> { }
        }
        return scratch(peer, length);
    }

    @Override
    public void onRma(int peer, int flags, long segmentId, int opId, long offset, MemorySegment payload) {
        int kind = RmaFrames.kind(flags);
        switch (kind) {
            case RmaFrames.PUT -> { } // landed in the segment, or refused in payloadTarget
            case RmaFrames.REPLY -> onReply(opId, RmaFrames.status(flags), payload);
            case RmaFrames.GET -> {
                long length = payload == null ? -1 : payload.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                Local l = byId.get(segmentId);
                String bad = outside(l, segmentId, offset, length);
                if (bad == null) transport.sendRma(peer, RmaFrames.reply(RmaFrames.OK), segmentId, opId, 0, l.segment().asSlice(offset, length));
                else error(peer, segmentId, opId, "read of " + bad);
            }
            case RmaFrames.FLUSH -> {
                String why = refused[peer];
                refused[peer] = null;
                if (why == null) transport.sendRma(peer, RmaFrames.reply(RmaFrames.OK), segmentId, opId, 0, null);
                else error(peer, segmentId, opId, why);
            }
            case RmaFrames.NOTIFY -> {
                if (payload != null && payload.byteSize() <= MAX_NOTIFY_FRAME && payload.heapBase().isPresent()) notify(peer, payload);
            }
            default -> LOG.debug("engine '{}': ignored a {} frame from engine slot {}", self, RmaFrames.kindName(kind), peer);
        }
    }

    /** Why {@code [offset, offset + length)} of segment {@code id} cannot be served (null: it can). */
    private static String outside(Local l, long id, long offset, long length) {
        if (l == null) return length + " bytes at offset " + offset + " of segment id " + id + ": no such segment is registered (any more)";
        // memory freed while registered (its arena closed): refused here rather than failing the connection in the copy
        if (!l.segment().scope().isAlive()) return length + " bytes of segment '" + l.name() + "': its memory was freed while registered";
        long size = l.segment().byteSize();
        if (length < 0 || offset < 0 || offset > size - length) {
            return length + " bytes at offset " + offset + " of segment '" + l.name() + "': outside its " + size + " bytes";
        }
        return null;
    }

    private void refuse(int peer, String why) {
        LOG.debug("engine '{}': refused a {} from engine slot {}", self, why, peer);
        if (refused[peer] == null) refused[peer] = why;
    }

    private void error(int peer, long segmentId, int opId, String why) {
        transport.sendRma(peer, RmaFrames.reply(RmaFrames.ERROR), segmentId, opId, 0,
                MemorySegment.ofArray(("engine '" + self + "' refused the " + why).getBytes(StandardCharsets.UTF_8)));
    }

    private void onReply(int opId, int status, MemorySegment payload) {
        Await a = awaits.remove(opId);
        if (a == null) return; // its batch is over
        if (status != RmaFrames.OK) {
            String why = payload == null ? "engine '" + a.batch().remote().name() + "' refused an op"
                    : new String(payload.toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
            a.batch().fail(new HcommException("engine '" + self + "': " + why));
            return;
        }
        if (a.into() != null) a.batch().moved(a.bytes());
        a.batch().partDone();
    }

    private void notify(int peer, MemorySegment payload) {
        try {
            ByteBuffer b = ByteBuffer.wrap((byte[]) payload.heapBase().get());
            String name = string(b);
            String from = string(b);
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            notes.add(new Notification(from, peer, name, bytes));
        } catch (RuntimeException e) {
            LOG.warn("engine '{}': dropped a malformed notification from engine slot {}: {}", self, peer, e.toString());
        }
    }

    private static String string(ByteBuffer b) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) throw new IllegalArgumentException("a name of " + n + " bytes in " + b.remaining());
        byte[] s = new byte[n];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    private MemorySegment scratch(int peer, long length) {
        MemorySegment s = scratch.get(peer);
        if (s == null || s.byteSize() < length) {
            s = Arena.ofAuto().allocate(Math.max(length, 4096), 8);
            scratch.put(peer, s);
        }
        return s.asSlice(0, length);
    }
}
