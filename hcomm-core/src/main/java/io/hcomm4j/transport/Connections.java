package io.hcomm4j.transport;

import io.hcomm4j.HcommException;
import io.hcomm4j.PeerFailedException;
import io.hcomm4j.memory.SharedFiles;
import io.hcomm4j.security.AcceptGate;
import io.hcomm4j.security.Auth;
import io.hcomm4j.security.Wire;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.IntFunction;

/**
 * Opening connections: one authenticated connection per pair of ranks, opened on first use (the lower rank's attempt
 * wins if both connect at once), each starting with a hello ({@link HelloDescriptor}). To a peer of this host the
 * connecting side offers a pair of shared-memory rings (a file it creates and names in the hello); the socket then
 * stays as doorbell and death detector. Accepting runs on its own thread, each handshake on a virtual thread; a hello
 * that replaces a lost connection goes to the {@link Reconnector}.
 */
final class Connections {
    private final PeerTransport t;
    private final int rank;
    private final int size;
    private final PeerLink[] links;
    private final Auth auth;
    private final long jobToken;
    private final Duration connectTimeout;
    /** This rank's per-peer eager buffer, told to each peer in the hello. */
    private final long unexpectedLimit;
    private final ServerSocketChannel listener;
    /** Incarnation of each world rank's process (the transport's): a hello carries the sender's, added to the job token. */
    private final long[] incarnations;
    private volatile IntFunction<InetSocketAddress> addressBook;
    /** Replaced shared-memory conduits whose rings could not be unmapped at once (retried at close). */
    final List<ShmConduit> retired = new java.util.concurrent.CopyOnWriteArrayList<>();

    Connections(PeerTransport t, int rank, PeerLink[] links, Auth auth, long jobToken, Duration connectTimeout,
                long unexpectedLimit, ServerSocketChannel listener, long[] incarnations, AcceptGate.Limits acceptLimits) {
        this.unexpectedLimit = unexpectedLimit;
        this.t = t;
        this.rank = rank;
        this.size = links.length;
        this.links = links;
        this.auth = auth;
        this.jobToken = jobToken;
        this.connectTimeout = connectTimeout;
        this.listener = listener;
        this.acceptLimits = acceptLimits;
        this.gate = newGate();
        this.incarnations = incarnations;
    }

    void setAddressBook(IntFunction<InetSocketAddress> addressBook) {
        this.addressBook = addressBook;
    }

    InetSocketAddress addressOf(int peer) {
        return addressBook.apply(peer);
    }

    Duration connectTimeout() {
        return connectTimeout;
    }

    Wire authenticate(SocketChannel ch, Duration timeout) throws IOException {
        return auth.connect(ch, Auth.DATA, timeout);
    }

    /** Writes our hello (blocking channel): the connection it replaces ({@code epoch}, 0: none) and the last frame received. */
    void writeHello(Wire ch, int peer, byte[] offerName, long epoch, long resume) throws IOException {
        writeHello(ch, peer, offerName, epoch, resume, 0, null);
    }

    /** As above, for rail {@code rail} of the pair (0: the primary link), offering UCX if {@code ucxAddress} is not null. */
    void writeHello(Wire ch, int peer, byte[] offerName, long epoch, long resume, int rail, byte[] ucxAddress) throws IOException {
        HelloDescriptor.writeHello(ch, rank, peer, size, jobToken + incarnations[rank], unexpectedLimit, offerName,
                t.retryMax > 0, epoch, resume, rail, ucxAddress);
    }

    /** Accepts a hello: our file-name prefix if we mapped the offered rings, the connection's number, where we resume. */
    void writeAccept(Wire ch, boolean mapped, long epoch, long resume) throws IOException {
        writeAccept(ch, mapped, epoch, resume, null);
    }

    /** As above, taking the peer's UCX offer with our worker address if {@code ucxAddress} is not null. */
    void writeAccept(Wire ch, boolean mapped, long epoch, long resume, byte[] ucxAddress) throws IOException {
        byte[] me = mapped ? SharedFiles.ownPrefix().getBytes(StandardCharsets.US_ASCII) : new byte[0];
        HelloDescriptor.writeAccept(ch, unexpectedLimit, me, t.retryMax > 0, epoch, resume, ucxAddress);
    }

