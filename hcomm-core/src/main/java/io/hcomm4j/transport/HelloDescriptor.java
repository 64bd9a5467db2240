package io.hcomm4j.transport;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import io.hcomm4j.security.Wire;
import java.nio.charset.StandardCharsets;

/**
 * Wire layout of the hello that opens every data connection (after authentication), and of its answer. Big-endian,
 * written and read on a blocking channel before the connection is handed to its link.
 *
 * <pre>
 * hello, connecting side to accepting side:
 *   0  i32 magic "HCHL"          4  i32 source rank     8  i32 destination rank   12 i32 world size
 *  16  i64 job token + the source's incarnation          24 i64 the source's unexpected limit (its credit to us)
 *  32  i32 ring offer (0 or 1)  36  u16 ring file name length n (0 unless offered), then the name (US-ASCII)
 *  38+n resume part: i32 flags (bit 0: the source keeps a resend log; bits 8-15: 0 for the pair's primary link, k for
 *       its rail k, see {@link Rails}), i64 epoch (0: a new connection; e: it replaces connection e), i64 resume (last
 *       frame the source received completely on the link)
 *  58+n if flag bit 1 (UCX offered): u16 length m, then the source's UCX worker address (m bytes)
 *
 * answer, accepting side to connecting side: u8 code; after ACCEPT only:
 *   1  i64 the acceptor's unexpected limit    9  u8 rings mapped (0 or 1); if 1: u16 length, the acceptor's file prefix
 *   then the resume part as above (the epoch the connection gets, the acceptor's resume point), and if its flag bit 1
 *   is set (UCX taken) the acceptor's UCX worker address as in the hello
 * </pre>
 *
 * <p>A UCX offer is taken when both sides run {@code HCOMM_TRANSPORT=ucx}: the frames then go over UCX
 * ({@link UcxConduit}) and the connection stays as the death detector.
 */
final class HelloDescriptor {
    static final int MAGIC = 0x4843484C; // "HCHL"

    static final int MAGIC_OFFSET = 0;
    static final int SOURCE_OFFSET = 4;
    static final int DESTINATION_OFFSET = 8;
    static final int WORLD_SIZE_OFFSET = 12;
    static final int TOKEN_OFFSET = 16;
    static final int LIMIT_OFFSET = 24;
    /** Length of the fixed part, read first: whether the sender belongs here is decided on it alone. */
    static final int FIXED_LENGTH = 32;

    static final int OFFER_OFFSET = 0;
    static final int NAME_LENGTH_OFFSET = 4;
    /** Length of the ring offer's header (after the fixed part, before the name). */
    static final int OFFER_LENGTH = 6;
    static final int RING_OFFERED = 1;
    static final int MAX_NAME_LENGTH = 200;

    static final int FLAGS_OFFSET = 0;
    static final int EPOCH_OFFSET = 4;
    static final int RESUME_OFFSET = 12;
    /** Length of the resume part that ends both hello and answer. */
    static final int RESUME_LENGTH = 20;
    /** Resume flag: the sender keeps a resend log and reconnects (HCOMM_RETRY_MAX &gt; 0). */
    static final int RELIABLE = 1;
    /** Resume flags of a hello: the rail the connection is (0: the primary link). */
    static final int RAIL_SHIFT = 8;
    static final int RAIL_MASK = 0xFF << RAIL_SHIFT;
    /** Resume flag: a UCX worker address follows (offered in a hello, taken in an answer). */
    static final int UCX = 2;
    /** A UCX worker address is a few hundred bytes at most (one per transport, on every interface). */
    static final int MAX_UCX_ADDRESS = 8192;

    static final byte ACCEPT = 1;
    /** Not now: the other side keeps its own attempt, or the connection to replace was replaced already. */
    static final byte REJECT = 2;
    /** A reconnect to a rank that declared this one failed: it will not talk to it again. */
    static final byte GONE = 3;
    /** Answer bytes before the optional prefix: code, limit, rings-mapped flag. */
    static final int ANSWER_HEAD_LENGTH = 10;

    private HelloDescriptor() {
    }

