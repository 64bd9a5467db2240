package io.hcomm4j.bootstrap;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

/**
 * Wire format of the TCP store, shared by {@link TcpStoreServer} and {@link TcpStore}, plus the key and value
 * limits every {@link Store} implementation enforces.
 *
 * <p>A request is {@code op(1)} followed by op-specific fields; a reply is {@code status(1)} followed by
 * status-specific fields. Integers are big-endian. A key is {@code len(4) utf8[len]}, a value is
 * {@code len(4) bytes[len]}. Every length is checked against its limit before anything is allocated, so a
 * peer cannot make the other side reserve memory by announcing a large frame.
 *
 * <pre>
 * SET     key value                          → OK
 * GET     waitMillis(8) key                  → OK value | MISSING (timed out)
 * TRY_GET key                                → OK value | MISSING
 * WAIT    waitMillis(8) count(4) key*count   → OK | MISSING count(4) key*count (the keys still missing)
 * ADD     key delta(8)                       → OK newValue(8)
 * CAS     key present(1) [value] value       → OK present(1) [value]
 * DELETE  key                                → OK existed(1)
 * HELLO   clientId(8) completed(8)           → OK incarnation(8) state(1) [the reply of the client's last mutation]
 * any                                        → ERROR message(as a key) — the request was understood but refused
 * </pre>
 *
 * <p>HELLO is the first request of every {@link TcpStore} connection. {@code clientId} is the client's random id, the
 * same on each of its connections; {@code completed} counts the mutations (SET, ADD, CAS, DELETE) it sent to this
 * server and got a reply to. The server answers with its incarnation (random, new at every start: a different one
 * means the store restarted and lost its data) and what it knows of the client: {@link #HELLO_NEW} (nothing: a first
 * connection, or a restarted server), {@link #HELLO_IN_SYNC} (it applied exactly {@code completed} mutations of the
 * client, so one the client sent without getting a reply was not applied and must be sent again) or
 * {@link #HELLO_APPLIED} (it applied one more: the reply the client missed follows, exactly as it was sent then, and
 * the mutation must not be sent again). So a mutation is applied once even when its connection breaks between the
 * request and the reply.
 */
final class StoreProtocol {
    /** Longest key in UTF-8 bytes: keys are names, not data. */
    static final int MAX_KEY_BYTES = 4096;
    /** Largest value; bounds what one request can make the server hold. */
    static final int MAX_VALUE_BYTES = 64 << 20;
    /** Most keys in one WAIT request. */
    static final int MAX_WAIT_KEYS = 65536;
    /** Most key bytes in one WAIT request, so a WAIT cannot pin more memory than one large value. */
    static final long MAX_WAIT_KEY_BYTES = 16L << 20;

    static final byte OP_SET = 1;
    static final byte OP_GET = 2;
    static final byte OP_TRY_GET = 3;
    static final byte OP_WAIT = 4;
    static final byte OP_ADD = 5;
    static final byte OP_CAS = 6;
    static final byte OP_DELETE = 7;
    static final byte OP_HELLO = 8;

    /** HELLO: the server does not know the client (first connection, or the server restarted). */
    static final byte HELLO_NEW = 0;
    /** HELLO: the server applied every mutation the client counts as completed, and no other. */
    static final byte HELLO_IN_SYNC = 1;
    /** HELLO: the server applied one mutation more than the client counts; its reply follows. */
    static final byte HELLO_APPLIED = 2;

    static final byte OK = 0;
    static final byte MISSING = 1;
    static final byte ERROR = 2;

    /** Server-side waits are capped so deadline arithmetic in nanoseconds cannot overflow (about 100 days). */
    static final long MAX_WAIT_MILLIS = Long.MAX_VALUE / 2 / 1_000_000;

    private StoreProtocol() {
    }

    /** A frame broke the protocol (bad op, length out of bounds); the connection cannot be trusted further. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }

    /** UTF-8 bytes of {@code key}, or {@link IllegalArgumentException} if it is null, empty or too long. */
    static byte[] encodeKey(String key) {
        if (key == null) throw new IllegalArgumentException("store key must not be null");
        byte[] b = key.getBytes(StandardCharsets.UTF_8);
        if (b.length == 0) throw new IllegalArgumentException("store key must not be empty");
        if (b.length > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("store key is " + b.length + " UTF-8 bytes, the limit is " + MAX_KEY_BYTES);
        }
        return b;
    }

