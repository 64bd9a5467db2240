package io.hcomm4j;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * One call of {@link ObjectCollectives}, on the communicator's byte collectives. Every rank encodes first; a rank
 * that cannot sends, where its size would go, a refusal {@code -1 - reasonBytes}, and its reason (UTF-8) where its
 * bytes would go, so every rank throws naming it and nobody waits for bytes that will not come.
 */
final class ObjectExchange {
    /** Kind byte of a point-to-point object message: the codec's bytes follow. */
    static final byte OBJECT = 1;
    /** Kind byte of a point-to-point object message: the sender refused its object; the reason (UTF-8) follows. */
    static final byte REFUSED = 2;
    /** The largest byte[] a JVM allocates reliably. */
    static final int MAX_ARRAY = Integer.MAX_VALUE - 8;
    /** A reason longer than this is cut: it travels to every rank. */
    private static final int MAX_REASON_CHARS = 2000;
    private static final byte[] NOTHING = new byte[0];

    private final Communicator comm;
    private final String op;
    private final int rank;

    ObjectExchange(Communicator comm, String op) {
        this.comm = comm;
        this.op = op;
        this.rank = comm.rank();
    }

    /**
     * What this rank encoded: its bytes, or the exception it will throw and the reason the others will be told.
     *
     * @param bytes   the encoding (empty on a rank that encodes nothing)
     * @param failure null unless refused
     * @param reason  the reason in UTF-8, null unless refused
     */
    private record Encoded(byte[] bytes, IllegalArgumentException failure, byte[] reason) {
        static final Encoded NONE = new Encoded(NOTHING, null, null);

        /** The size sent in place of the bytes: the length, or a refusal carrying the reason's length. */
        long header() {
            return failure == null ? bytes.length : -1L - reason.length;
        }
    }

    private Encoded refusal(String reason, Throwable cause) {
        String cut = reason.length() > MAX_REASON_CHARS ? reason.substring(0, MAX_REASON_CHARS) + "..." : reason;
        return new Encoded(NOTHING, new IllegalArgumentException("rank " + rank + ": " + op + ": " + reason, cause),
                cut.getBytes(StandardCharsets.UTF_8));
    }

    /** Encodes {@code obj}, catching the refusal ({@code what} names the object in the reason, or is empty). */
    private <T> Encoded encode(T obj, ObjectCodec<? super T> codec, String what) {
        if (codec == null) return refusal("codec is null", null);
        try {
            byte[] bytes = codec.encode(obj);
            if (bytes == null) return refusal(what + codec + " returned null", null);
            return new Encoded(bytes, null, null);
        } catch (IllegalArgumentException e) {
            return refusal(what + e.getMessage(), e);
        } catch (RuntimeException e) {
            return refusal(what + codec + " failed: " + e, e);
        }
    }

    // ------------------------------------------------------------------------------------ collectives

    <T> List<T> allGather(T obj, ObjectCodec<? super T> codec) {
        Encoded mine = encode(obj, codec, "");
        long[] sizes = allGatherHeaders(mine);
        long[] displs = displacements(sizes);
        byte[] all = new byte[(int) total(sizes)];
        comm.allGatherV(MemorySegment.ofArray(mine.bytes()), MemorySegment.ofArray(all), sizes, displs, DataType.INT8);
        return decodeAll(codec, all, sizes, displs);
    }

    <T> List<T> gather(T obj, int root, ObjectCodec<? super T> codec) {
        Encoded mine = encode(obj, codec, "");
        long[] sizes = allGatherHeaders(mine);
        long[] displs = displacements(sizes);
        byte[] all = rank == root ? new byte[(int) total(sizes)] : NOTHING;
        comm.gatherV(MemorySegment.ofArray(mine.bytes()), MemorySegment.ofArray(all), sizes, displs, DataType.INT8, root);
        return rank == root ? decodeAll(codec, all, sizes, displs) : null;
    }

    <T> T broadcast(T obj, int root, ObjectCodec<? super T> codec) {
        Encoded mine = rank == root ? encode(obj, codec, "") : Encoded.NONE;
        long[] header = {mine.header()};
        run(() -> comm.broadcast(header, root), mine);
        if (header[0] < 0) throw rootRefused(mine, header[0], root);
        byte[] bytes = rank == root ? mine.bytes() : new byte[(int) header[0]];
        comm.broadcast(MemorySegment.ofArray(bytes), bytes.length, DataType.INT8, root);
        return decode(codec, bytes, 0, bytes.length, "root " + root);
    }