    /** A hello as read by the accepting side, checked for shape only (whether it belongs here is the caller's). */
    record Hello(int magic, int source, int destination, int worldSize, long token, long limit, String ringFile,
                 boolean reliable, long epoch, long resume, int rail, byte[] ucxAddress) {
    }

    /** The answer to a hello: ACCEPT (with the acceptor's settings and where it resumes), REJECT or GONE. */
    record Answer(byte code, long peerLimit, String peerPrefix, boolean reliable, long epoch, long resume, byte[] ucxAddress) {
    }

    static void writeHello(Wire ch, int source, int destination, int worldSize, long token, long limit,
                           byte[] ringFile, boolean reliable, long epoch, long resume, int rail, byte[] ucxAddress) throws IOException {
        ByteBuffer hello = ByteBuffer.allocate(FIXED_LENGTH + OFFER_LENGTH + ringFile.length + RESUME_LENGTH
                + (ucxAddress == null ? 0 : 2 + ucxAddress.length));
        hello.putInt(MAGIC_OFFSET, MAGIC).putInt(SOURCE_OFFSET, source).putInt(DESTINATION_OFFSET, destination)
                .putInt(WORLD_SIZE_OFFSET, worldSize).putLong(TOKEN_OFFSET, token).putLong(LIMIT_OFFSET, limit);
        hello.position(FIXED_LENGTH);
        hello.putInt(ringFile.length == 0 ? 0 : RING_OFFERED).putShort((short) ringFile.length).put(ringFile);
        hello.putInt((reliable ? RELIABLE : 0) | (rail << RAIL_SHIFT) | (ucxAddress == null ? 0 : UCX)).putLong(epoch).putLong(resume);
        if (ucxAddress != null) hello.putShort((short) ucxAddress.length).put(ucxAddress);
        write(ch, hello.flip());
    }

    static Hello readHello(InputStream in) throws IOException {
        ByteBuffer fixed = ByteBuffer.wrap(readFully(in, FIXED_LENGTH, "hello"));
        ByteBuffer offer = ByteBuffer.wrap(readFully(in, OFFER_LENGTH, "hello"));
        int offered = offer.getInt(OFFER_OFFSET);
        int nameLength = offer.getShort(NAME_LENGTH_OFFSET) & 0xffff;
        if (nameLength > MAX_NAME_LENGTH || (offered == RING_OFFERED) != (nameLength > 0) || (offered != 0 && offered != RING_OFFERED)) {
            throw new IOException("bad hello ring offer: flag " + offered + ", name length " + nameLength + " (at most "
                    + MAX_NAME_LENGTH + ")");
        }
        String ringFile = nameLength == 0 ? null : new String(readFully(in, nameLength, "hello"), StandardCharsets.US_ASCII);
        ByteBuffer tail = ByteBuffer.wrap(readFully(in, RESUME_LENGTH, "hello"));
        int flags = checkedFlags(tail, "hello", RELIABLE | RAIL_MASK | UCX);
        byte[] ucx = (flags & UCX) != 0 ? readUcxAddress(in, "hello") : null;
        return new Hello(fixed.getInt(MAGIC_OFFSET), fixed.getInt(SOURCE_OFFSET), fixed.getInt(DESTINATION_OFFSET),
                fixed.getInt(WORLD_SIZE_OFFSET), fixed.getLong(TOKEN_OFFSET), fixed.getLong(LIMIT_OFFSET), ringFile,
                (flags & RELIABLE) != 0, tail.getLong(EPOCH_OFFSET), tail.getLong(RESUME_OFFSET),
                (flags & RAIL_MASK) >>> RAIL_SHIFT, ucx);
    }

    private static byte[] readUcxAddress(InputStream in, String what) throws IOException {
        int n = ByteBuffer.wrap(readFully(in, Short.BYTES, what)).getShort() & 0xffff;
        if (n < 1 || n > MAX_UCX_ADDRESS) {
            throw new IOException("bad UCX worker address in the " + what + ": " + n + " bytes (1.." + MAX_UCX_ADDRESS + ")");
        }
        return readFully(in, n, what);
    }

