package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import io.hcomm4j.security.Auth;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * One connection of a {@link TcpStore} client to its server: opened and authenticated by {@link #open}, introduced
 * by {@link #hello}. The streams are buffered; the channel stays blocking except during {@link #probe}.
 */
record StoreConnection(SocketChannel channel, DataInputStream in, DataOutputStream out) {
    /** Bounds of the handshake's deadline: whatever is left of the caller's, but no less than the minimum. */
    static final Duration HANDSHAKE_MAX = Duration.ofSeconds(10);
    private static final Duration HANDSHAKE_MIN = Duration.ofSeconds(1);
    /** The server may first wait up to this long for the thread of the client's previous connection to end. */
    private static final Duration SERVER_SUPERSEDE = Duration.ofSeconds(5);
    private static final int BUFFER_BYTES = 8192;
    /** A server that drops us this often during the handshake is refusing our secret, not starting up. */
    static final int MAX_HANDSHAKE_DROPS = 3;
    static final long BACKOFF_START_MS = 10;
    static final long BACKOFF_MAX_MS = 500;

    /** What one connection attempt got to: the resolved target, and whether TCP connected. */
    static final class Attempt {
        InetSocketAddress target;
        boolean connected;
    }

    /** The server's answer to HELLO. */
    record Hello(long incarnation, byte state) {
    }

    /** A client's first connection, introduced: where it went, the server's incarnation, after how many attempts. */
    record First(StoreConnection conn, InetSocketAddress target, InetAddress localAddress, long incarnation, int attempts) {
    }

    /**
     * Connects client {@code clientId} to the server at {@code address}, retrying with backoff until it answers or
     * {@code deadline} ({@code timeout} from the start, for messages) passes: ranks may start before the server.
     *
     * @throws CommTimeoutException no server answered within the timeout
     * @throws HcommException       the server refused the secret or the client (or is not an HComm4J store)
     */
    static First connectFirst(InetSocketAddress address, Auth auth, long deadline, Duration timeout, long clientId) {
        long backoff = BACKOFF_START_MS;
        int handshakeDrops = 0;
        Exception last = null;
        int attempts = 0;
        boolean connected = false;
        while (true) {
            attempts++;
            Attempt a = new Attempt();
            try {
                StoreConnection c = open(address, auth, deadline, a, null);
                try {
                    InetAddress local = ((InetSocketAddress) c.channel.getLocalAddress()).getAddress();
                    return new First(c, a.target, local, c.hello(clientId, 0).incarnation(), attempts);
                } catch (IOException | RuntimeException e) {
                    c.close();
                    throw e;
                }
            } catch (Auth.AuthException e) {
                if (!e.getMessage().contains("closed the connection")) {
                    String hint = e.getMessage().contains("secret")
                            ? "is HCOMM_SECRET the same on every rank and the launcher?"
                            : "is another service listening on that port?";
                    throw new HcommException("store at " + hostPort(address) + " failed the handshake: " + e.getMessage()
                            + " (" + hint + ")", e);
                }
                last = e;
                if (++handshakeDrops >= MAX_HANDSHAKE_DROPS) throw secretRejected(address, handshakeDrops, e);
            } catch (IOException | RuntimeException e) {
                if (e instanceof StoreRequest.ServerError se) throw new HcommException("store at " + hostPort(address) + " refused this client: " + se.getMessage(), se);
                last = e;
                connected = a.connected;
                // The acceptor checks our proof first and just hangs up on a wrong secret, so a wrong secret looks
                // like a dropped connection; a few of those in a row means it is not a start-up race. A close before the
                // server's first bytes (Auth.RefusedException: its accept gate has enough from our address) is not one.
                boolean dropped = a.connected && (e instanceof EOFException || e instanceof SocketException);
                if (dropped && ++handshakeDrops >= MAX_HANDSHAKE_DROPS) throw secretRejected(address, handshakeDrops, e);
            }
            long leftMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (leftMs <= 0) {
                // Something accepted the connection but never started the handshake: not our store.
                String hint = connected && !(last instanceof EOFException || last instanceof SocketException || last instanceof Auth.RefusedException)
                        ? "; a server accepted the connection but did not speak the HComm4J handshake: is another "
                        + "service on that port (under torchrun MASTER_PORT is torch's own store: set HCOMM_STORE_PORT)?"
                        : "";
                throw new CommTimeoutException("could not connect to the store at " + hostPort(address) + " within "
                        + human(timeout) + " (" + attempts + " attempts); last error: " + last + hint);
            }
            try {
                Thread.sleep(Math.min(backoff, leftMs));
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new HcommException("interrupted while connecting to the store at " + hostPort(address));
            }
            backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
        }
    }

    private static HcommException secretRejected(InetSocketAddress address, int drops, Exception last) {
        return new HcommException("store at " + hostPort(address) + " closed the connection during the handshake "
                + drops + " times: it most likely rejected the job secret (is HCOMM_SECRET "
                + "the same on every rank and the launcher?); last error: " + last, last);
    }

    /**
     * One attempt: resolves {@code address} (again each time: the store's host name may not resolve until its node is
     * up), connects and proves the secret, all before {@code deadline}. {@code owner}, if not null, is the client that
     * publishes the channel while it connects, so that its {@link TcpStore#close()} can abort it.
     */
    static StoreConnection open(InetSocketAddress address, Auth auth, long deadline, Attempt a, TcpStore owner) throws IOException {
        InetSocketAddress target = address.isUnresolved()
                ? new InetSocketAddress(address.getHostString(), address.getPort()) : address;
        a.target = target;
        if (target.isUnresolved()) throw new IOException("cannot resolve " + address.getHostString());
        SocketChannel ch = SocketChannel.open();
        try {
            if (owner != null) owner.connecting(ch);
            long leftMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            ch.socket().connect(target, (int) Math.min(leftMs, Integer.MAX_VALUE));
            a.connected = true;
            ch.socket().setTcpNoDelay(true);
            ch.socket().setKeepAlive(true);
            Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            Duration hs = left.compareTo(HANDSHAKE_MAX) > 0 ? HANDSHAKE_MAX
                    : left.compareTo(HANDSHAKE_MIN) < 0 ? HANDSHAKE_MIN : left;
            io.hcomm4j.security.Wire w = auth.connect(ch, Auth.STORE, hs);
            return new StoreConnection(ch, new DataInputStream(new BufferedInputStream(w.in(), BUFFER_BYTES)),
                    new DataOutputStream(new BufferedOutputStream(w.out(), BUFFER_BYTES)));
        } catch (IOException | RuntimeException e) {
            StoreProtocol.closeQuietly(ch);
            throw e;
        } finally {
            if (owner != null) owner.connecting(null);
        }
    }

    /**
     * Says HELLO as client {@code clientId} with {@code done} mutations answered; leaves a missed reply (HELLO_APPLIED)
     * unread, for the caller to read as the reply of its pending mutation.
     */
    Hello hello(long clientId, long done) throws IOException {
        channel.socket().setSoTimeout((int) HANDSHAKE_MAX.plus(SERVER_SUPERSEDE).toMillis());
        out.writeByte(OP_HELLO);
        out.writeLong(clientId);
        out.writeLong(done);
        out.flush();
        StoreRequest.readStatus(in, "hello");
        long inc = in.readLong();
        byte state = in.readByte();
        if (state != HELLO_NEW && state != HELLO_IN_SYNC && state != HELLO_APPLIED) {
            throw new ProtocolException("store answered hello with state " + state);
        }
        return new Hello(inc, state);
    }

    /**
     * Whether this idle connection has ended, without sending anything: one non-blocking read into {@code one} (a
     * server says nothing unasked, so any byte or end of stream means the connection is no longer usable). Null: fine.
     */
    IOException probe(ByteBuffer one) {
        try {
            channel.configureBlocking(false);
            try {
                int n = channel.read(one.clear());
                if (n < 0) return new EOFException("the store closed the connection");
                if (n > 0) return new IOException("the store sent " + n + " byte(s) nobody asked for");
                return null;
            } finally {
                channel.configureBlocking(true);
            }
        } catch (IOException e) {
            return e;
        }
    }

    void close() {
        StoreProtocol.closeQuietly(channel);
    }
}
