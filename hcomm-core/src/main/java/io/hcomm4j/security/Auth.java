package io.hcomm4j.security;

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
    private static final byte[] NO_SECRET = "hcomm4j-no-secret".getBytes(StandardCharsets.UTF_8);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final byte[] key;

    private Auth(byte[] key) {
        this.key = key;
    }

    /**
     * @param secret the job secret; {@code null} or empty means unauthenticated (a fixed public key is used,
     *               so the handshake still rejects strangers that do not speak the protocol)
     */
    public static Auth of(String secret) {
        return new Auth(secret == null || secret.isEmpty() ? NO_SECRET : secret.getBytes(StandardCharsets.UTF_8));
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
    public void accept(SocketChannel ch, byte purpose, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        byte[] nonceA = nonce();
        ByteBuffer hello = ByteBuffer.allocate(4 + 2 + NONCE).putInt(MAGIC).put(VERSION).put(purpose).put(nonceA).flip();
        writeFully(ch, hello, deadline);
        ByteBuffer reply = readFully(ch, 4 + NONCE + MAC, deadline);
        if (reply.getInt() != MAGIC) throw new AuthException("peer does not speak the HComm4J handshake");
        byte[] nonceI = new byte[NONCE];
        reply.get(nonceI);
        byte[] mac = new byte[MAC];
        reply.get(mac);
        if (!MessageDigest.isEqual(mac, hmac((byte) 'I', purpose, nonceA, nonceI))) {
            throw new AuthException("peer did not prove the job secret");
        }
        writeFully(ch, ByteBuffer.wrap(hmac((byte) 'A', purpose, nonceI, nonceA)), deadline);
    }

    /**
     * Initiator side, on a blocking channel.
     *
     * @throws AuthException the acceptor failed the challenge (wrong job, wrong secret or not HComm4J)
     * @throws IOException   I/O failure or timeout
     */
    public void connect(SocketChannel ch, byte purpose, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        ByteBuffer hello;
        try {
            hello = readFully(ch, 4 + 2 + NONCE, deadline);
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
                .put(hmac((byte) 'I', purpose, nonceA, nonceI)).flip();
        writeFully(ch, reply, deadline);
        ByteBuffer proof;
        try {
            proof = readFully(ch, MAC, deadline);
        } catch (EOFException | java.net.SocketException e) {
            // the acceptor hangs up on a wrong proof: that is its answer
            throw new AuthException("the other side closed the connection after our proof: wrong job secret?");
        }
        if (!MessageDigest.isEqual(proof.array(), hmac((byte) 'A', purpose, nonceI, nonceA))) {
            throw new AuthException("server did not prove the job secret");
        }
    }

    private byte[] hmac(byte role, byte purpose, byte[] first, byte[] second) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(role);
            mac.update(purpose);
            mac.update(first);
            mac.update(second);
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

    /** Reads exactly {@code n} bytes from a blocking channel before the deadline (System.nanoTime based). */
    static ByteBuffer readFully(SocketChannel ch, int n, long deadline) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        var in = ch.socket().getInputStream();
        while (b.hasRemaining()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) throw new IOException("handshake timed out");
            ch.socket().setSoTimeout((int) Math.max(1, left / 1_000_000));
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

    static void writeFully(SocketChannel ch, ByteBuffer b, long deadline) throws IOException {
        while (b.hasRemaining()) {
            if (System.nanoTime() > deadline) throw new IOException("handshake timed out");
            ch.write(b);
        }
    }
}
