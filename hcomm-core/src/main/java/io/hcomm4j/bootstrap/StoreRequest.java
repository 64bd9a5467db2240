package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import io.hcomm4j.HcommException;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * One request of a {@link TcpStore}: how to write it (again, on a new connection: waiting requests recompute their
 * wait), how to read its reply, whether it changes the store (a mutation: counted, see {@link StoreProtocol}) and what
 * to note in the {@link WriteBackJournal} once it succeeded (run under the client's lock, in the same hold that read
 * the reply, so a restart in between cannot miss it).
 *
 * <p>The factories encode one op each, in the wire format of {@link StoreProtocol}; a factory's {@code journal} may be
 * null (requests that change nothing this client must write back, and the write-back requests themselves).
 */
record StoreRequest<T>(String what, boolean mutating, Writer writer, Reader<T> reader, Journal<T> journal) {

    @FunctionalInterface
    interface Writer {
        void write(DataOutputStream out) throws IOException;
    }

    @FunctionalInterface
    interface Reader<T> {
        T read(DataInputStream in) throws IOException;
    }

    @FunctionalInterface
    interface Journal<T> {
        void record(T reply);
    }

    /** The server understood the request and refused it; the connection stays in sync. */
    static final class ServerError extends HcommException {
        private static final long serialVersionUID = 1L;

        ServerError(String message) {
            super(message);
        }
    }

    static StoreRequest<Void> set(String key, byte[] value, Journal<Void> journal) {
        byte[] k = encodeKey(key);
        String what = "set '" + key + "'";
        return new StoreRequest<>(what, true, out -> {
            out.writeByte(OP_SET);
            writeBytes(out, k);
            writeBytes(out, value);
        }, in -> {
            expectOk(in, what);
            return null;
        }, journal);
    }

    /** A GET that asks the server to wait as long as {@code remainingMs} says when it is (re)sent; null: timed out. */
    static StoreRequest<byte[]> get(String key, LongSupplier remainingMs) {
        byte[] k = encodeKey(key);
        String what = "get '" + key + "'";
        return new StoreRequest<>(what, false, out -> {
            out.writeByte(OP_GET);
            out.writeLong(remainingMs.getAsLong());
            writeBytes(out, k);
        }, in -> readStatus(in, what) == OK ? readValue(in) : null, null);
    }

    static StoreRequest<byte[]> tryGet(String key) {
        byte[] k = encodeKey(key);
        String what = "tryGet '" + key + "'";
        return new StoreRequest<>(what, false, out -> {
            out.writeByte(OP_TRY_GET);
            writeBytes(out, k);
        }, in -> readStatus(in, what) == OK ? readValue(in) : null, null);
    }

    /** A WAIT for the (already encoded) keys; its reply is the keys still missing, empty when all were set. */
    static StoreRequest<List<String>> await(String what, List<byte[]> encoded, LongSupplier remainingMs) {
        return new StoreRequest<>(what, false, out -> {
            out.writeByte(OP_WAIT);
            out.writeLong(remainingMs.getAsLong());
            out.writeInt(encoded.size());
            for (byte[] k : encoded) writeBytes(out, k);
        }, in -> {
            if (readStatus(in, "await") == OK) return List.<String>of();
            int n = readKeyCount(in);
            List<String> m = new ArrayList<>(Math.min(n, 1024));
            for (int i = 0; i < n; i++) m.add(readKey(in));
            return m;
        }, null);
    }

    static StoreRequest<Long> add(String key, long delta, Journal<Long> journal) {
        byte[] k = encodeKey(key);
        String what = "add '" + key + "'";
        return new StoreRequest<>(what, true, out -> {
            out.writeByte(OP_ADD);
            writeBytes(out, k);
            out.writeLong(delta);
        }, in -> {
            expectOk(in, what);
            return in.readLong();
        }, journal);
    }

    /** A CAS; {@code expected} null: the key must be absent. The reply is the value after it (null: absent). */
    static StoreRequest<byte[]> compareAndSet(String key, byte[] expected, byte[] desired, Journal<byte[]> journal) {
        byte[] k = encodeKey(key);
        String what = "compareAndSet '" + key + "'";
        return new StoreRequest<>(what, true, out -> {
            out.writeByte(OP_CAS);
            writeBytes(out, k);
            if (expected == null) {
                out.writeByte(0);
            } else {
                out.writeByte(1);
                writeBytes(out, expected);
            }
            writeBytes(out, desired);
        }, in -> {
            expectOk(in, what);
            return in.readUnsignedByte() == 1 ? readValue(in) : null;
        }, journal);
    }

    static StoreRequest<Boolean> delete(String key, Journal<Boolean> journal) {
        byte[] k = encodeKey(key);
        String what = "delete '" + key + "'";
        return new StoreRequest<>(what, true, out -> {
            out.writeByte(OP_DELETE);
            writeBytes(out, k);
        }, in -> {
            expectOk(in, what);
            return in.readUnsignedByte() == 1;
        }, journal);
    }

    /** Reads a reply status: OK or MISSING; ERROR throws {@link ServerError}, anything else {@link ProtocolException}. */
    static byte readStatus(DataInputStream in, String what) throws IOException {
        byte s = in.readByte();
        if (s == OK || s == MISSING) return s;
        if (s == ERROR) throw new ServerError(new String(readKeyBytes(in), StandardCharsets.UTF_8));
        throw new ProtocolException("store sent reply status " + s + " to " + what);
    }

    private static void expectOk(DataInputStream in, String what) throws IOException {
        if (readStatus(in, what) != OK) throw new ProtocolException("store answered MISSING to " + what);
    }
}