    PeerLink linkTo(int peer, long deadline) {
        PeerLink l = links[peer];
        if (l.state == PeerLink.State.CONNECTED) return l;
        synchronized (l) {
            while (l.state != PeerLink.State.IDLE) {
                switch (l.state) {
                    case CONNECTED, RECONNECTING -> { return l; }
                    case FAILED, CLOSED -> throw t.failures.peerFailed(peer, "connect to rank " + peer, null);
                    default -> waitOn(l, deadline, peer);
                }
            }
            l.state = PeerLink.State.CONNECTING;
        }
        // network I/O outside the monitor: the acceptor may need it to settle a simultaneous connect
        try {
            connect(l, deadline);
            return l;
        } catch (HcommException e) {
            boolean mine;
            synchronized (l) {
                mine = l.state == PeerLink.State.CONNECTING;
                if (mine) {
                    l.state = PeerLink.State.FAILED;
                    l.notifyAll();
                }
            }
            if (mine && !t.isClosing()) t.failures.linkFailed(l, e, false);
            throw e;
        }
    }

    /**
     * Opens the connection to a peer we wait for but have not talked to yet, so that its death is noticed
     * (connection refused or EOF) instead of waiting out the timeout.
     */
    void connectInBackground(int peer) {
        Thread.ofVirtual().name("hcomm-connect-" + rank).start(() -> {
            try {
                linkTo(peer, System.nanoTime() + connectTimeout.toNanos());
            } catch (HcommException e) {
                PeerTransport.LOG.debug("rank {}: background connect to rank {} failed: {}", rank, peer, e.getMessage());
            }
        });
    }

