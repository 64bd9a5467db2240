package io.hcomm4j.rma;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import io.hcomm4j.SegmentDescriptor;
import io.hcomm4j.bootstrap.Store;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the transfer engines of a job share through its store, under {@value #ROOT}:
 *
 * <pre>
 * token                 8 random bytes: the job token every engine's hellos carry (the first engine sets it)
 * slots                 the job's number of engine slots (the first engine sets it): every engine's transport size
 * next                  counter: engine slots handed out so far (a slot is never handed out twice)
 * engine/&lt;slot&gt;         "address port host-id name": where the engine in that slot listens (the transport's address book)
 * name/&lt;name&gt;           "slot": the engine that started last under that name
 * seg/&lt;slot&gt;/&lt;segment&gt;  a {@link SegmentDescriptor}'s bytes
 * </pre>
 *
 * Engine entries are cached once read (a slot's engine never changes); names and segments are read when asked.
 */
final class EngineDirectory {
    static final String ROOT = "hcomm-xfer/";
    private static final Logger LOG = LoggerFactory.getLogger(EngineDirectory.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    /** One engine as the store describes it. */
    record Entry(int slot, String name, InetSocketAddress address, String hostId) {
        byte[] encode() {
            return (address.getAddress().getHostAddress() + " " + address.getPort() + " " + hostId + " " + name).getBytes(StandardCharsets.UTF_8);
        }

        static Entry decode(int slot, byte[] value) {
            String[] f = new String(value, StandardCharsets.UTF_8).split(" ");
            if (f.length != 4) throw new HcommException("the store's entry of engine slot " + slot + " is malformed: " + Arrays.toString(f));
            return new Entry(slot, f[3], new InetSocketAddress(f[0], Integer.parseInt(f[1])), f[2]);
        }
    }

    private final Store store;
    private final ConcurrentHashMap<Integer, Entry> entries = new ConcurrentHashMap<>();

    EngineDirectory(Store store) {
        this.store = store;
    }

    Store store() {
        return store;
    }

    /** The job token: set by the first engine, read by the others. */
    long token() {
        byte[] v = store.compareAndSet(ROOT + "token", null, ByteBuffer.allocate(8).putLong(RANDOM.nextLong()).array());
        return ByteBuffer.wrap(v).getLong();
    }

    /** The job's number of slots: {@code wanted} if this is the first engine, else what the first one set. */
    int slots(int wanted) {
        byte[] v = store.compareAndSet(ROOT + "slots", null, String.valueOf(wanted).getBytes(StandardCharsets.UTF_8));
        int slots = Integer.parseInt(new String(v, StandardCharsets.UTF_8));
        if (slots != wanted) LOG.info("the job's engines have {} slots (HCOMM_ENGINE_SLOTS {} here is ignored)", slots, wanted);
        return slots;
    }

    /** A new slot for this engine, never handed out before. */
    int takeSlot(int slots) {
        long n = store.add(ROOT + "next", 1);
        if (n > slots) {
            throw new HcommException("the job's " + slots + " transfer engine slots are used up (engines started so far: " + n
                    + "; each takes one for good): start the job's store afresh, or raise HCOMM_ENGINE_SLOTS for a new job");
        }
        return (int) (n - 1);
    }

    /** Publishes this engine's entry, then its name (the name names it from now on). */
    void publish(Entry me) {
        entries.put(me.slot(), me);
        store.set(ROOT + "engine/" + me.slot(), me.encode());
        byte[] old = store.tryGet(ROOT + "name/" + me.name());
        store.set(ROOT + "name/" + me.name(), slotBytes(me.slot()));
        if (old != null) {
            LOG.info("engine name '{}' named slot {} before; it names slot {} (this engine) now", me.name(), text(old), me.slot());
        }
    }

    /** Takes this engine's name and entry out of the store (the name only if it still names this engine). */
    void withdraw(Entry me) {
        byte[] named = store.tryGet(ROOT + "name/" + me.name());
        if (named != null && Arrays.equals(named, slotBytes(me.slot()))) store.delete(ROOT + "name/" + me.name());
        store.delete(ROOT + "engine/" + me.slot());
    }

    /** The slot of the engine named {@code name}, waiting up to {@code timeout} for one to start. */
    int resolve(String name, Duration timeout) {
        byte[] v;
        try {
            v = store.get(ROOT + "name/" + name, timeout);
        } catch (CommTimeoutException e) {
            throw new CommTimeoutException("no transfer engine named '" + name + "' started within " + timeout);
        }
        return Integer.parseInt(text(v));
    }

    /** The engine in {@code slot}, or null if the store has none (not started, or gone and never seen here). */
    Entry entry(int slot) {
        Entry e = entries.get(slot);
        if (e != null) return e;
        byte[] v = store.tryGet(ROOT + "engine/" + slot);
        if (v == null) return null;
        e = Entry.decode(slot, v);
        Entry prior = entries.putIfAbsent(slot, e);
        return prior != null ? prior : e;
    }

    /** Whether the store lists an engine in {@code slot} now (an engine that closed took its entry out; a killed one did not). */
    boolean listed(int slot) {
        return store.tryGet(ROOT + "engine/" + slot) != null;
    }

    /** The address book of the engine transport: where the engine in {@code slot} listens. */
    InetSocketAddress address(int slot) {
        Entry e = entry(slot);
        if (e == null) throw new HcommException("no transfer engine is known in slot " + slot + " (it never started, or left)");
        return e.address();
    }

    /** Whether the engine in {@code slot} runs on host {@code hostId} (false if it is not known). */
    boolean onHost(int slot, String hostId) {
        try {
            Entry e = entry(slot);
            return e != null && e.hostId().equals(hostId);
        } catch (RuntimeException ex) {
            LOG.debug("cannot tell the host of engine slot {}: {}", slot, ex.toString());
            return false;
        }
    }

    /** Remembers the engine a descriptor names (handed over out of band: no store lookup needed for it). */
    void learn(SegmentDescriptor d) {
        entries.putIfAbsent(d.engineId(), new Entry(d.engineId(), d.engine(), new InetSocketAddress(d.host(), d.port()), d.hostId()));
    }

    void publishSegment(SegmentDescriptor d) {
        store.set(segmentKey(d.engineId(), d.segment()), d.toBytes());
    }

    void withdrawSegment(SegmentDescriptor d) {
        store.delete(segmentKey(d.engineId(), d.segment()));
    }

    /** The descriptor of segment {@code name} of the engine in {@code slot}, or null if it has none now. */
    SegmentDescriptor segment(int slot, String name) {
        byte[] v = store.tryGet(segmentKey(slot, name));
        return v == null ? null : SegmentDescriptor.fromBytes(v);
    }

    private static String segmentKey(int slot, String name) {
        return ROOT + "seg/" + slot + "/" + name;
    }

    private static byte[] slotBytes(int slot) {
        return String.valueOf(slot).getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] v) {
        return new String(v, StandardCharsets.UTF_8);
    }
}