    <T> T scatter(List<? extends T> objs, int root, ObjectCodec<? super T> codec) {
        int n = comm.size();
        long[] sizes = new long[n];
        Encoded mine = Encoded.NONE;
        byte[] send = NOTHING;
        if (rank == root) {
            Encoded[] parts = new Encoded[n];
            if (objs == null) mine = refusal("objs is null", null);
            else if (objs.size() != n) mine = refusal("objs has " + objs.size() + " elements, needs " + n + " (one per rank)",
                    null);
            for (int r = 0; mine.failure() == null && r < n; r++) {
                parts[r] = encode(objs.get(r), codec, "objs[" + r + "]: ");
                if (parts[r].failure() != null) mine = parts[r];
                else sizes[r] = parts[r].bytes().length;
            }
            long total = mine.failure() == null ? total(sizes) : 0;
            if (total > MAX_ARRAY) {
                mine = refusal("the objects' encodings add up to " + total + " bytes, more than a byte[] holds", null);
            }
            if (mine.failure() != null) {
                Arrays.fill(sizes, mine.header());
            } else {
                send = new byte[(int) total];
                for (int r = 0, at = 0; r < n; at += parts[r].bytes().length, r++) {
                    System.arraycopy(parts[r].bytes(), 0, send, at, parts[r].bytes().length);
                }
            }
        }
        Encoded encoded = mine;
        run(() -> comm.broadcast(sizes, root), encoded);
        if (sizes[0] < 0) throw rootRefused(mine, sizes[0], root);
        byte[] bytes = new byte[(int) sizes[rank]];
        comm.scatterV(MemorySegment.ofArray(send), sizes, displacements(sizes), MemorySegment.ofArray(bytes), DataType.INT8,
                root);
        return decode(codec, bytes, 0, bytes.length, "root " + root);
    }