    void waitOn(PeerLink l, long deadline, int peer) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new io.hcomm4j.CommTimeoutException("rank " + rank + ": connecting to rank " + peer + " timed out");
        }
        try {
            l.wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("rank " + rank + ": interrupted while connecting to rank " + peer, e);
        }
    }

    /**
     * Connects to {@code l.peer} (state CONNECTING, monitor not held); returns once CONNECTED or throws. To a peer of
     * this host it offers a pair of shared-memory rings (a file it creates and names in the hello); whatever the
     * answer, the file is unlinked before this returns (the peer has mapped it, or will not).
     */
    private void connect(PeerLink l, long deadline) {
        ShmOptions so = t.shm();
        ShmConduit.Mapping offer = ringOffer(l.peer);
        boolean[] used = new boolean[1];
        try {
            connect(l, deadline, offer, used);
        } finally {
            dropOffer(so, offer, used[0]);
        }
    }

    /** A ring file to offer {@code peer} if it shares this host and shared memory is on, else null (TCP). */
    ShmConduit.Mapping ringOffer(int peer) {
        ShmOptions so = t.shm();
        if (so == null || !so.sameHost().test(peer)) return null;
        try {
            return ShmConduit.create(so.dir(), rank, peer, jobToken, so.ringBytes());
        } catch (IOException | RuntimeException e) {
            PeerTransport.LOG.warn("rank {}: cannot create a shared-memory ring file for rank {} in {} ({}); using TCP to it", rank, peer,
                    so.dir(), e.toString());
            return null;
        }
    }

    /** The offered ring file goes from the directory (the peer has mapped it, or will not); unmapped unless in use. */
    static void dropOffer(ShmOptions so, ShmConduit.Mapping offer, boolean used) {
        if (offer == null) return;
        ShmConduit.unlink(so.dir(), offer.name());
        if (!used) offer.unmap();
    }

    private void connect(PeerLink l, long deadline, ShmConduit.Mapping offer, boolean[] used) {
        int peer = l.peer;
        InetSocketAddress addr = addressBook.apply(peer);
        byte[] offerName = offer == null ? new byte[0] : offer.name().getBytes(StandardCharsets.US_ASCII);
        IOException last = null;
        long backoff = 10;
        long connectDeadline = Math.min(deadline, System.nanoTime() + connectTimeout.toNanos());
        // stops early if the peer is declared failed meanwhile (another rank reported it)
        while (System.nanoTime() < connectDeadline && !t.isClosing() && l.state == PeerLink.State.CONNECTING) {
            SocketChannel ch = null;
            try {
                ch = SocketChannel.open();
                ch.socket().connect(addr, (int) Math.max(1, Math.min(10_000, (connectDeadline - System.nanoTime()) / 1_000_000)));
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                Wire w = auth.connect(ch, Auth.DATA, Duration.ofSeconds(10));
                UcxEngine ucx = t.ucx();
                writeHello(w, peer, offerName, 0, 0, 0, ucx == null ? null : ucx.address);
                w.readTimeout(10_000);
                HelloDescriptor.Answer a = HelloDescriptor.readAnswer(w.in(), peer);
                if (a.code() == HelloDescriptor.ACCEPT) {
                    if (offer != null && a.peerPrefix() == null) {
                        PeerTransport.LOG.warn("rank {}: rank {} did not map the shared-memory rings offered to it; using TCP to it", rank, peer);
                    }
                    if (ucx != null && a.ucxAddress() == null && (offer == null || a.peerPrefix() == null)) {
                        PeerTransport.LOG.warn("rank {}: rank {} does not use UCX (is HCOMM_TRANSPORT=ucx or auto-ucx set for every rank?); "
                                + "using TCP to it", rank, peer);
                    }
                    Conduit conduit = offer != null && a.peerPrefix() != null
                            ? ShmConduit.of(l, t.progress, w, offer, true, t.shm().dir(), a.peerPrefix())
                            : ucx != null && a.ucxAddress() != null ? UcxConduit.of(l, ucx, w, a.ucxAddress())
                            : new SocketConduit(w, l, t.progress, t.congestion);
                    synchronized (l) {
                        if (l.state == PeerLink.State.FAILED || l.state == PeerLink.State.CLOSED) {
                            // failed (reported by another rank) or closed while we connected
                            discard(conduit);
                            throw t.failures.peerFailed(peer, "connect to rank " + peer, null);
                        }
                        l.install(conduit, a.peerLimit(), reliable(conduit, a.reliable()));
                        used[0] = conduit instanceof ShmConduit;
                    }
                    t.failures.tellNewPeer(l);
                    t.rails.primaryUp(l);
                    return;
                }
                ch.close();
                if (a.code() == HelloDescriptor.REJECT) {
                    // both sides connected at once and the peer (lower rank) keeps its own attempt: wait for it
                    synchronized (l) {
                        while (l.state == PeerLink.State.CONNECTING) waitOn(l, deadline, peer);
                        if (l.state == PeerLink.State.CONNECTED) return;
                    }
                }
                throw t.failures.peerFailed(peer, "connect to rank " + peer, null);
            } catch (Auth.AuthException e) {
                closeQuietly(ch);
                throw new HcommException("rank " + rank + ": rank " + peer + " at " + addr + " failed authentication: "
                        + e.getMessage() + " (do all ranks share HCOMM_SECRET?)", e);
            } catch (IOException e) {
                closeQuietly(ch);
                last = e;
            }
            synchronized (l) {
                if (l.state == PeerLink.State.CONNECTED) return;
                try {
                    l.wait(backoff);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
                if (l.state == PeerLink.State.CONNECTED) return;
            }
            backoff = Math.min(500, backoff * 2);
        }
        if (l.state == PeerLink.State.CONNECTED) return; // the peer's connection was accepted meanwhile
        if (l.state == PeerLink.State.FAILED) throw t.failures.peerFailed(peer, "connect to rank " + peer, last);
        throw new PeerFailedException("rank " + rank + ": cannot connect to rank " + peer + " at " + addr + ": "
                + (last == null ? "t.isClosing()" : last.getMessage()), List.of(peer), last);
    }

    /**
     * Closes a lost, replaced or failed conduit (any thread). Shared-memory rings are unmapped later, where no thread can
     * be copying into them: when the link installs its next connection, or when the transport closes.
     */
    void retire(Conduit old) {
        if (old == null) return;
        try {
            old.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        if (old instanceof ShmConduit c && !c.released() && !retired.contains(c)) retired.add(c);
    }

    /** Closes a conduit that was never installed (nobody else has seen it), rings unmapped at once. */
    static void discard(Conduit c) throws IOException {
        c.close();
        if (c instanceof ShmConduit sc) sc.release();
    }

    /** Unmaps the retired rings of {@code l} (progress token and {@code l}'s tx lock held: nobody touches them). */
    void releaseRetired(PeerLink l) {
        for (ShmConduit c : retired) {
            if (c.link != l || l.ch == c) continue;
            c.release();
            if (c.released()) retired.remove(c);
        }
    }

    /**
     * Close: says BYE on every connection, then waits (until {@code deadline}) for everything to be written and, on
     * reliable links, acknowledged (the peer answers a BYE with an ACK); a connection that drops meanwhile is still
     * re-established (the listener is open until then).
     */
    void sayBye(long deadline) {
        // the primary links first: a rail's chunk may still be needed until its message is acknowledged
        for (PeerLink l : links) l.closeOrderly();
        java.util.List<PeerLink> rails = t.rails.all();
        t.progress.pollUntil(() -> {
            for (PeerLink l : links) {
                PeerLink.State st = l.state;
                if (st == PeerLink.State.RECONNECTING || (st == PeerLink.State.CONNECTED && !l.delivered())) return false;
            }
            return true;
        }, deadline);
        for (PeerLink r : rails) r.closeOrderly();
        t.progress.pollUntil(() -> {
            for (PeerLink r : rails) if (r.state == PeerLink.State.CONNECTED && !r.delivered()) return false;
            return true;
        }, Math.min(deadline, System.nanoTime() + 200_000_000L));
    }

    /** Unmaps every retired ring at close (progress token held), each under its link's tx lock: no sender copies into it. */
    void releaseAllRetired() {
        for (ShmConduit c : retired) {
            c.link.txLock.lock();
            try {
                c.release();
            } finally {
                c.link.txLock.unlock();
            }
        }
        retired.clear();
    }

    /** The data listener's gate (pending handshakes, refusals): for tests. */
    final AcceptGate gate;
    private final AcceptGate.Limits acceptLimits;

    private AcceptGate newGate() {
        return new AcceptGate(acceptLimits, PeerTransport.LOG, "rank " + rank, "data connection");
    }

    void acceptLoop() {
        acceptLoop(listener, gate);
    }

    /** Accepts on {@code listener} (one of another interface: {@link Rails}) until close, through a gate of its own. */
    void acceptLoop(ServerSocketChannel listener) {
        acceptLoop(listener, newGate());
    }

    private void acceptLoop(ServerSocketChannel listener, AcceptGate gate) {
        try {
            AcceptGate.Admitted a;
            while ((a = gate.next(listener, t::linksClosing)) != null) {
                AcceptGate.Admitted admitted = a;
                Thread.ofVirtual().name("hcomm-hello-" + rank).start(() -> {
                    try (AcceptGate.Pass pass = admitted.pass()) {
                        handshake(admitted.channel(), gate);
                    }
                });
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void handshake(SocketChannel ch, AcceptGate gate) {
        String from = "?";
        try {
            from = String.valueOf(ch.getRemoteAddress());
            Duration deadline = gate.limits().deadline();
            Wire w = auth.accept(ch, Auth.DATA, deadline);
            w.readTimeout((int) deadline.toMillis());
            HelloDescriptor.Hello hello = HelloDescriptor.readHello(w.in());
            int src = hello.source();
            if (hello.magic() != HelloDescriptor.MAGIC || hello.limit() < 0 || hello.destination() != rank || hello.worldSize() != size
                    || src < 0 || src >= size || src == rank || hello.token() != jobToken + incarnations[src]) {
                throw new IOException("hello from a rank of another job or communicator (magic 0x" + Integer.toHexString(hello.magic())
                        + ", src " + src + ", dst " + hello.destination() + ", size " + hello.worldSize() + ", limit " + hello.limit()
                        + "; here: rank " + rank + " of " + size + ")");
            }
            long peerLimit = hello.limit();
            if (hello.rail() != 0) {
                t.rails.accept(w, src, hello.rail(), peerLimit, hello.ringFile() == null && hello.epoch() == 0);
                return;
            }
            String ringFile = hello.ringFile();
            long epoch = hello.epoch();
            long resume = hello.resume();
            boolean peerReliable = hello.reliable();
            ShmOptions so = t.shm();
            ShmConduit.Mapping mapped = null;
            String peerPrefix = null;
            if (ringFile != null && so != null && so.sameHost().test(src)) {
                try {
                    peerPrefix = SharedFiles.ownerPrefix(ringFile);
                    if (peerPrefix == null) throw new IOException("'" + ringFile + "' is not a ring file name");
                    mapped = ShmConduit.attach(so.dir(), ringFile, src, rank, jobToken);
                } catch (IOException | RuntimeException ex) {
                    PeerTransport.LOG.warn("rank {}: cannot map the shared-memory rings rank {} offered ({}); using TCP to it", rank, src, ex.toString());
                }
            }
            PeerLink l = links[src];
            boolean used = false;
            try {
                if (epoch == 0) {
                    used = acceptNew(w, l, src, peerLimit, peerReliable, mapped, peerPrefix, so, hello.ucxAddress());
                    if (l.state == PeerLink.State.CONNECTED) {
                        t.failures.tellNewPeer(l);
                        t.rails.primaryUp(l);
                    }
                } else {
                    used = t.reconnector.acceptReconnect(w, l, src, epoch, resume, peerReliable, mapped, peerPrefix, so);
                }
            } finally {
                if (mapped != null && !used) mapped.unmap();
            }
        } catch (Auth.AuthException e) {
            gate.refused(from, e.getMessage());
            closeQuietly(ch);
        } catch (IOException e) {
            if (!t.isClosing()) gate.refused(from, e.toString());
            closeQuietly(ch);
        }
    }

    /**
     * Whether a new link over {@code conduit} keeps a resend log and is re-established when dropped: with retries on
     * both sides, and only over TCP. Shared-memory rings lose nothing while both processes live, and the pair's
     * loopback socket (doorbell and death detector) ends only when a process does; so a link over shared memory has no
     * resend log (it costs the hot path: 8 B ping-pong 0.47-0.83 us with it, 0.41-0.48 us without) and a dropped one
     * means a failed peer. Both sides see the same conduit kind, so they agree.
     */
    boolean reliable(Conduit conduit, boolean peerReliable) {
        return t.retryMax > 0 && peerReliable && !(conduit instanceof Doorbelled);
    }

    /** A first connection from {@code src}: taken unless ours is under way and we are the lower rank; true if the rings are used. */
    private boolean acceptNew(Wire ch, PeerLink l, int src, long peerLimit, boolean peerReliable,
                              ShmConduit.Mapping mapped, String peerPrefix, ShmOptions so, byte[] peerUcx) throws IOException {
        synchronized (l) {
            boolean keepOurs = l.state == PeerLink.State.CONNECTING && rank < src;
            if (l.state == PeerLink.State.IDLE || (l.state == PeerLink.State.CONNECTING && !keepOurs)) {
                UcxEngine ucx = mapped == null && peerUcx != null ? t.ucx() : null;
                if (peerUcx != null && t.ucx() == null && mapped == null) {
                    PeerTransport.LOG.warn("rank {}: rank {} offers UCX, which this rank does not use (is HCOMM_TRANSPORT=ucx or "
                            + "auto-ucx set for every rank?); using TCP to it", rank, src);
                }
                writeAccept(ch, mapped != null, 1, 0, ucx == null ? null : ucx.address);
                Conduit conduit = mapped != null ? ShmConduit.of(l, t.progress, ch, mapped, false, so.dir(), peerPrefix)
                        : ucx != null ? UcxConduit.of(l, ucx, ch, peerUcx)
                        : new SocketConduit(ch, l, t.progress, t.congestion);
                l.install(conduit, peerLimit, reliable(conduit, peerReliable));
                return mapped != null;
            }
            HelloDescriptor.writeRefusal(ch, HelloDescriptor.REJECT);
            return false;
        }
    }

    static void closeQuietly(SocketChannel ch) {
        if (ch == null) return;
        try {
            ch.close();
        } catch (IOException ignored) {
            // nothing more to do
        }
    }
}
