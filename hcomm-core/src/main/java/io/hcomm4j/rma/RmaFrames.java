package io.hcomm4j.rma;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

/**
 * What the one-sided layer puts in the {@code flags} of a transport RMA frame (the rest of the header: window id in
 * {@code commId}, the origin's op id in {@code tag}, the target offset in {@code msgId}):
 *
 * <pre>
 * bits  0-7   kind (below)
 * bits  8-15  DataType ordinal (ACC, GET_ACC, FOP, CAS)
 * bits 16-23  ReduceOp ordinal (ACC, GET_ACC, FOP)
 * bits 24-29  status of a REPLY: OK, BUSY (a lock not granted now), ERROR
 * bit  30     ANSWER: a PUT or ACC whose origin waits for a REPLY (OK, or ERROR if this or an earlier unanswered
 *             request of that origin was refused)
 * </pre>
 *
 * Payloads: PUT and ACC the data; GET an i64 byte count; GET_ACC the operand data; FOP an i64 operand; CAS i64
 * expected, i64 desired; SIGNAL none ({@code offset} is the signal index; it follows the PUT it signals, and frames are
 * applied in order); LOCK none ({@code offset} is the LockType ordinal); UNLOCK and FLUSH none. A REPLY carries the
 * data of a GET or GET_ACC, the i64 old value of a FOP or CAS, nothing for the others (an ERROR reply to a transfer
 * engine: the reason, UTF-8).
 *
 * <p>Transfer engines ({@link EngineImpl}) use PUT, GET, FLUSH and REPLY with the segment id in place of the window id,
 * and NOTIFY (no window; payload: a notification).
 */
final class RmaFrames {
    static final int PUT = 1;
    static final int GET = 2;
    static final int ACC = 3;
    static final int GET_ACC = 4;
    static final int FOP = 5;
    static final int CAS = 6;
    static final int SIGNAL = 7;
    static final int LOCK = 8;
    static final int UNLOCK = 9;
    static final int FLUSH = 10;
    static final int REPLY = 11;
    /** A transfer engine's notification (payload: see EngineTarget); windows never send it. */
    static final int NOTIFY = 12;

    /** Flag of a PUT or ACC that wants a REPLY once applied (see {@code RemoteOps.put}). */
    static final int ANSWER = 1 << 30;

    static final int OK = 0;
    static final int BUSY = 1;
    static final int ERROR = 2;

    private static final DataType[] TYPES = DataType.values();
    private static final ReduceOp[] OPS = ReduceOp.values();

    private RmaFrames() {
    }

    static int flags(int kind, DataType type, ReduceOp op) {
        return kind | (type == null ? 0 : type.ordinal() << 8) | (op == null ? 0 : op.ordinal() << 16);
    }

    static int reply(int status) {
        return REPLY | status << 24;
    }

    static int kind(int flags) {
        return flags & 0xFF;
    }

    static int status(int flags) {
        return (flags >>> 24) & 0x3F;
    }

    /** The frame's DataType, or null if the bits name none. */
    static DataType type(int flags) {
        int t = (flags >>> 8) & 0xFF;
        return t < TYPES.length ? TYPES[t] : null;
    }

    /** The frame's ReduceOp, or null if the bits name none. */
    static ReduceOp op(int flags) {
        int o = (flags >>> 16) & 0xFF;
        return o < OPS.length ? OPS[o] : null;
    }

    static String kindName(int kind) {
        return switch (kind) {
            case PUT -> "put";
            case GET -> "get";
            case ACC -> "accumulate";
            case GET_ACC -> "getAccumulate";
            case FOP -> "fetchAndOp";
            case CAS -> "compareAndSwap";
            case SIGNAL -> "signal";
            case LOCK -> "lock";
            case UNLOCK -> "unlock";
            case FLUSH -> "flush";
            case REPLY -> "reply";
            case NOTIFY -> "notify";
            default -> "kind " + kind;
        };
    }
}