    /**
     * All-gathers every rank's header; if a rank refused, all-gathers the reasons and throws on every rank. Also
     * refuses, on every rank alike, sizes that add up to more than a byte[] holds.
     */
    private long[] allGatherHeaders(Encoded mine) {
        int n = comm.size();
        long[] headers = new long[n];
        run(() -> comm.allGather(new long[] {mine.header()}, headers), mine);
        int culprit = -1;
        int culprits = 0;
        long[] reasonSizes = new long[n];
        for (int r = 0; r < n; r++) {
            if (headers[r] >= 0) continue;
            if (culprits++ == 0) culprit = r;
            reasonSizes[r] = -1 - headers[r];
        }
        if (culprits > 0) {
            long[] displs = displacements(reasonSizes);
            byte[] reasons = new byte[(int) total(reasonSizes)];
            byte[] myReason = mine.failure() != null ? mine.reason() : NOTHING;
            run(() -> comm.allGatherV(MemorySegment.ofArray(myReason), MemorySegment.ofArray(reasons), reasonSizes, displs,
                    DataType.INT8), mine);
            if (mine.failure() != null) throw mine.failure();
            String reason = new String(reasons, (int) displs[culprit], (int) reasonSizes[culprit], StandardCharsets.UTF_8);
            throw new CollectiveMismatchException("rank " + rank + ": " + op + " fails on every rank: rank " + culprit
                    + " refused its own arguments: " + reason
                    + (culprits > 1 ? " (and " + (culprits - 1) + " other ranks refused theirs)" : ""));
        }
        long total = total(headers);
        if (total > MAX_ARRAY) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": the ranks' objects encode to " + total
                    + " bytes together, more than a byte[] holds: use the collectives on MemorySegments for data this large");
        }
        return headers;
    }

    /** The root refused (header {@code < 0}): broadcasts its reason, then the exception this rank throws. */
    private RuntimeException rootRefused(Encoded mine, long header, int root) {
        byte[] reason = rank == root ? mine.reason() : new byte[(int) (-1 - header)];
        comm.broadcast(MemorySegment.ofArray(reason), reason.length, DataType.INT8, root);
        if (rank == root) return mine.failure();
        return new CollectiveMismatchException("rank " + rank + ": " + op + " fails on every rank: rank " + root
                + " refused its own arguments: " + new String(reason, StandardCharsets.UTF_8));
    }

    /** Runs a step; if it fails on a rank that refused, its own refusal goes along (suppressed). */
    private static void run(Runnable step, Encoded mine) {
        try {
            step.run();
        } catch (RuntimeException e) {
            if (mine.failure() != null) e.addSuppressed(mine.failure());
            throw e;
        }
    }

    /** Offsets of consecutive blocks of {@code sizes}. */
    private static long[] displacements(long[] sizes) {
        long[] displs = new long[sizes.length];
        for (int r = 1; r < sizes.length; r++) displs[r] = displs[r - 1] + sizes[r - 1];
        return displs;
    }

    private static long total(long[] sizes) {
        long total = 0;
        for (long s : sizes) total += s;
        return total;
    }

    @SuppressWarnings("unchecked")
    private <T> List<T> decodeAll(ObjectCodec<? super T> codec, byte[] all, long[] sizes, long[] displs) {
        Object[] objects = new Object[sizes.length];
        for (int r = 0; r < sizes.length; r++) objects[r] = decode(codec, all, (int) displs[r], (int) sizes[r], "rank " + r);
        return (List<T>) Collections.unmodifiableList(Arrays.asList(objects));
    }

    /** Decodes what came from {@code from}; a codec's refusal becomes an IllegalArgumentException naming both ranks. */
    @SuppressWarnings("unchecked")
    private <T> T decode(ObjectCodec<? super T> codec, byte[] bytes, int offset, int length, String from) {
        if (codec == null) throw new IllegalArgumentException("rank " + rank + ": " + op + ": codec is null");
        try {
            return (T) codec.decode(bytes, offset, length);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": the object of " + from + " cannot be decoded: "
                    + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": the object of " + from + " cannot be decoded: "
                    + codec + " failed: " + e, e);
        }
    }

    // ------------------------------------------------------------------------------------ point to point

    /**
     * Starts sending {@code obj} as one message (kind byte, then the bytes); or sends the refusal (waiting for it if
     * {@code blocking}, so that it is on its way when the caller learns of it) and throws it.
     */
    <T> CommFuture<Void> send(T obj, int peer, int tag, ObjectCodec<? super T> codec, boolean blocking) {
        Encoded mine = encode(obj, codec, "");
        if (mine.failure() == null && mine.bytes().length > MAX_ARRAY - 1) {
            mine = refusal("its encoding of " + mine.bytes().length + " bytes leaves no room for the kind byte", null);
        }
        if (mine.failure() != null) {
            try {
                CommFuture<Void> told = comm.sendAsync(message(REFUSED, mine.reason()), peer, tag);
                if (blocking) told.await();
            } catch (RuntimeException e) {
                mine.failure().addSuppressed(e);
            }
            throw mine.failure();
        }
        return comm.sendAsync(message(OBJECT, mine.bytes()), peer, tag);
    }

    private static byte[] message(byte kind, byte[] body) {
        byte[] message = new byte[1 + body.length];
        message[0] = kind;
        System.arraycopy(body, 0, message, 1, body.length);
        return message;
    }

    <T> T recv(int peer, int tag, ObjectCodec<? super T> codec) {
        if (codec == null) throw new IllegalArgumentException("rank " + rank + ": " + op + ": codec is null");
        Status probed = comm.probe(peer, tag);
        String from = "rank " + probed.source() + " (tag " + probed.tag() + ")";
        if (probed.bytes() > MAX_ARRAY) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": the message from " + from + " holds "
                    + probed.bytes() + " bytes, more than sendObject sends; it is still there, for recv into a MemorySegment");
        }
        byte[] message = new byte[(int) probed.bytes()];
        int length = (int) comm.recv(message, probed.source(), probed.tag()).bytes();
        if (length > 0 && message[0] == REFUSED) {
            throw new HcommException("rank " + rank + ": " + op + ": " + from + " refused its own arguments: "
                    + new String(message, 1, length - 1, StandardCharsets.UTF_8));
        }
        if (length == 0 || message[0] != OBJECT) {
            throw new IllegalArgumentException("rank " + rank + ": " + op + ": the message from " + from + " is not one "
                    + "sendObject sent (" + length + " bytes" + (length > 0 ? ", kind byte " + message[0] : "") + ")");
        }
        return decode(codec, message, 1, length - 1, from);
    }
}
