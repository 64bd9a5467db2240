package io.hcomm4j.transport;

import java.nio.ByteBuffer;

/**
 * The data-connection wire format: every frame starts with a fixed 56-byte little-endian header.
 *
 * <pre>
 *  0 u16 magic 0x4843 ("HC")   2 u8 version   3 u8 type
 *  4 i32 flags
 *  8 i64 seq     sequence number of this frame on this connection and direction (1, 2, 3 ...)
 * 16 i64 ack     highest seq the sender has received from the other direction
 * 24 i64 commId  communicator the message belongs to
 * 32 i32 tag     message tag
 * 36 i32 src     sending rank (must be the connection's peer)
 * 40 i64 length  payload bytes after the header (EAGER, DATA, RMA) or message size (RTS)
 * 48 i64 msgId   sender's id of a rendezvous message (RTS, CTS, DATA)
 * </pre>
 *
 * An {@link #RMA} frame reuses the fields for one-sided communication: {@code commId} the window id, {@code tag} the
 * origin's op id, {@code flags} the RMA layer's (kind, data type, op, status: the transport does not look at them),
 * {@code msgId} the target byte offset, {@code length} exactly the payload bytes that follow.
 *
 * A header is checked (magic, version, type, src, seq, length against limits, msgId against what is
 * outstanding) before any memory is set aside for its payload.
 */
final class Frame {
    static final int HEADER = 56;
    static final short MAGIC = 0x4843;
    static final byte VERSION = 1;

    /** Small message, payload follows. */
    static final byte EAGER = 1;
    /** Ready-to-send: a large message is waiting for the receiver; no payload. */
    static final byte RTS = 2;
    /** Clear-to-send: the receiver matched an RTS and waits for the DATA; no payload. */
    static final byte CTS = 3;
    /** The payload of a large message, after a CTS. */
    static final byte DATA = 4;
    /** Acknowledges frames up to {@code ack}; no payload. */
    static final byte ACK = 5;
    /** The sender is closing the connection in order; its EOF that follows is not a failure. */
    static final byte BYE = 6;

    /** Returns eager credit: {@code length} more bytes may be sent eagerly; no payload. */
    static final byte CREDIT = 7;
    /**
     * Shared memory only: instead of a DATA frame and its payload, where the receiver reads the payload in place: the
     * sender's registered buffer lies in its shared-memory file number {@code commId} (the sequence part of the file's
     * name), at byte offset {@code (tag << 32) | flags}, {@code length} bytes. No payload follows; the receiver copies
     * straight out of its mapping of that file and answers {@link #DATA_DONE}, which completes the send (one copy).
     */
    static final byte DATA_REF = 8;
    /** Shared memory only: the receiver has read the DATA_REF message {@code msgId}; flags {@link #DONE_FAILED}: it could not. */
    static final byte DATA_DONE = 9;
    /** DATA_DONE flag: the receiver could not map the sender's file; both ops fail. */
    static final int DONE_FAILED = 1;

    /** Liveness: sent on a connection that carried nothing else for HCOMM_HEARTBEAT_INTERVAL; no payload. */
    static final byte HEARTBEAT = 10;
    /**
     * The sender knows that world rank {@code tag} failed; {@code flags} says how it learned it ({@link #FAIL_LOST},
     * {@link #FAIL_SILENT}, {@link #FAIL_PROTOCOL}, {@link #FAIL_REPORTED}, {@link #FAIL_LIMIT}, {@link #FAIL_CORRUPT}).
     * Every rank that learns of a failure forwards it once to the peers it is connected to. {@code tag} equal to the
     * receiver: the receiver itself was declared failed (it was silent too long, broke the protocol, went beyond a
     * limit). No payload.
     */
    static final byte FAILED = 11;
    /** The sender (world rank {@code tag}) aborted communicator {@code commId} ({@code comm.abort()}); no payload. */
    static final byte ABORT = 12;
    /** The sender has an op that waits for the receiver longer than HCOMM_STUCK_REPORT: publish your state; no payload. */
    static final byte STATUS_REQUEST = 13;