    /** Throws {@link IllegalArgumentException} if {@code value} is null or above the value limit. */
    static void checkValue(String key, byte[] value) {
        if (value == null) throw new IllegalArgumentException("value of store key '" + key + "' must not be null");
        if (value.length > MAX_VALUE_BYTES) {
            throw new IllegalArgumentException("value of store key '" + key + "' is " + value.length
                    + " bytes, the limit is " + MAX_VALUE_BYTES);
        }
    }

    /** Milliseconds of {@code timeout}, saturated to {@link #MAX_WAIT_MILLIS}; negative is refused. */
    static long waitMillis(Duration timeout) {
        if (timeout == null) throw new IllegalArgumentException("timeout must not be null");
        if (timeout.isNegative()) throw new IllegalArgumentException("timeout must be >= 0, was " + timeout);
        try {
            return Math.min(timeout.toMillis(), MAX_WAIT_MILLIS);
        } catch (ArithmeticException e) {
            return MAX_WAIT_MILLIS;
        }
    }

    /** {@code 200 ms}, {@code 30 s}, {@code 2 min}: for messages people read. */
    static String human(Duration d) {
        if (d.compareTo(Duration.ofSeconds(10)) < 0 && d.toNanos() % 1_000_000 == 0) return d.toMillis() + " ms";
        if (d.compareTo(Duration.ofMinutes(10)) < 0) {
            return d.toNanos() % 1_000_000_000 == 0 ? d.toSeconds() + " s" : String.format("%.3f s", d.toNanos() / 1e9);
        }
        return d.toSeconds() % 60 == 0 ? d.toMinutes() + " min" : d.toSeconds() + " s";
    }

    /** {@code host:port} without the {@code /} that {@link InetSocketAddress#toString()} puts in. */
    static String hostPort(InetSocketAddress a) {
        String h = a.getHostString();
        return (h.indexOf(':') >= 0 ? "[" + h + "]" : h) + ":" + a.getPort();
    }

    static void writeBytes(DataOutput out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    static String readKey(DataInput in) throws IOException {
        return new String(readKeyBytes(in), StandardCharsets.UTF_8);
    }

    static byte[] readKeyBytes(DataInput in) throws IOException {
        return readSized(in, "key", 1, MAX_KEY_BYTES);
    }

    static byte[] readValue(DataInput in) throws IOException {
        return readSized(in, "value", 0, MAX_VALUE_BYTES);
    }

    /** Reads {@code len(4) bytes[len]}, checking the length against [min, max] before allocating. */
    private static byte[] readSized(DataInput in, String what, int min, int max) throws IOException {
        int n = in.readInt();
        if (n < min || n > max) throw new ProtocolException(what + " length " + n + " outside [" + min + ", " + max + "]");
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /** Reads a WAIT key count and checks it before the keys are read. */
    static int readKeyCount(DataInput in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > MAX_WAIT_KEYS) {
            throw new ProtocolException("key count " + n + " outside [0, " + MAX_WAIT_KEYS + "]");
        }
        return n;
    }

    /** Decimal text of a counter, as {@link Store#add} stores it. */
    static byte[] encodeCounter(long v) {
        return Long.toString(v).getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The counter stored in {@code value} ({@code null}: absent, counts as 0); {@link IllegalArgumentException}
     * if the value is not the decimal text of a long.
     */
    static long decodeCounter(String key, byte[] value) {
        if (value == null) return 0;
        String s = new String(value, StandardCharsets.UTF_8);
        try {
            return Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("value of store key '" + key + "' is not a number, so add() cannot "
                    + "count on it: '" + (s.length() > 64 ? s.substring(0, 64) + "…" : s) + "'");
        }
    }

    /** Writes an ERROR reply; a message longer than a key is cut to that length. */
    static void writeError(DataOutput out, String message) throws IOException {
        byte[] m = (message == null ? "error" : message).getBytes(StandardCharsets.UTF_8);
        if (m.length > MAX_KEY_BYTES) m = Arrays.copyOf(m, MAX_KEY_BYTES);
        out.writeByte(ERROR);
        writeBytes(out, m);
    }

    /** Closes {@code c} (if not null) on a path that is already failing or ending; a failure to close changes nothing. */
    static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception e) {
            org.slf4j.LoggerFactory.getLogger(StoreProtocol.class).debug("close failed: {}", e.toString());
        }
    }
}
