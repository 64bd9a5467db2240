package io.hcomm4j.transport;

import io.hcomm4j.memory.SharedFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Two ranks of one host: frames travel through a pair of {@link ShmRing}s in one shared mapping (one ring per
 * direction); the pair's TCP connection, authenticated like any data connection, stays open but carries only doorbell
 * bytes and, by its end of stream, the peer's death.
 *
 * <p><b>Waiting.</b> The progress engine polls the rings while it spins (a load of the other side's index per ring);
 * before it blocks in its selector it sets each ring's sleeping flag, and a writer that sees the flag clears it and
 * writes one byte to the socket, which wakes the selector. So one thread waits for TCP peers, shared-memory peers and
 * peer deaths at once (a futex could not be waited on together with sockets), and the wake-up is paid only after a
 * full spin. The same in reverse for a writer that waits for room.
 *
 * <p><b>The file.</b> The connecting rank creates it ({@link SharedFiles}: mode 0600, pre-faulted), names it in the
 * hello, and unlinks it as soon as the accepting rank has mapped it: from then on it has no name, and the memory goes
 * when both have unmapped it, even if both are killed.
 *
 * <pre>
 *    0 i64 magic   8 i32 version   12 i32 connecting rank   16 i32 accepting rank   20 i32 ring capacity   24 i64 job token
 * 4096 ring: connecting → accepting rank
 * 4096 + 4096 + capacity: ring: accepting → connecting rank
 * 4096 + 2 (4096 + capacity): slots ({@link ShmSlots}): connecting → accepting rank, then accepting → connecting rank
 * </pre>
 *
 * <p><b>Two roads.</b> Eager messages of at most {@link ShmSlots#PAYLOAD_MAX} bytes go through the slots while one is
 * free (the receiver polls the slot's own line and copies the payload straight to the receive), every other frame
 * through the ring; both carry the link's frame seqs, and the reader takes them in seq order.
 */
final class ShmConduit implements Conduit, Doorbelled {
    static final long FILE_HEADER = 4096;
    private static final long MAGIC = 0x474E52534D484348L; // "HCHMSRNG" little-endian
    private static final int VERSION = 2;
    /** Mapped files of the peer kept for one-copy reads (least recently used closed beyond it). */
    private static final int PEER_FILES = 64;

    final PeerLink link;
    private final Progress progress;
    private final SocketChannel socket;
    private final Arena arena;
    private final ShmRing tx;
    private final ShmRing rx;
    private final ShmSlots txSlots;
    private final ShmSlots rxSlots;
    /** Spin polls report room for a waiting writer only from this much on, so a stream is copied in large pieces. */
    private final int roomMin;
    /** The directory of shared-memory files, and the prefix of the peer process's file names there. */
    private final Path dir;
    final String peerPrefix;
    private final ByteBuffer bellFromWriter = ByteBuffer.allocateDirect(1);
    private final ByteBuffer bellFromReader = ByteBuffer.allocateDirect(1);
    private final ByteBuffer drain = ByteBuffer.allocateDirect(64);
    /** The doorbell of shared conditions (zero-copy collectives), rung from any thread: guarded by itself. */
    private final ByteBuffer bellFromShared = ByteBuffer.allocateDirect(1);
    private volatile boolean writeWanted;
    private volatile boolean eof;
    private volatile boolean closed;
    private boolean released;
    // one-copy: the peer's files mapped here (poller only), a small LRU
    private final long[] fileSeqs = new long[PEER_FILES];
    private final Arena[] fileArenas = new Arena[PEER_FILES];
    private final MemorySegment[] fileSegs = new MemorySegment[PEER_FILES];
    private final long[] fileUsed = new long[PEER_FILES];
    private long fileClock;

    private ShmConduit(PeerLink link, Progress progress, SocketChannel socket, Arena arena, MemorySegment file, int capacity,
                       boolean connecting, Path dir, String peerPrefix) throws IOException {
        this.link = link;
        this.progress = progress;
        this.socket = socket;
        this.arena = arena;
        this.dir = dir;
        this.peerPrefix = peerPrefix;
        // the capacity checked (or written) when the file was mapped: the peer may have changed the header since
        long ringBytes = ShmRing.regionBytes(capacity);
        ShmRing first;
        ShmRing second;
        try {
            first = new ShmRing(file.asSlice(FILE_HEADER, ringBytes), capacity);
            second = new ShmRing(file.asSlice(FILE_HEADER + ringBytes, ringBytes), capacity);
        } catch (ShmRing.CorruptIndexException e) {
            throw new CorruptMappingException(link.rank, link.peer, e.getMessage());
        }
        this.tx = connecting ? first : second;
        this.rx = connecting ? second : first;
        long slotBytes = ShmSlots.regionBytes();
        ShmSlots firstSlots = new ShmSlots(file.asSlice(FILE_HEADER + 2 * ringBytes, slotBytes));
        ShmSlots secondSlots = new ShmSlots(file.asSlice(FILE_HEADER + 2 * ringBytes + slotBytes, slotBytes));
        this.txSlots = connecting ? firstSlots : secondSlots;
        this.rxSlots = connecting ? secondSlots : firstSlots;
        this.roomMin = Math.max(1, capacity / 8);
        socket.configureBlocking(false);
        socket.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }

    /** Bytes of a pair's file with rings of {@code capacity}. */
    static long fileBytes(int capacity) {
        return FILE_HEADER + 2 * ShmRing.regionBytes(capacity) + 2 * ShmSlots.regionBytes();
    }

    /** A mapped pair file (before the conduit exists), and its rings' capacity as created or checked. */
    record Mapping(String name, Arena arena, MemorySegment segment, int capacity) {
        void unmap() {
            try {
                arena.close();
            } catch (IllegalStateException ignored) {
                // already closed
            }
        }
    }

    /** The connecting rank creates the pair's file (pre-faulted, 0600) and writes its header. */
    static Mapping create(Path dir, int connecting, int accepting, long jobToken, int capacity) throws IOException {
        String name = SharedFiles.newName();
        Arena arena = Arena.ofShared();
        try {
            MemorySegment seg = SharedFiles.create(dir, name, fileBytes(capacity), arena);
            seg.set(ValueLayout.JAVA_INT_UNALIGNED, 8, VERSION);
            seg.set(ValueLayout.JAVA_INT_UNALIGNED, 12, connecting);
            seg.set(ValueLayout.JAVA_INT_UNALIGNED, 16, accepting);
            seg.set(ValueLayout.JAVA_INT_UNALIGNED, 20, capacity);
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, jobToken);
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, MAGIC);
            return new Mapping(name, arena, seg, capacity);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** The accepting rank maps the file the hello named and checks that it is this pair's, of this job. */
    static Mapping attach(Path dir, String name, int connecting, int accepting, long jobToken) throws IOException {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment seg = SharedFiles.mapPeerFile(dir, name, arena);
            if (seg.byteSize() < FILE_HEADER) throw new IOException("ring file " + name + " is too short");
            long magic = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
            int version = seg.get(ValueLayout.JAVA_INT_UNALIGNED, 8);
            int from = seg.get(ValueLayout.JAVA_INT_UNALIGNED, 12);
            int to = seg.get(ValueLayout.JAVA_INT_UNALIGNED, 16);
            int capacity = seg.get(ValueLayout.JAVA_INT_UNALIGNED, 20);
            long token = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, 24);
            if (magic != MAGIC || version != VERSION) throw new IOException("ring file " + name + " has no ring header of version " + VERSION);
            if (from != connecting || to != accepting || token != jobToken) {
                throw new IOException("ring file " + name + " is for ranks " + from + " -> " + to + " of another job or pair");
            }
            if (capacity < 4096 || Integer.bitCount(capacity) != 1 || seg.byteSize() != fileBytes(capacity)) {
                throw new IOException("ring file " + name + " has " + seg.byteSize() + " bytes for rings of " + capacity);
            }
            return new Mapping(name, arena, seg, capacity);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** Unlinks the pair's file (the connecting rank, once the peer has mapped it or refused it). */
    static void unlink(Path dir, String name) {
        try {
            Files.deleteIfExists(dir.resolve(name));
        } catch (IOException e) {
            org.slf4j.LoggerFactory.getLogger(ShmConduit.class).warn("cannot remove ring file {}: {}", name, e.toString());
        }
    }

    /**
     * The rings of {@code m} under {@code link}; the connection's socket stays as the pair's doorbell (raw bytes, under
     * TLS or not: they carry no data, and the setup read nothing past its last record).
     */
    static ShmConduit of(PeerLink link, Progress progress, io.hcomm4j.security.Wire wire, Mapping m, boolean connecting,
                         Path dir, String peerPrefix) throws IOException {
        wire.endBlockingPhase();
        return new ShmConduit(link, progress, wire.channel(), m.arena(), m.segment(), m.capacity(), connecting, dir, peerPrefix);
    }

    // ------------------------------------------------------------------------------------------- Conduit

    @Override
    public int read(ByteBuffer dst) throws CorruptMappingException {
        if (!dst.hasRemaining()) return 0;
        try {
            return readRing(dst);
        } catch (ShmRing.CorruptIndexException e) {
            throw corrupted("ring " + link.peer + " -> " + link.rank + ": " + e.getMessage());
        }
    }

    private CorruptMappingException corrupted(String what) {
        return new CorruptMappingException(link.rank, link.peer, what);
    }

    private int readRing(ByteBuffer dst) throws ShmRing.CorruptIndexException {
        int n = rx.read(dst);
        if (n > 0) {
            // a writer that sleeps waiting for room is woken at the next poll (ready, arm): the fence that looks for
            // it is then off the path from these bytes to the op they complete
            readSinceWake = true;
            return n;
        }
        if (eof) {
            // the peer closed or died: what it wrote before is still delivered, then the end
            n = rx.read(dst);
            return n > 0 ? n : -1;
        }
        return 0;
    }

    @Override
    public int write(ByteBuffer src) throws CorruptMappingException {
        int n;
        try {
            n = tx.write(src);
        } catch (ShmRing.CorruptIndexException e) {
            throw txCorrupted(e);
        }
        if (txSlots.corrupt() != null) throw txCorrupted(null);
        if (n > 0 && tx.readerToWake()) ring(bellFromWriter);
        return n;
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws CorruptMappingException {
        long n;
        try {
            n = tx.write(srcs, offset, length);
        } catch (ShmRing.CorruptIndexException e) {
            throw txCorrupted(e);
        }
        if (txSlots.corrupt() != null) throw txCorrupted(null);
        if (n > 0 && tx.readerToWake()) ring(bellFromWriter);
        return n;
    }

    private CorruptMappingException txCorrupted(ShmRing.CorruptIndexException e) {
        String where = link.rank + " -> " + link.peer;
        return corrupted(e != null ? "ring " + where + ": " + e.getMessage() : "slots " + where + ": " + txSlots.corrupt());
    }

    /**
     * The short road (under the link's tx lock, after {@link #slotFree} said yes): puts a small eager message, frame
     * {@code seq}, in the next slot. {@code payload} has at most {@link ShmSlots#PAYLOAD_MAX} bytes.
     */
    void writeSlot(long seq, long commId, int tag, int flags, MemorySegment payload) {
        txSlots.put(seq, commId, tag, flags, payload);
        if (tx.readerToWake()) ring(bellFromWriter); // the reader sleeps on the ring's flag for both roads
    }

    /** Whether a slot is free for {@link #writeSlot} (under the link's tx lock). */
    boolean slotFree() {
        return txSlots.hasRoom();
    }

    /** The ring this side writes to: for tests that play a hostile peer. */
    ShmRing txRing() {
        return tx;
    }

    /** The slots the peer writes to (read by the link's reader, holding the progress token). */
    ShmSlots rxSlots() {
        return rxSlots;
    }

    private void ring(ByteBuffer bell) {
        bell.clear();
        try {
            socket.write(bell);
        } catch (IOException e) {
            // the peer is gone: the end of its stream reaches the poller, which fails the link
        }
    }

    /** Wakes the peer's progress engine for a shared condition it sleeps on (any thread). */
    void ringShared() {
        if (closed) return;
        synchronized (bellFromShared) {
            ring(bellFromShared);
        }
    }

    @Override
    public void start() throws IOException {
        socket.register(progress.selector, SelectionKey.OP_READ, this);
        progress.addRing(this);
    }

    @Override
    public void wantWrite() {
        writeWanted = true;
    }

    @Override
    public void writeDone() {
        writeWanted = false;
    }

    @Override
    public String kind() {
        return "shm";
    }

    @Override
    public void abort(Conduit.Drop how) throws IOException {
        SocketConduit.abort(socket, how);
    }

    /** Whether the rings are unmapped (a replaced conduit whose unmap had to wait is retried at transport close). */
    boolean released() {
        synchronized (fileSeqs) {
            return released;
        }
    }

    // -------------------------------------------------------------------------------------- progress hooks

    /** Spin poll: bytes to read, or room for queued frames. */
    boolean ready() {
        if (closed) return false;
        try {
            if (readSinceWake) wakeWriter();
            return rxSlots.peek() != 0 || rx.readable() || (writeWanted && tx.hasRoom(roomMin));
        } catch (IllegalStateException e) {
            return false; // unmapped by a concurrent close
        }
    }

    /** Bytes were read since the writer's waiting flag was last looked at (poller only). */
    private boolean readSinceWake;

    /** Wakes the writer if it sleeps waiting for room (poller, after reading). */
    private void wakeWriter() {
        readSinceWake = false;
        if (rx.writerToWake()) ring(bellFromReader);
    }

    boolean writeWanted() {
        return writeWanted;
    }

    /** Before the poller blocks: set the sleeping flags; true if there is work after all (then it must not block). */
    boolean arm() {
        if (closed) return false;
        try {
            if (readSinceWake) wakeWriter();
            boolean ready = rx.armReader(); // a full fence after the flag: the slots' stamps are loaded after it
            ready |= rxSlots.peek() != 0;
            if (writeWanted) ready |= tx.armWriter(roomMin);
            return ready;
        } catch (IllegalStateException e) {
            return false;
        }
    }

    /** After the poller woke: no doorbells needed while it spins. */
    void disarm() {
        if (closed) return;
        try {
            rx.disarmReader();
            tx.disarmWriter();
        } catch (IllegalStateException ignored) {
            // closed meanwhile
        }
    }

    /** The socket is readable: doorbell bytes (drained here) or the end of the peer's stream. */
    public void onDoorbell() {
        if (Doorbelled.drainedToEnd(socket, drain)) eof = true;
        link.onReady(writeWanted, true);
    }

    // ------------------------------------------------------------------------------------------ one copy

    /** The whole of the peer's file {@code seq}, mapped here (cached; poller only). */
    MemorySegment peerFile(long seq) throws IOException {
        synchronized (fileSeqs) {
            if (released) throw new IOException("the link is closed");
            int victim = 0;
            for (int i = 0; i < PEER_FILES; i++) {
                if (fileSegs[i] != null && fileSeqs[i] == seq) {
                    fileUsed[i] = ++fileClock;
                    return fileSegs[i];
                }
                if (fileSegs[i] == null || (fileSegs[victim] != null && fileUsed[i] < fileUsed[victim])) victim = i;
            }
            Arena a = Arena.ofShared();
            MemorySegment seg;
            try {
                seg = SharedFiles.mapPeerFile(dir, peerPrefix + seq, a);
            } catch (IOException | RuntimeException e) {
                a.close();
                throw e;
            }
            if (fileSegs[victim] != null) closeQuietly(fileArenas[victim]);
            fileSeqs[victim] = seq;
            fileArenas[victim] = a;
            fileSegs[victim] = seg;
            fileUsed[victim] = ++fileClock;
            return seg;
        }
    }

    // ------------------------------------------------------------------------------------------- closing

    @Override
    /**
     * Closes the doorbell socket and stops the polling of the rings; the rings stay mapped until {@link #release}, which
     * the transport calls where no other thread can touch them (holding the progress token and the link's tx lock):
     * unmapping a shared arena under a thread that is copying into it fails that copy and leaves the thread interrupted.
     */
    public void close() {
        if (closed) return;
        closed = true;
        progress.removeRing(this);
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /**
     * Unmaps the rings and the peer's files. A thread that still touches them gets an {@link IllegalStateException}
     * (never a crash); if an unmap cannot happen now it is tried again when the transport closes.
     */
    void release() {
        synchronized (fileSeqs) {
            if (released) return;
            for (int i = 0; i < PEER_FILES; i++) {
                if (fileSegs[i] != null) {
                    closeQuietly(fileArenas[i]);
                    fileSegs[i] = null;
                    fileArenas[i] = null;
                }
            }
            try {
                arena.close();
                released = true;
            } catch (IllegalStateException e) {
                // in use right now (or closed): retried at transport close
                released = !arena.scope().isAlive();
            }
        }
    }

    private static void closeQuietly(Arena a) {
        try {
            a.close();
        } catch (IllegalStateException ignored) {
            // already closed
        }
    }
}