    /**
     * One-sided communication (a request or a reply of an RMA window): {@code length} payload bytes follow, read straight
     * into the segment the receiver's {@link RmaHandler#payloadTarget} gives, then {@link RmaHandler#onRma}. No eager
     * credit: the receiver never buffers the payload itself. Header fields as in the class comment.
     */
    static final byte RMA = 14;
    /**
     * RMA payloads up to this size are copied into a reliable link's resend log (the send completes once written, like
     * EAGER); larger ones are only referenced there (the send completes once the peer acknowledged the frame, like DATA,
     * and the receiver acknowledges such a frame at once, so that wait is one round trip).
     */
    static final long RMA_COPY_MAX = 64 << 10;
    /**
     * One chunk of a large message's payload over TCP, after a CTS: {@code msgId} the message, {@code commId} the byte
     * offset of the chunk in it (a multiple of {@link #CHUNK}), {@code length} the chunk's bytes (a multiple of
     * {@link #CHUNK}, or what is left of the message), which follow. The chunks of one message may travel over any of
     * the links to the peer ({@link DataPump}), in any order; the receiver acknowledges each at once.
     */
    static final byte DATA_PART = 15;
    /**
     * The unit of {@link #DATA_PART} chunks: each starts at a multiple of it and spans whole units (the last chunk of a
     * message: to its end). The receiver keeps one bit per unit (which came), so a chunk sent again after a link failed
     * is recognised.
     */
    static final long CHUNK = 256 << 10;
    /** Largest {@link #DATA_PART} a sender makes (see {@link DataPump.Lane#chunkBytes}). */
    static final long CHUNK_MAX = 4 << 20;
    /**
     * A latency probe on one link to a peer (the primary or a rail): a request carries {@link #ECHO_BYTES} bytes of
     * padding (the size of a small message, so a slow link's serialization shows) and {@code msgId} the sender's clock;
     * the receiver answers on the same link with a reply ({@link #ECHO_REPLY}, no payload, the same {@code msgId}). The
     * round trip tells which link delivers small messages soonest ({@link Rails}).
     */
    static final byte ECHO = 16;
    /** ECHO flags: this is the reply. */
    static final int ECHO_REPLY = 1;
    /** The padding of an ECHO request. */
    static final int ECHO_BYTES = 4096;
    /** Largest ECHO payload a receiver takes. */
    static final int ECHO_MAX = 64 << 10;

    /** FAILED flags: the connection to the failed rank broke (end of stream or I/O error, without BYE). */
    static final int FAIL_LOST = 1;
    /** FAILED flags: nothing came from the failed rank for HCOMM_HEARTBEAT_TIMEOUT. */
    static final int FAIL_SILENT = 2;
    /** FAILED flags: the failed rank sent a frame no well-behaved peer sends. */
    static final int FAIL_PROTOCOL = 3;
    /** FAILED flags: the sender learned it from another rank. */
    static final int FAIL_REPORTED = 4;
    /** FAILED flags: the failed rank sent more unexpected messages than the receiver holds from all peers. */
    static final int FAIL_LIMIT = 5;
    /** FAILED flags: the failed rank wrote what no correct peer writes into the pair's shared mapping. */
    static final int FAIL_CORRUPT = 6;

    static String failReason(int flags) {
        return switch (flags) {
            case FAIL_LOST -> "its connection broke";
            case FAIL_SILENT -> "nothing came from it for HCOMM_HEARTBEAT_TIMEOUT";
            case FAIL_PROTOCOL -> "it broke the frame protocol";
            case FAIL_LIMIT -> "it sent more unexpected messages than the receiver holds from all peers "
                    + "(HCOMM_UNEXPECTED_TOTAL, HCOMM_UNEXPECTED_COUNT)";
            case FAIL_CORRUPT -> "it corrupted the shared-memory mapping of a pair";
            default -> "another rank reported it";
        };
    }

    /** Credit an eager message costs beyond its payload (bounds the count of small unexpected messages). */
    static final long EAGER_OVERHEAD = 64;

    /** CTS flag: the receiver will not take the data (its buffer is too small); the send completes without it. */
    static final int CTS_DISCARD = 1;
    /** CTS flag: the receiver posted a UCX tag receive for the data; it goes by UCX's tag send, not as DATA frames. */
    static final int CTS_UCX = 2;

    private Frame() {
    }

    static void encode(ByteBuffer b, byte type, int flags, long seq, long ack, long commId, int tag, int src,
                       long length, long msgId) {
        b.putShort(MAGIC).put(VERSION).put(type).putInt(flags).putLong(seq).putLong(ack).putLong(commId)
                .putInt(tag).putInt(src).putLong(length).putLong(msgId);
    }

    /** As {@link #encode}, at absolute position {@code at} of a little-endian buffer (its position does not move). */
    static void encodeAt(ByteBuffer b, int at, byte type, int flags, long seq, long ack, long commId, int tag, int src,
                         long length, long msgId) {
        b.putShort(at, MAGIC).put(at + 2, VERSION).put(at + 3, type).putInt(at + 4, flags).putLong(at + 8, seq)
                .putLong(at + 16, ack).putLong(at + 24, commId).putInt(at + 32, tag).putInt(at + 36, src)
                .putLong(at + 40, length).putLong(at + 48, msgId);
    }

    /** Offset of the {@code ack} field in a header. */
    static final int ACK_OFFSET = 16;

    static String typeName(byte type) {
        return switch (type) {
            case EAGER -> "EAGER";
            case RTS -> "RTS";
            case CTS -> "CTS";
            case DATA -> "DATA";
            case ACK -> "ACK";
            case BYE -> "BYE";
            case CREDIT -> "CREDIT";
            case DATA_REF -> "DATA_REF";
            case DATA_DONE -> "DATA_DONE";
            case HEARTBEAT -> "HEARTBEAT";
            case FAILED -> "FAILED";
            case ABORT -> "ABORT";
            case STATUS_REQUEST -> "STATUS_REQUEST";
            case RMA -> "RMA";
            case DATA_PART -> "DATA_PART";
            case ECHO -> "ECHO";
            default -> "type " + type;
        };
    }
}
