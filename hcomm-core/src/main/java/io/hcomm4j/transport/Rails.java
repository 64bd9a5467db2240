package io.hcomm4j.transport;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import io.hcomm4j.security.Wire;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The extra TCP links to a peer beside its primary link: rails. {@code HCOMM_SOCKET_IFNAME=a,b} gives this rank an
 * address on each interface (the first is the primary link's; each other one has a listener of its own), and
 * {@code HCOMM_CHANNELS=n} makes n connections per interface: {@code interfaces x n} links per peer. Once the primary link
 * to a peer is up, the lower rank of the pair opens the rails: rail k from its interface {@code k mod m} to the peer's
 * address on its interface {@code k mod m'}. The links to a peer share its {@link DataPump}: large messages are striped
 * over them in chunks, each link taking chunks as fast as it drains, so the split follows each link's throughput, now
 * and when it changes; everything else (the envelope of every message, small messages, control frames) stays on the
 * primary link, so ordering and matching do not change.
 *
 * <p>A rail carries chunks, their acknowledgements, heartbeats, latency probes and its BYE only, and keeps no resend log: when it fails
 * (its connection breaks, it is silent for half of HCOMM_HEARTBEAT_TIMEOUT, or a chunk on it waits
 * {@link #STALL_NANOS} for its acknowledgement: a downed interface), the chunks it had in flight go again over the
 * other links ({@link DataPump#removeLink}; the receiver drops any that came already), the ops go on, and the lower
 * rank opens it again every {@link #RETRY_NANOS} until it is back. The peer fails only with its primary link.
 *
 * <p>When the primary link's own interface fails, its reconnect goes over another ({@link #reconnectRoute}) and stays
 * there. Its first interface then carries nothing: the lower rank opens a stand-in rail there (index {@code count},
 * which maps to the first interface), again every {@link #RETRY_NANOS} until the interface is back, so the link comes
 * back into use without moving the primary link (and its ordered traffic) a second time.
 *
 * <p>The primary link should be the one that delivers small messages soonest: once the rails are up, the lower rank
 * probes each link's latency and moves the primary link to another interface if that one answers clearly sooner
 * ({@link #probe}).
 */
final class Rails {
    /** Most links to one peer (the hello has 8 bits for the rail's index). */
    static final int MAX = 16;
    /** A chunk unacknowledged this long on a rail whose peer is otherwise alive: the rail is taken for failed. */
    static final long STALL_NANOS = 1_000_000_000L;
    /** Between attempts to open a rail again. */
    static final long RETRY_NANOS = 1_000_000_000L;
    private static final int CONNECT_MILLIS = 2_000;
    /** Latency probes per link after the rails came up (the shortest round trip counts). */
    static final int PROBE_ROUNDS = 8;
    /** Longest wait for the rails to come up, and for one probe's reply. */
    private static final long PROBE_WAIT_NANOS = 5_000_000_000L;
    private static final long PROBE_REPLY_NANOS = 500_000_000L;
    /** Longest wait for a moment without chunks to the peer, to probe in ({@link #probe}). */
    private static final long QUIET_WAIT_NANOS = 60_000_000_000L;
    /**
     * The primary link moves to another interface only if a probe there came back in less than half the time it took
     * on the primary's own, and at least this much sooner (idle links of one kind differ by noise only).
     */
    static final long MOVE_MIN_GAIN_NANOS = 200_000;

    private final PeerTransport t;
    private final int rank;
    /** This rank's address per interface; the first is the primary link's. */
    private List<InetAddress> binds = List.of();
    private final List<ServerSocketChannel> listeners = new ArrayList<>();
    private final List<Thread> acceptors = new ArrayList<>();
    /** Links per peer (1: no rails). */
    private volatile int count = 1;
    /** Each peer's address per interface. */
    private volatile IntFunction<List<InetSocketAddress>> addresses;
    /** Each peer's addresses on its further interfaces (null: none published). */
    private volatile IntFunction<List<InetSocketAddress>> further;
    /** [peer][k]: rail k to the peer, or null (index 0 is the primary link's, unused here). Guarded by this. */
    private final PeerLink[][] rails;
    /** [peer][k]: when rail k may be opened again (the lower rank only); 0: not to be opened. */
    private final long[][] retryAt;
    /** [peer][k]: an attempt to open rail k is under way (the lower rank only). */
    private final boolean[][] opening;
    /** [peer]: the interface the primary link's next reconnect goes to first (-1: the usual order). */
    private final int[] moveTo;
    /** [peer]: the primary link was moved to the lowest-latency interface once (never again in this session). */
    private final boolean[] moved;
    /** [peer][k]: bytes read from rail k when the watchdog last looked, and since when that has not changed. */
    private final long[][] rxSeen;
    private final long[][] heardAt;

    Rails(PeerTransport t, int rank, int size) {
        this.t = t;
        this.rank = rank;
        this.rails = new PeerLink[size][];
        this.retryAt = new long[size][];
        this.opening = new boolean[size][];
        this.rxSeen = new long[size][];
        this.heardAt = new long[size][];
        this.moveTo = new int[size];
        java.util.Arrays.fill(moveTo, -1);
        this.moved = new boolean[size];
    }

    /**
     * Sets the links per peer: {@code binds} this rank's address on each interface (the primary link's first), each but
     * the first with a listener of its own opened now; {@code channels} connections per interface.
     */
    void configure(InetAddress primary, List<InetAddress> further, int channels) {
        List<InetAddress> binds = new ArrayList<>();
        binds.add(primary);
        binds.addAll(further);
        try {
            configure(binds, channels);
        } catch (IOException e) {
            throw new io.hcomm4j.HcommException("rank " + rank + ": cannot listen on " + further + " for the rails: "
                    + e.getMessage(), e);
        }
    }

    private void configure(List<InetAddress> binds, int channels) throws IOException {
        if (binds.isEmpty() || channels < 1 || binds.size() * channels > MAX) {
            throw new IllegalArgumentException("rank " + rank + ": " + binds.size() + " interfaces x " + channels
                    + " channels: between 1 and " + MAX + " links per peer");
        }
        this.binds = List.copyOf(binds);
        for (InetAddress a : binds.subList(1, binds.size())) {
            ServerSocketChannel l = ServerSocketChannel.open();
            l.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            l.bind(new InetSocketAddress(a, 0), 64);
            listeners.add(l);
        }
        this.count = binds.size() * channels;
    }

    /** Where peers reach this rank on each interface but the first (whose address is the primary listener's). */
    List<InetSocketAddress> listenAddresses() {
        List<InetSocketAddress> out = new ArrayList<>();
        for (ServerSocketChannel l : listeners) {
            try {
                out.add((InetSocketAddress) l.getLocalAddress());
            } catch (IOException e) {
                throw new io.hcomm4j.HcommException("rank " + rank + ": a rail listener is closed", e);
            }
        }
        return out;
    }

    /** Each peer's listen addresses on its further interfaces (what it published), set before {@link #start}. */
    void setBook(IntFunction<List<InetSocketAddress>> further) {
        this.further = further;
    }

    /** Starts accepting on the listeners of the other interfaces; {@code primary} gives each peer's primary address. */
    void start(IntFunction<InetSocketAddress> primary) {
        this.addresses = p -> {
            List<InetSocketAddress> all = new ArrayList<>();
            all.add(primary.apply(p));
            IntFunction<List<InetSocketAddress>> f = further;
            if (f != null) all.addAll(f.apply(p));
            return all;
        };
        for (int i = 0; i < listeners.size(); i++) {
            ServerSocketChannel l = listeners.get(i);
            Thread a = Thread.ofPlatform().daemon().name("hcomm-accept-" + rank + "-" + (i + 1))
                    .start(() -> t.connections.acceptLoop(l));
            acceptors.add(a);
        }
    }

    /** The primary link to {@code l.peer} is up: the lower rank opens the rails (over TCP only). */
    void primaryUp(PeerLink l) {
        if (count <= 1 || rank > l.peer || !(l.ch instanceof SocketConduit)) return;
        for (int k = 1; k < count; k++) openInBackground(l.peer, k);
        boolean probe;
        synchronized (this) {
            probe = binds.size() > 1 && !moved[l.peer];
            moved[l.peer] = true; // one probe per peer (a reconnect brings the primary up again: no second one)
        }
        if (probe) Thread.ofVirtual().name("hcomm-probe-" + rank).start(() -> probe(l.peer));
    }

    /**
     * Small messages go over the primary link; so that is the link that delivers them soonest: once the rails to
     * {@code peer} are up, each link gets {@link #PROBE_ROUNDS} latency probes ({@link Frame#ECHO}, a small message's
     * size), and if one on another interface came back clearly sooner ({@link #MOVE_MIN_GAIN_NANOS}, under half the
     * primary's time) the primary link is re-established over that interface ({@link PeerLink#move}: its resend log
     * keeps order and loses nothing). Its old interface then gets a stand-in rail ({@link #displaced}), so it still
     * carries chunks.
     *
     * <p>Only while no chunks move to the peer (waiting up to {@link #QUIET_WAIT_NANOS} for such a moment): a probe behind
     * a bulk transfer measures the transfer's queue on its link, not the link, and a job that starts streaming before its
     * rails are up has all of it queued on the primary link (the primary then moved for good on a transient queue).
     */
    private void probe(int peer) {
        try {
            long deadline = System.nanoTime() + PROBE_WAIT_NANOS;
            while (up(peer).size() < count - 1 && System.nanoTime() - deadline < 0 && !t.isClosing()) Thread.sleep(10);
            PeerLink primary = t.links()[peer];
            deadline = System.nanoTime() + QUIET_WAIT_NANOS;
            while (!primary.pump.idle() && System.nanoTime() - deadline < 0 && !t.isClosing()) Thread.sleep(10);
            if (!primary.pump.idle()) {
                PeerTransport.LOG.debug("rank {}: the links to rank {} were never free of chunks for a latency probe", rank, peer);
                return;
            }
            List<PeerLink> links = new ArrayList<>();
            links.add(primary);
            links.addAll(up(peer));
            boolean[] quiet = {true};
            if (!measure(links, quiet)) return;
            if (quiet[0] && preferLowestLatency(peer, primary, links)) {
                // its round trip over the new route, for linksTo and hcomm perf
                deadline = System.nanoTime() + PROBE_WAIT_NANOS;
                while (primary.state != PeerLink.State.CONNECTED && System.nanoTime() - deadline < 0 && !t.isClosing()) {
                    Thread.sleep(10);
                }
                measure(List.of(primary), new boolean[1]);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            PeerTransport.LOG.debug("rank {}: probing the links to rank {} failed: {}", rank, peer, e.toString());
        }
    }

    /**
     * {@link #PROBE_ROUNDS} rounds of one probe on each link, each round waiting for its replies; false if closing.
     * {@code quiet[0]} is cleared if chunks to the peer were queued or in flight at a round's start or end.
     */
    private boolean measure(List<PeerLink> links, boolean[] quiet) throws InterruptedException {
        int[] seen = new int[links.size()];
        DataPump pump = links.getFirst().pump;
        for (int round = 0; round < PROBE_ROUNDS; round++) {
            if (!pump.idle()) quiet[0] = false;
            for (int i = 0; i < links.size(); i++) {
                PeerLink l = links.get(i);
                seen[i] = l.echoes();
                if (l.state == PeerLink.State.CONNECTED && !t.isClosing()) l.sendEcho();
            }
            long until = System.nanoTime() + PROBE_REPLY_NANOS;
            for (int i = 0; i < links.size(); i++) {
                PeerLink l = links.get(i);
                while (l.echoes() == seen[i] && l.state == PeerLink.State.CONNECTED && System.nanoTime() - until < 0
                        && !t.isClosing()) {
                    java.util.concurrent.locks.LockSupport.parkNanos(200_000);
                }
            }
            if (t.isClosing()) return false;
            if (!pump.idle()) quiet[0] = false;
            Thread.sleep(5); // the links drain between rounds
        }
        return true;
    }

    /** Moves the primary link to the interface whose probes came back clearly soonest; true if it is moving. */
    private boolean preferLowestLatency(int peer, PeerLink primary, List<PeerLink> links) {
        long own = primary.echoNanos();
        int from = interfaceOf(primary);
        if (own == 0 || from < 0 || primary.state != PeerLink.State.CONNECTED) return false;
        PeerLink best = primary;
        for (PeerLink l : links) {
            long rtt = l.echoNanos();
            if (rtt != 0 && l.state == PeerLink.State.CONNECTED && rtt < best.echoNanos()) best = l;
        }
        int to = interfaceOf(best);
        long gain = own - best.echoNanos();
        if (best == primary || to < 0 || to == from || 2 * best.echoNanos() >= own || gain < MOVE_MIN_GAIN_NANOS) return false;
        synchronized (this) {
            moveTo[peer] = to;
        }
        String why = String.format("small messages to rank %d go over %s from now: a %d-byte probe came back in %.3f ms there "
                + "against %.3f ms over %s; moving the primary link", peer, binds.get(to).getHostAddress(), Frame.ECHO_BYTES,
                best.echoNanos() / 1e6, own / 1e6, binds.get(from).getHostAddress());
        if (primary.move(why)) return true;
        synchronized (this) {
            moveTo[peer] = -1;
        }
        return false;
    }

    /** Which of this rank's interfaces {@code l} goes out on (index into binds), or -1. */
    private int interfaceOf(PeerLink l) {
        return l.ch instanceof SocketConduit s && s.local != null ? binds.indexOf(s.local) : -1;
    }

    private void openInBackground(int peer, int k) {
        synchronized (this) {
            slots(peer);
            retryAt[peer][k] = 0;
            opening[peer][k] = true;
        }
        Thread.ofVirtual().name("hcomm-rail-" + rank).start(() -> {
            try {
                open(peer, k);
            } finally {
                synchronized (this) {
                    if (opening[peer] != null) opening[peer][k] = false;
                }
            }
        });
    }

    /** Opens rail {@code k} to {@code peer} (this is the lower rank); on failure, tries again later. */
    private void open(int peer, int k) {
        PeerLink primary = t.links()[peer];
        IntFunction<List<InetSocketAddress>> book = addresses;
        if (primary.state != PeerLink.State.CONNECTED || t.isClosing() || book == null) return;
        int iface = k % binds.size();
        List<InetSocketAddress> theirs = book.apply(peer);
        InetSocketAddress to = theirs.get(iface % theirs.size());
        SocketChannel ch = null;
        try {
            ch = SocketChannel.open();
            if (binds.size() > 1) ch.bind(new InetSocketAddress(binds.get(iface), 0));
            ch.socket().connect(to, CONNECT_MILLIS);
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            Wire w = t.connections.authenticate(ch, Duration.ofSeconds(10));
            t.connections.writeHello(w, peer, new byte[0], 0, 0, k, null);
            w.readTimeout(10_000);
            HelloDescriptor.Answer a = HelloDescriptor.readAnswer(w.in(), peer);
            if (a.code() != HelloDescriptor.ACCEPT) throw new IOException("rank " + peer + " turned the rail down");
            install(peer, k, w, a.peerLimit());
        } catch (IOException | RuntimeException e) {
            Connections.closeQuietly(ch);
            PeerTransport.LOG.debug("rank {}: cannot open rail {} to rank {} at {}: {}", rank, k, peer, to, e.toString());
            synchronized (this) {
                retryAt[peer][k] = System.nanoTime() + RETRY_NANOS;
            }
        }
    }

    /** A rail hello from {@code src}: taken if this rank has rails, {@code src} is the lower rank and the primary is up. */
    void accept(Wire ch, int src, int k, long peerLimit, boolean plain) throws IOException {
        PeerLink primary = t.links()[src];
        if (!plain || k >= MAX || src > rank || primary.state != PeerLink.State.CONNECTED
                || !(primary.ch instanceof SocketConduit)) {
            HelloDescriptor.writeRefusal(ch, HelloDescriptor.REJECT);
            return;
        }
        HelloDescriptor.writeAccept(ch, t.host.unexpectedLimit(), new byte[0], false, 1, 0, null);
        install(src, k, ch, peerLimit);
    }

    private void install(int peer, int k, Wire ch, long peerLimit) throws IOException {
        PeerLink primary = t.links()[peer];
        PeerLink rail = new PeerLink(t.host, peer, k, primary);
        PeerLink old;
        synchronized (this) {
            PeerLink[] mine = slots(peer);
            old = mine[k];
            mine[k] = rail;
            retryAt[peer][k] = 0;
            heardAt[peer][k] = 0;
        }
        if (old != null) lost(old, new IOException("replaced by a new connection"));
        SocketConduit c = new SocketConduit(ch, rail, t.progress, t.congestion);
        synchronized (rail) {
            rail.install(c, peerLimit, false);
        }
        if (primary.state != PeerLink.State.CONNECTED || t.isClosing()) {
            lost(rail, new IOException("the primary link went meanwhile"));
            return;
        }
        primary.pump.addLink(rail);
        PeerTransport.LOG.debug("rank {}: rail {} to rank {} up ({})", rank, k, peer, c.route);
    }

    private PeerLink[] slots(int peer) {
        if (rails[peer] == null) {
            rails[peer] = new PeerLink[MAX];
            retryAt[peer] = new long[MAX];
            opening[peer] = new boolean[MAX];
            rxSeen[peer] = new long[MAX];
            heardAt[peer] = new long[MAX];
        }
        return rails[peer];
    }

    /**
     * Rail {@code rail} failed: its connection closes, the chunks it had in flight go over the other links, and the
     * lower rank opens it again later.
     */
    void lost(PeerLink rail, Exception cause) {
        synchronized (rail) {
            if (rail.state == PeerLink.State.FAILED || rail.state == PeerLink.State.CLOSED) return;
            rail.state = PeerLink.State.FAILED;
            rail.notifyAll();
        }
        rail.closeChannel();
        failures.incrementAndGet();
        int again = rail.pump.removeLink(rail);
        boolean quiet = t.isClosing() || rail.peerSaidBye || t.failed(rail.peer);
        if (!quiet) {
            PeerTransport.LOG.warn("rank {}: rail {} to rank {} failed ({}); {} chunk(s) in flight go again over the other "
                    + "links{}", rank, rail.rail, rail.peer, cause.getMessage(), again,
                    rank < rail.peer ? ", and it is opened again every " + RETRY_NANOS / 1_000_000 + " ms until it is back" : "");
        }
        synchronized (this) {
            if (rails[rail.peer] != null && rails[rail.peer][rail.rail] == rail && rank < rail.peer && !quiet) {
                retryAt[rail.peer][rail.rail] = System.nanoTime() + RETRY_NANOS;
            }
        }
    }

    /**
     * Watchdog tick: heartbeats on idle rails ({@code beat}), failure of one silent for {@code silentNanos} (0: not
     * checked; negative: this process stalled, nothing is checked) or stalled, and another attempt at each failed one
     * whose time came.
     */
    void tick(long now, boolean beat, long silentNanos) {
        if (count <= 1) return;
        List<PeerLink> live = new ArrayList<>();
        List<int[]> reopen = null;
        synchronized (this) {
            for (int p = 0; p < rails.length; p++) {
                PeerLink[] mine = rails[p];
                if (mine == null) continue;
                PeerLink primary = t.links()[p];
                boolean primaryUp = primary.state == PeerLink.State.CONNECTED;
                boolean displaced = displaced(primary);
                // the stand-in for a primary link that moved off its interface: opened once, then like any rail
                if (displaced && rank < p && count < MAX && mine[count] == null && retryAt[p][count] == 0 && !opening[p][count]) {
                    retryAt[p][count] = now;
                }
                for (int k = 1; k < MAX; k++) {
                    PeerLink r = mine[k];
                    if (r != null && r.state == PeerLink.State.CONNECTED) {
                        live.add(r);
                    } else if (retryAt[p][k] != 0 && now - retryAt[p][k] >= 0 && primaryUp && rank < p && !t.isClosing()
                            && (k < count || displaced)) {
                        retryAt[p][k] = 0;
                        if (reopen == null) reopen = new ArrayList<>();
                        reopen.add(new int[] {p, k});
                    }
                }
            }
        }
        // outside the monitor: a heartbeat takes the rail's tx lock, and a failure its monitor and the pump's
        for (PeerLink r : live) {
            int p = r.peer, k = r.rail;
            if (beat) r.heartbeatIfIdle();
            long rx = r.rxProgress();
            if (heardAt[p] == null) continue; // forgotten meanwhile
            if (heardAt[p][k] == 0 || rx != rxSeen[p][k]) {
                rxSeen[p][k] = rx;
                heardAt[p][k] = now;
            }
            if (silentNanos < 0) continue; // this process itself stalled: nothing is held against the rails
            long waiting = r.pump.waitingSince(r.lane);
            if (waiting != 0 && now - waiting > STALL_NANOS) {
                lost(r, new IOException("a chunk waited " + (now - waiting) / 1_000_000 + " ms for its acknowledgement"));
            } else if (silentNanos > 0 && now - heardAt[p][k] > silentNanos) {
                lost(r, new IOException("nothing came for " + (now - heardAt[p][k]) / 1_000_000 + " ms"));
            }
        }
        if (reopen != null) for (int[] pk : reopen) openInBackground(pk[0], pk[1]);
    }

    /** Whether {@code primary} is a TCP link that went out on another interface than the first (after a failover). */
    private boolean displaced(PeerLink primary) {
        return binds.size() > 1 && primary.state == PeerLink.State.CONNECTED && primary.ch instanceof SocketConduit s
                && s.local != null && !s.local.equals(binds.get(0));
    }

    /** Rails given up so far (diagnostics, tests). */
    final java.util.concurrent.atomic.AtomicLong failures = new java.util.concurrent.atomic.AtomicLong();

    /**
     * Where reconnect attempt {@code attempt} (1, 2, ...) of the primary link to {@code peer} goes with several
     * interfaces: {local address to bind, the peer's address} on interface {@code (attempt - 1) mod m}, so a primary link
     * whose interface failed comes back over another; null with one interface (the peer's primary address, as ever).
     */
    InetSocketAddress[] reconnectRoute(int peer, int attempt) {
        List<InetAddress> mine = binds;
        IntFunction<List<InetSocketAddress>> book = addresses;
        if (mine.size() < 2 || book == null) return null;
        int iface = (attempt - 1) % mine.size();
        synchronized (this) {
            // a move: its first attempt goes where the probes said; any further one in the usual order
            if (attempt == 1 && moveTo[peer] >= 0) iface = moveTo[peer];
            moveTo[peer] = -1;
        }
        List<InetSocketAddress> theirs = book.apply(peer);
        return new InetSocketAddress[] {new InetSocketAddress(mine.get(iface), 0), theirs.get(iface % theirs.size())};
    }

    /** Rail {@code k} to {@code peer}, or null. */
    synchronized PeerLink rail(int peer, int k) {
        return rails[peer] == null ? null : rails[peer][k];
    }

    /** The links to {@code primary.peer} that are up, the primary first, with their routes, rates and chunk bytes. */
    List<LinkStats> stats(PeerLink primary) {
        List<PeerLink> all = new ArrayList<>();
        if (primary.state == PeerLink.State.CONNECTED) all.add(primary);
        all.addAll(up(primary.peer));
        List<LinkStats> out = new ArrayList<>();
        for (PeerLink l : all) {
            Conduit c = l.ch;
            String route = c instanceof SocketConduit s ? s.route : c == null ? "-" : c.kind();
            out.add(new LinkStats(l.rail, c == null ? "none" : c.kind(), route, l.pump.rate(l.lane), l.pump.bytes(l.lane),
                    l.echoNanos(), c instanceof SocketConduit s ? s.unsentLimit() : 0, c instanceof SocketConduit s ? s.congestion : ""));
        }
        return out;
    }

    /** Test hook: breaks rail {@code k} to {@code peer} now, as {@code how} says; false if it is not up. */
    boolean drop(int peer, int k, Conduit.Drop how) {
        PeerLink r = rail(peer, k);
        return r != null && r.drop(how);
    }

    /** Test hook: rail {@code k} to {@code peer} reads nothing more, as if its packets stopped arriving; false if it is not up. */
    boolean deafen(int peer, int k) {
        PeerLink r = rail(peer, k);
        if (r == null || !(r.ch instanceof SocketConduit c)) return false;
        c.stopReading();
        return true;
    }

    /** The rails to {@code peer} that are up, in order. */
    synchronized List<PeerLink> up(int peer) {
        List<PeerLink> out = new ArrayList<>();
        PeerLink[] mine = rails[peer];
        if (mine == null) return out;
        for (int k = 1; k < MAX; k++) if (mine[k] != null && mine[k].state == PeerLink.State.CONNECTED) out.add(mine[k]);
        return out;
    }

    /** Every rail that is up, to any peer. */
    synchronized List<PeerLink> all() {
        List<PeerLink> out = new ArrayList<>();
        for (int p = 0; p < rails.length; p++) out.addAll(up(p));
        return out;
    }

    /** The peer failed or left (its primary link is gone): its rails close and are not opened again. */
    void close(int peer) {
        List<PeerLink> gone;
        synchronized (this) {
            gone = up(peer);
            if (retryAt[peer] != null) java.util.Arrays.fill(retryAt[peer], 0);
        }
        for (PeerLink r : gone) lost(r, new IOException("rank " + peer + " is gone"));
    }

    /** A replacement takes {@code peer}'s slot: its old rails are forgotten. */
    synchronized void forget(int peer) {
        rails[peer] = null;
        retryAt[peer] = null;
        opening[peer] = null;
        moved[peer] = false;
        moveTo[peer] = -1;
        rxSeen[peer] = null;
        heardAt[peer] = null;
    }

    /** Session close: the listeners close and every rail is marked closed. */
    void closeAll() {
        for (ServerSocketChannel l : listeners) {
            try {
                l.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
        for (Thread a : acceptors) a.interrupt();
        for (PeerLink r : all()) r.markClosed();
    }
}
