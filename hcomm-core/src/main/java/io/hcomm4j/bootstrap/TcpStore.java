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
import java.net.SocketTimeoutException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Client of a {@link TcpStoreServer}.
 *
 * <p>One connection; requests from several threads are serialized, so a thread blocked in {@link #get} or
 * {@link #await} delays the others until its reply comes (the time a waiting call spends queued counts against
 * its own deadline). A lost connection is not re-established: every later call throws {@link HcommException}
 * naming the store address, because replaying a request such as {@code add} could apply it twice. Interrupting a
 * thread blocked in a call closes the connection (NIO channels are interruptible).
 */
public final class TcpStore implements Store {
    private static final Logger LOG = LoggerFactory.getLogger(TcpStore.class);
    /** Longest silence tolerated in a reply beyond the time the server was asked to wait: then it is presumed dead. */
    static final Duration REPLY_GRACE = Duration.ofSeconds(60);
    private static final Duration HANDSHAKE_MAX = Duration.ofSeconds(10);
    private static final Duration HANDSHAKE_MIN = Duration.ofSeconds(1);
    /** A server that drops us this often during the handshake is refusing our secret, not starting up. */
    private static final int MAX_HANDSHAKE_DROPS = 3;
    private static final long BACKOFF_START_MS = 10;
    private static final long BACKOFF_MAX_MS = 500;

    private final InetSocketAddress address;
    private final SocketChannel channel;
    private final InetAddress localAddress;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile boolean closed;
    /** Why the connection became unusable; guarded by {@link #lock}. */
    private String broken;

    private TcpStore(InetSocketAddress address, SocketChannel channel) throws IOException {
        this.address = address;
        this.channel = channel;
        this.localAddress = ((InetSocketAddress) channel.getLocalAddress()).getAddress();
        this.in = new DataInputStream(new BufferedInputStream(channel.socket().getInputStream(), 8192));
        this.out = new DataOutputStream(new BufferedOutputStream(channel.socket().getOutputStream(), 8192));
    }

    /**
     * Connects to the server at {@code address}, retrying with backoff until it answers or {@code timeout}
     * passes (ranks may start before the server), and proves {@code secret}.
     *
     * @throws CommTimeoutException no server answered at {@code address} within {@code timeout}
     * @throws HcommException       the server refused the secret (or is not an HComm4J store)
     */
    public static TcpStore connect(InetSocketAddress address, String secret, Duration timeout) {
        long deadline = System.nanoTime() + waitMillis(timeout) * 1_000_000L;
        Auth auth = Auth.of(secret);
        long backoff = BACKOFF_START_MS;
        int handshakeDrops = 0;
        Exception last = null;
        int attempts = 0;
        boolean connected = false;
        while (true) {
            attempts++;
            // Re-resolve each attempt: the store's host name may not resolve until its node is up.
            InetSocketAddress target = address.isUnresolved()
                    ? new InetSocketAddress(address.getHostString(), address.getPort()) : address;
            SocketChannel ch = null;
            connected = false;
            try {
                if (target.isUnresolved()) throw new IOException("cannot resolve " + address.getHostString());
                ch = SocketChannel.open();
                long leftMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                ch.socket().connect(target, (int) Math.min(leftMs, Integer.MAX_VALUE));
                connected = true;
                ch.socket().setTcpNoDelay(true);
                ch.socket().setKeepAlive(true);
                Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
                Duration hs = left.compareTo(HANDSHAKE_MAX) > 0 ? HANDSHAKE_MAX
                        : left.compareTo(HANDSHAKE_MIN) < 0 ? HANDSHAKE_MIN : left;
                auth.connect(ch, Auth.STORE, hs);
                TcpStore store = new TcpStore(target, ch);
                LOG.debug("connected to store at {} after {} attempt(s)", target, attempts);
                return store;
            } catch (Auth.AuthException e) {
                StoreProtocol.closeQuietly(ch);
                String hint = e.getMessage().contains("secret")
                        ? "is HCOMM_SECRET the same on every rank and the launcher?"
                        : "is another service listening on that port?";
                throw new HcommException("store at " + hostPort(address) + " failed the handshake: " + e.getMessage()
                        + " (" + hint + ")", e);
            } catch (IOException | RuntimeException e) {
                StoreProtocol.closeQuietly(ch);
                last = e;
                // The acceptor checks our proof first and just hangs up on a wrong secret, so a wrong secret looks
                // like a dropped connection; a few of those in a row means it is not a start-up race.
                boolean dropped = connected && (e instanceof EOFException || e instanceof SocketException);
                if (dropped && ++handshakeDrops >= MAX_HANDSHAKE_DROPS) {
                    throw new HcommException("store at " + hostPort(address) + " closed the connection during the handshake "
                            + handshakeDrops + " times: it most likely rejected the job secret (is HCOMM_SECRET "
                            + "the same on every rank and the launcher?); last error: " + e, e);
                }
            }
            long leftMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (leftMs <= 0) {
                // Something accepted the connection but never started the handshake: not our store.
                String hint = connected && !(last instanceof EOFException || last instanceof SocketException)
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

    /** Local address of the store connection: the interface that reaches the store's host. */
    public InetAddress localAddress() {
        return localAddress;
    }

    /** The address of the store server this client is connected to. */
    public InetSocketAddress address() {
        return address;
    }

    @Override
    public void set(String key, byte[] value) {
        byte[] k = encodeKey(key);
        checkValue(key, value);
        call("set '" + key + "'", null, null, () -> {
            out.writeByte(OP_SET);
            writeBytes(out, k);
            writeBytes(out, value);
            out.flush();
            expectOk("set '" + key + "'");
            return null;
        });
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        byte[] k = encodeKey(key);
        long deadline = System.nanoTime() + waitMillis(timeout) * 1_000_000L;
        byte[] v = call("get '" + key + "'", (Long) deadline, () -> "get of key '" + key + "' timed out after " + human(timeout),
                () -> {
                    out.writeByte(OP_GET);
                    out.writeLong(remainingMillis(deadline));
                    writeBytes(out, k);
                    out.flush();
                    byte s = status("get '" + key + "'");
                    return s == OK ? readValue(in) : null;
                });
        if (v == null) {
            throw new CommTimeoutException("store get of key '" + key + "' timed out after " + human(timeout)
                    + ": no rank set it (store " + hostPort(address) + ")");
        }
        return v;
    }

    @Override
    public byte[] tryGet(String key) {
        byte[] k = encodeKey(key);
        return call("tryGet '" + key + "'", null, null, () -> {
            out.writeByte(OP_TRY_GET);
            writeBytes(out, k);
            out.flush();
            byte s = status("tryGet '" + key + "'");
            return s == OK ? readValue(in) : null;
        });
    }

    @Override
    public void await(Collection<String> keys, Duration timeout) {
        List<String> list = List.copyOf(keys);
        if (list.size() > MAX_WAIT_KEYS) {
            throw new IllegalArgumentException("await of " + list.size() + " keys, the limit is " + MAX_WAIT_KEYS);
        }
        List<byte[]> encoded = new ArrayList<>(list.size());
        for (String k : list) encoded.add(encodeKey(k));
        long deadline = System.nanoTime() + waitMillis(timeout) * 1_000_000L;
        if (list.isEmpty()) return;
        List<String> missing = call("await " + describe(list), (Long) deadline,
                () -> "await of keys " + describe(list) + " timed out after " + human(timeout), () -> {
                    out.writeByte(OP_WAIT);
                    out.writeLong(remainingMillis(deadline));
                    out.writeInt(encoded.size());
                    for (byte[] k : encoded) writeBytes(out, k);
                    out.flush();
                    if (status("await") == OK) return List.<String>of();
                    int n = readKeyCount(in);
                    List<String> m = new ArrayList<>(Math.min(n, 1024));
                    for (int i = 0; i < n; i++) m.add(readKey(in));
                    return m;
                });
        if (!missing.isEmpty()) {
            throw new CommTimeoutException("store await timed out after " + human(timeout) + " waiting for keys "
                    + describe(list) + "; still missing: " + describe(missing) + " (store " + hostPort(address) + ")");
        }
    }

    @Override
    public long add(String key, long delta) {
        byte[] k = encodeKey(key);
        return call("add '" + key + "'", null, null, () -> {
            out.writeByte(OP_ADD);
            writeBytes(out, k);
            out.writeLong(delta);
            out.flush();
            expectOk("add '" + key + "'");
            return in.readLong();
        });
    }

    @Override
    public byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        byte[] k = encodeKey(key);
        if (expected != null) checkValue(key, expected);
        checkValue(key, desired);
        return call("compareAndSet '" + key + "'", null, null, () -> {
            out.writeByte(OP_CAS);
            writeBytes(out, k);
            if (expected == null) {
                out.writeByte(0);
            } else {
                out.writeByte(1);
                writeBytes(out, expected);
            }
            writeBytes(out, desired);
            out.flush();
            expectOk("compareAndSet '" + key + "'");
            return in.readUnsignedByte() == 1 ? readValue(in) : null;
        });
    }

    @Override
    public boolean delete(String key) {
        byte[] k = encodeKey(key);
        return call("delete '" + key + "'", null, null, () -> {
            out.writeByte(OP_DELETE);
            writeBytes(out, k);
            out.flush();
            expectOk("delete '" + key + "'");
            return in.readUnsignedByte() == 1;
        });
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        // Not under the lock: closing the channel is what unblocks a thread stuck in a call.
        StoreProtocol.closeQuietly(channel);
    }

    @Override
    public String toString() {
        return "TcpStore[" + hostPort(address) + "]";
    }

    @FunctionalInterface
    private interface Exchange<T> {
        T run() throws IOException;
    }

    /**
     * Runs one request/reply under the lock. {@code deadline} (System.nanoTime based, or null for calls
     * that do not wait) bounds the time spent queued behind other threads; {@code timeoutMessage} describes that
     * timeout.
     */
    private <T> T call(String what, Long deadline, Supplier<String> timeoutMessage, Exchange<T> ex) {
        try {
            if (deadline == null) {
                lock.lockInterruptibly();
            } else if (!lock.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                throw new CommTimeoutException("store " + timeoutMessage.get()
                        + " while other threads' requests held the connection (store " + hostPort(address) + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("interrupted before store " + what + " (store " + hostPort(address) + ")");
        }
        try {
            if (closed) throw new HcommException("store client for " + hostPort(address) + " is closed (" + what + ")");
            if (broken != null) throw new HcommException("lost connection to the store at " + hostPort(address) + ": " + broken);
            long serverWaitMs = deadline == null ? 0 : remainingMillis(deadline);
            long soTimeout = serverWaitMs + REPLY_GRACE.toMillis();
            channel.socket().setSoTimeout(soTimeout > Integer.MAX_VALUE ? 0 : (int) soTimeout);
            return ex.run();
        } catch (SocketTimeoutException e) {
            throw fail(what, "no reply within " + human(REPLY_GRACE) + " beyond the requested wait", e);
        } catch (IOException e) {
            throw fail(what, closed ? "store client closed" : e.toString(), e);
        } finally {
            lock.unlock();
        }
    }

    private HcommException fail(String what, String why, IOException cause) {
        // The reply stream is now at an unknown position: nothing later on it can be trusted.
        broken = why + " (during " + what + ")";
        StoreProtocol.closeQuietly(channel);
        return new HcommException("lost connection to the store at " + hostPort(address) + " during " + what + ": " + why, cause);
    }

    private byte status(String what) throws IOException {
        byte s = in.readByte();
        if (s == OK || s == MISSING) return s;
        if (s == ERROR) {
            String msg = new String(readKeyBytes(in), StandardCharsets.UTF_8);
            throw new ServerError(msg);
        }
        throw new ProtocolException("store sent reply status " + s + " to " + what);
    }

    private void expectOk(String what) throws IOException {
        if (status(what) != OK) throw new ProtocolException("store answered MISSING to " + what);
    }

    /** The server understood the request and refused it; the connection stays in sync. */
    private static final class ServerError extends HcommException {
        private static final long serialVersionUID = 1L;

        ServerError(String message) {
            super(message);
        }
    }

    private static long remainingMillis(long deadline) {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    }

    private static String describe(List<String> keys) {
        if (keys.size() <= 16) return keys.toString();
        return keys.subList(0, 16) + " and " + (keys.size() - 16) + " more";
    }
}
