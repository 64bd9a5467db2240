package io.hcomm4j.security;

import io.hcomm4j.CommConfig;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mutual HMAC-SHA256 challenge-response on a fresh connection, run before any other frame is read.
 *
 * <p>Wire: acceptor sends {@code "HCMA", version, purpose, nonceA[32]}; initiator answers
 * {@code "HCMA", nonceI[32], HMAC(secret, "I"|purpose|nonceA|nonceI)}; acceptor checks it and answers
 * {@code HMAC(secret, "A"|purpose|nonceI|nonceA)}, which the initiator checks. Every message has a fixed
 * size, so nothing a stranger sends decides how much is read or allocated. The secret never crosses the wire.
 *
 * <p>With TLS ({@link #withTls}) the TLS 1.3 handshake (mutual, certificates from the job's stores) comes first and
 * the exchange above runs inside it, its HMACs also over keying material exported from the TLS session: a proof
 * made for one TLS connection is worth nothing on another, so the certificate admits a machine and the secret a job.
 *
 * <p>The key is the job secret ({@link #of}, at least {@value #MIN_SECRET_BYTES} bytes). A job without one has two ways to
 * run, both named (docs/reliability.md, "Secret policy"): {@link #loopbackOnly()}, where its listeners may bind only to
 * loopback addresses, or {@link #unauthenticated()}, chosen by name ({@code HCOMM_AUTH=none}), on any address. Both run the
 * same handshake with a key anyone can derive: it keeps out what does not speak the protocol (a port scanner, a stray
 * HTTP client), and proves nothing about who is at the other end.
 */
public final class Auth {
    /** Purpose byte of store connections. */
    public static final byte STORE = 'S';
    /** Purpose byte of data connections between ranks. */
    public static final byte DATA = 'D';

    private static final int MAGIC = 0x48434D41; // "HCMA"
    private static final byte VERSION = 1;
    private static final int NONCE = 32;
    private static final int MAC = 32;
    /** Shortest job secret accepted, in bytes of its UTF-8 encoding ({@link CommConfig#MIN_SECRET_BYTES}). */
    public static final int MIN_SECRET_BYTES = CommConfig.MIN_SECRET_BYTES;
    /** How users are told to make a secret, in every message that asks for one. */
    public static final String HOW_TO_MAKE_ONE = CommConfig.HOW_TO_MAKE_A_SECRET;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** How a job without a secret may listen; a job with one may listen anywhere. */
    private enum Mode { SECRET, LOOPBACK_ONLY, UNAUTHENTICATED }

    private final byte[] key;
    private final Mode mode;
    /** TLS under every connection, or {@code null} for plain TCP. */
    private final TlsContext tls;

    private Auth(byte[] key, Mode mode) {
        this(key, mode, null);
    }

    private Auth(byte[] key, Mode mode, TlsContext tls) {
        this.key = key;
        this.mode = mode;
        this.tls = tls;
    }

    /**
     * The authenticator of a job: {@link #of} its secret, or {@link #loopbackOnly()} without one, and TLS under every
     * connection if {@code tls} is not null.
     */
    public static Auth of(String secret, io.hcomm4j.TlsConfig tls) {
        return (secret == null ? loopbackOnly() : of(secret)).withTls(tls == null ? null : TlsContext.of(tls));
    }

    /** This authenticator with every connection under TLS first ({@code null}: plain TCP). */
    public Auth withTls(TlsContext tls) {
        return new Auth(key, mode, tls);
    }
    /**
     * The handshake with the job secret.
     *
     * @param secret the job secret, at least {@value #MIN_SECRET_BYTES} bytes (UTF-8)
     * @throws IllegalArgumentException the secret is null or shorter
     */
    public static Auth of(String secret) {
        checkSecret(secret, "the job secret");
        return new Auth(secret.getBytes(StandardCharsets.UTF_8), Mode.SECRET);
    }

    /**
     * A job without a secret: the handshake with a public key, and listeners on loopback addresses only (see
     * {@link #checkListen}), so that only processes of this host can reach the job.
     */
    public static Auth loopbackOnly() {
        return new Auth(publicKey(), Mode.LOOPBACK_ONLY);
    }

    /**
     * A job run without authentication by the user's choice ({@code HCOMM_AUTH=none}): the handshake with a public key,
     * on any address. Anyone who can reach a listener can join or disturb the job.
     */
    public static Auth unauthenticated() {
        return new Auth(publicKey(), Mode.UNAUTHENTICATED);
    }

    /**
     * The handshake a job's settings ask for: {@link #of} its secret if there is one, else {@link #unauthenticated()} if
     * the user chose that, else {@link #loopbackOnly()}.
     */
    public static Auth forJob(String secret, boolean unauthenticated) {
        if (secret != null) return of(secret);
        return unauthenticated ? unauthenticated() : loopbackOnly();
    }

    /**
     * Refuses a secret that is missing or shorter than {@value #MIN_SECRET_BYTES} bytes, naming {@code setting}
     * ({@link CommConfig#checkSecret}, which the configuration uses too).
     *
     * @throws IllegalArgumentException it is
     */
    public static void checkSecret(String secret, String setting) {
        CommConfig.checkSecret(secret, setting);
    }

    /** Whether a job secret keys the handshake (false: a public key, which authenticates nobody). */
    public boolean hasSecret() {
        return mode == Mode.SECRET;
    }

    /** Whether the user chose to run without authentication on any address ({@code HCOMM_AUTH=none}). */
    public boolean isUnauthenticated() {
        return mode == Mode.UNAUTHENTICATED;
    }

    /**
     * Refuses to listen on {@code address} when this job has no secret and the address is not a loopback one (the
     * wildcard address included): without a secret, only processes of this host may reach the job, unless the user chose
     * {@link #unauthenticated()}.
     *
     * @param address the address a listener is about to bind to
     * @param what    the listener, for the message ({@code "rank 3's data listener"})
     * @throws io.hcomm4j.HcommException the address is not allowed
     */
    public void checkListen(java.net.InetAddress address, String what) {
        checkAddress(address, () -> what + " would listen on " + (address == null ? "an unresolved address"
                : address.isAnyLocalAddress() ? "every interface (" + address.getHostAddress() + ")" : address.getHostAddress()));
    }

    /**
     * Refuses an address a job without a secret needs to listen or connect on, when it is not a loopback one.
     *
     * @param address the address, or null for one that does not resolve
     * @param why     what needs it, for the message ({@code "the store's address 10.0.0.1:29500 (MASTER_ADDR:MASTER_PORT)
     *                is not a loopback address"})
     * @throws io.hcomm4j.HcommException the address is not allowed
     */
    public void checkAddress(java.net.InetAddress address, java.util.function.Supplier<String> why) {
        if (mode == Mode.LOOPBACK_ONLY && (address == null || !address.isLoopbackAddress())) {
            throw new io.hcomm4j.HcommException(noSecretBeyondLoopback(why.get()));
        }
    }

    /**
     * The message of every refusal to go beyond loopback without a secret: {@code why} (what needs a non-loopback address),
     * and the ways out.
     */
    public static String noSecretBeyondLoopback(String why) {
        return "no job secret is set, so HComm4J listens and connects on loopback addresses only, but " + why
                + ". A job across hosts needs a secret, the same on every rank: set HCOMM_SECRET (" + HOW_TO_MAKE_ONE
                + ") or CommConfig.builder().secret(...); hcomm launch makes one for the jobs it starts. To run without"
                + " authentication on a network you trust, set HCOMM_AUTH=none (CommConfig.Builder.unauthenticated())";
    }

    /**
     * The key of the handshake without a secret: derived from a public text, so any HComm4J process can compute it and
     * it authenticates nobody; it only keeps out peers that do not speak the protocol.
     */
    private static byte[] publicKey() {
        try {
            return MessageDigest.getInstance("SHA-256").digest("HComm4J handshake without a job secret, v1"
                    .getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 unavailable", e);
        }
    }

    /** A new random secret (hex), as the launcher generates for a job. */
    public static String newSecret() {
        byte[] b = new byte[24];
        RANDOM.nextBytes(b);
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    /** Thrown when the peer does not prove the secret or does not speak the handshake. */
    public static final class AuthException extends IOException {
        private static final long serialVersionUID = 1L;

        AuthException(String message) {
            super(message);
        }
    }

    /**
     * The acceptor closed the connection before its first handshake bytes: it refuses connections for now (an
     * {@link AcceptGate} over its cap for our address), not our secret. Worth trying again, with backoff.
     */
    public static final class RefusedException extends IOException {
        private static final long serialVersionUID = 1L;

        RefusedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Acceptor side, on a blocking channel. Reads at most a fixed number of bytes within {@code timeout}.
     *
     * @throws AuthException the peer failed the challenge
     * @throws IOException   I/O failure or timeout
     */
    public Wire accept(SocketChannel ch, byte purpose, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Wire w = open(ch, false, deadline);
        byte[] binding = binding(w);
        byte[] nonceA = nonce();
        ByteBuffer hello = ByteBuffer.allocate(4 + 2 + NONCE).putInt(MAGIC).put(VERSION).put(purpose).put(nonceA).flip();
        writeFully(w, hello, deadline);
        ByteBuffer reply = readFully(w, 4 + NONCE + MAC, deadline);
        if (reply.getInt() != MAGIC) throw new AuthException("peer does not speak the HComm4J handshake");
        byte[] nonceI = new byte[NONCE];
        reply.get(nonceI);
        byte[] mac = new byte[MAC];
        reply.get(mac);
        if (!MessageDigest.isEqual(mac, hmac((byte) 'I', purpose, nonceA, nonceI, binding))) {
            throw new AuthException("peer did not prove the job secret");
        }
        writeFully(w, ByteBuffer.wrap(hmac((byte) 'A', purpose, nonceI, nonceA, binding)), deadline);
        return w;
    }

    /**
     * Initiator side, on a blocking channel.
     *
     * @throws AuthException the acceptor failed the challenge (wrong job, wrong secret or not HComm4J)
     * @throws IOException   I/O failure or timeout
     */
    public Wire connect(SocketChannel ch, byte purpose, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Wire w = open(ch, true, deadline);
        byte[] binding = binding(w);
        ByteBuffer hello;
        try {
            hello = readFully(w, 4 + 2 + NONCE, deadline);
        } catch (EOFException | java.net.SocketException e) {
            // before the acceptor saw anything of ours: it refuses connections now, it did not judge our secret
            throw new RefusedException("the server closed the connection before its handshake (busy: too many pending "
                    + "connections from this address, HCOMM_ACCEPT_PENDING_PER_SOURCE?)", e);
        }
        if (hello.getInt() != MAGIC) throw new AuthException("server does not speak the HComm4J handshake");
        byte version = hello.get();
        if (version != VERSION) throw new AuthException("server speaks handshake version " + version + ", this is " + VERSION);
        byte p = hello.get();
        if (p != purpose) throw new AuthException("server is a '" + (char) p + "' endpoint, expected '" + (char) purpose + "'");
        byte[] nonceA = new byte[NONCE];
        hello.get(nonceA);
        byte[] nonceI = nonce();
        ByteBuffer reply = ByteBuffer.allocate(4 + NONCE + MAC).putInt(MAGIC).put(nonceI)
                .put(hmac((byte) 'I', purpose, nonceA, nonceI, binding)).flip();
        writeFully(w, reply, deadline);
        ByteBuffer proof;
        try {
            proof = readFully(w, MAC, deadline);
        } catch (EOFException | java.net.SocketException e) {
            // the acceptor hangs up on a wrong proof: that is its answer
            throw new AuthException("the other side closed the connection after our proof: wrong job secret?");
        }
        if (!MessageDigest.isEqual(proof.array(), hmac((byte) 'A', purpose, nonceI, nonceA, binding))) {
            throw new AuthException("server did not prove the job secret");
        }
        return w;
    }

    /** The connection as the handshake runs on it: under TLS first if this job uses TLS. */
    private Wire open(SocketChannel ch, boolean client, long deadline) throws IOException {
        if (tls == null) return Wire.plain(ch);
        try {
            return Wire.secure(ch, TlsChannel.handshake(ch, tls.engine(client), deadline));
        } catch (javax.net.ssl.SSLException e) {
            throw new AuthException("TLS handshake failed: " + e.getMessage()
                    + " (do all ranks use HCOMM_TLS with certificates their HCOMM_TLS_TRUSTSTORE trusts?)");
        } catch (TlsChannel.ClosedBeforeReply | java.net.SocketException e) {
            if (!client) throw e;
            // as in the plain handshake: the acceptor closed before it saw anything of ours
            throw new RefusedException("the server closed the connection before its TLS handshake (busy: too many pending "
                    + "connections from this address, HCOMM_ACCEPT_PENDING_PER_SOURCE? or it runs without HCOMM_TLS)", e);
        }
    }

    private static byte[] binding(Wire w) throws IOException {
        return w.tls() == null ? new byte[0] : w.tls().binding();
    }

    private byte[] hmac(byte role, byte purpose, byte[] first, byte[] second, byte[] binding) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(role);
            mac.update(purpose);
            mac.update(first);
            mac.update(second);
            mac.update(binding);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }

    private static byte[] nonce() {
        byte[] n = new byte[NONCE];
        RANDOM.nextBytes(n);
        return n;
    }

    /** Reads exactly {@code n} bytes from a blocking connection before the deadline (System.nanoTime based). */
    static ByteBuffer readFully(Wire w, int n, long deadline) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        var in = w.in();
        while (b.hasRemaining()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) throw new IOException("handshake timed out");
            w.readTimeout((int) Math.max(1, left / 1_000_000));
            int r;
            try {
                r = in.read(b.array(), b.position(), b.remaining());
            } catch (java.net.SocketTimeoutException e) {
                throw new IOException("handshake timed out", e);
            }
            if (r < 0) throw new EOFException("connection closed during handshake");
            b.position(b.position() + r);
        }
        return b.flip();
    }

    static void writeFully(Wire w, ByteBuffer b, long deadline) throws IOException {
        if (System.nanoTime() > deadline) throw new IOException("handshake timed out");
        w.write(b);
    }
}