    /**
     * Accepts a hello: our unexpected limit, our file prefix if we mapped the offered rings, our resume part, our UCX
     * worker address if we take the UCX offer (else null).
     */
    static void writeAccept(Wire ch, long limit, byte[] prefix, boolean reliable, long epoch, long resume, byte[] ucxAddress)
            throws IOException {
        boolean mapped = prefix.length > 0;
        ByteBuffer reply = ByteBuffer.allocate(ANSWER_HEAD_LENGTH + (mapped ? 2 + prefix.length : 0) + RESUME_LENGTH
                        + (ucxAddress == null ? 0 : 2 + ucxAddress.length))
                .put(ACCEPT).putLong(limit).put((byte) (mapped ? RING_OFFERED : 0));
        if (mapped) reply.putShort((short) prefix.length).put(prefix);
        reply.putInt((reliable ? RELIABLE : 0) | (ucxAddress == null ? 0 : UCX)).putLong(epoch).putLong(resume);
        if (ucxAddress != null) reply.putShort((short) ucxAddress.length).put(ucxAddress);
        write(ch, reply.flip());
    }

    /** Turns a hello down with {@code code} ({@link #REJECT} or {@link #GONE}) and closes the channel. */
    static void writeRefusal(Wire ch, byte code) throws IOException {
        ch.write(ByteBuffer.wrap(new byte[] {code}));
        ch.channel().close();
    }

    static Answer readAnswer(InputStream in, int peer) throws IOException {
        int code = in.read();
        if (code == REJECT || code == GONE) return new Answer((byte) code, 0, null, false, 0, 0, null);
        if (code != ACCEPT) throw new IOException("rank " + peer + " closed the connection during the hello (answer code " + code + ")");
        long peerLimit = ByteBuffer.wrap(readFully(in, Long.BYTES, "hello answer of rank " + peer)).getLong();
        if (peerLimit < 0) throw new IOException("rank " + peer + " announced a negative eager limit " + peerLimit);
        int mapped = in.read();
        String peerPrefix = null;
        if (mapped == RING_OFFERED) {
            int n = ByteBuffer.wrap(readFully(in, Short.BYTES, "hello answer of rank " + peer)).getShort() & 0xffff;
            if (n < 1 || n > MAX_NAME_LENGTH) {
                throw new IOException("rank " + peer + " sent a bad hello answer: file prefix of " + n + " bytes (1.."
                        + MAX_NAME_LENGTH + ")");
            }
            peerPrefix = new String(readFully(in, n, "hello answer of rank " + peer), StandardCharsets.US_ASCII);
        } else if (mapped != 0) {
            throw new IOException("rank " + peer + " closed the connection during the hello (rings flag " + mapped + ")");
        }
        ByteBuffer tail = ByteBuffer.wrap(readFully(in, RESUME_LENGTH, "hello answer of rank " + peer));
        int flags = checkedFlags(tail, "hello answer of rank " + peer, RELIABLE | UCX);
        byte[] ucx = (flags & UCX) != 0 ? readUcxAddress(in, "hello answer of rank " + peer) : null;
        return new Answer(ACCEPT, peerLimit, peerPrefix, (flags & RELIABLE) != 0, tail.getLong(EPOCH_OFFSET),
                tail.getLong(RESUME_OFFSET), ucx);
    }

    private static int checkedFlags(ByteBuffer tail, String what, int allowed) throws IOException {
        int flags = tail.getInt(FLAGS_OFFSET);
        long epoch = tail.getLong(EPOCH_OFFSET);
        long resume = tail.getLong(RESUME_OFFSET);
        if ((flags & ~allowed) != 0 || epoch < 0 || resume < 0) {
            throw new IOException("bad resume part in the " + what + ": flags 0x" + Integer.toHexString(flags) + ", epoch "
                    + epoch + ", resume " + resume);
        }
        return flags;
    }

    private static byte[] readFully(InputStream in, int n, String what) throws IOException {
        byte[] b = in.readNBytes(n);
        if (b.length < n) throw new IOException("short " + what + ": " + b.length + " of " + n + " bytes, then the connection closed");
        return b;
    }

    private static void write(Wire ch, ByteBuffer b) throws IOException {
        ch.write(b);
    }
}
