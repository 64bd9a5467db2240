package io.hcomm4j.algo;

import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;

/**
 * Memory-semantic collectives for ranks of one host: each rank reads (and writes) the other ranks' buffers directly,
 * through mapped views of them, instead of exchanging messages. The caller (the communicator's zero-copy engine) has
 * made sure that every rank entered the op, maps the buffers, and keeps every rank in the op until all are done; these
 * methods only move and reduce bytes. Rank {@code q}'s buffer is {@code seg[q]} from byte {@code off[q]} on (a mapped
 * file of a peer, or the caller's own segment).
 *
 * <p><b>Same answer everywhere.</b> Every element of a reduction is computed by exactly one rank, from the ranks'
 * inputs in rank order {@code 0, 1, ..., n-1} ({@code combine} of the first two, then {@code accumulate} of each
 * next one, AVG divided once at the end), then copied to wherever it goes: every rank holds the same bits, and the
 * same inputs give the same bits on every run.
 *
 * <p>Reductions go through a private scratch chunk: all inputs of a chunk are read before any output of it is written,
 * so a rank's send and receive buffer may be the same memory (in place). Small chunks (tens of KiB) stay in the core's
 * cache. A large slice goes in chunks of {@link #STREAMING_COPY_MIN} bytes or more instead: HotSpot copies that much
 * with non-temporal stores, which write memory without first reading every destination line (a third of the memory
 * traffic of a copy), while the chunk itself stays in the last-level cache between its reduction and its copies.
 *
 * <p><b>Internal:</b> used by the communicator layer; applications call the collectives of {@code Communicator}.
 */
public final class ZeroCopyCollectives {
    /** Elements of one slice start at a multiple of this many bytes, so two ranks never write one cache line pair. */
    static final long SLICE_ALIGN = 128;

    private ZeroCopyCollectives() {
    }

    /**
     * Where rank {@code r}'s part of an all-reduce of {@code count} elements of {@code es} bytes on {@code n} ranks
     * begins (in elements); rank {@code r} reduces {@code [sliceStart(r), sliceStart(r + 1))}. Parts are equal up to
     * rounding to {@link #SLICE_ALIGN} bytes; the last ones may be short or empty.
     */
    public static long sliceStart(long count, int n, int r, int es) {
        long align = Math.max(1, SLICE_ALIGN / es);
        long per = ceilDiv(ceilDiv(count, n), align) * align;
        return Math.min(count, per * r);
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }

    /**
     * All-reduce: this rank reduces its slice of every rank's send buffer (in rank order) and writes the result into
     * that slice of every rank's receive buffer.
     *
     * @param send     each rank's send buffer
     * @param sendOff  byte offset of element 0 in it
     * @param recv     each rank's receive buffer (may be its send buffer at the same offset)
     * @param recvOff  byte offset of element 0 in it
     * @param rank     this rank
     * @param n        ranks
     * @param count    elements
     * @param k        the kernel
     * @param avg      divisor for AVG (the rank count), 1 otherwise
     * @param scratch  private scratch memory, at least one element, ideally a few tens of KiB
     */
    public static void allReduce(MemorySegment[] send, long[] sendOff, MemorySegment[] recv, long[] recvOff, int rank, int n,
                                 long count, ReduceKernel k, int avg, MemorySegment scratch) {
        allReduce(send, sendOff, recv, recvOff, rank, n, count, k, avg, scratch, null);
    }

    /**
     * Copies of at least this many bytes are done by the JVM's copy stub with non-temporal stores (HotSpot x86 with
     * AVX-512: 2.5 MB), which write memory without reading the destination lines first.
     */
    public static final long STREAMING_COPY_MIN = 2_621_440;

    /**
     * As {@link #allReduce(MemorySegment[], long[], MemorySegment[], long[], int, int, long, ReduceKernel, int,
     * MemorySegment)}; a slice of at least {@code 2 * STREAMING_COPY_MIN} bytes goes through {@code big} (at least
     * {@code 2 * STREAMING_COPY_MIN} bytes, may be null) in chunks of {@code STREAMING_COPY_MIN} bytes or more, so that
     * each copy out streams to memory: the chunk stays in the last-level cache between the reduction and its copies.
     */
    public static void allReduce(MemorySegment[] send, long[] sendOff, MemorySegment[] recv, long[] recvOff, int rank, int n,
                                 long count, ReduceKernel k, int avg, MemorySegment scratch, MemorySegment big) {
        int es = k.type().byteSize();
        long lo = sliceStart(count, n, rank, es);
        long hi = sliceStart(count, n, rank + 1, es);
        MemorySegment through = streams(hi - lo, es, big) ? big : scratch;
        long chunk = chunk(hi - lo, es, through == big, scratch);
        // streaming, odd ranks begin with half a chunk: a rank's reduction (reading memory) then runs while its
        // neighbour's copies (writing memory) do, instead of both ranks reading, then both writing
        long first = through == big && (rank & 1) == 1 ? Math.max(1, chunk / 2) : chunk;
        for (long e = lo, c; e < hi; e += c) {
            c = Math.min(e == lo ? first : chunk, hi - e);
            long b = e * es;
            reduce(send, sendOff, n, b, c, k, avg, through);
            long bytes = c * es;
            // own buffer first, then the others starting after this rank (ranks write different peers at a time)
            for (int i = 0; i < n; i++) {
                int q = rank + i < n ? rank + i : rank + i - n;
                MemorySegment.copy(through, 0, recv[q], recvOff[q] + b, bytes);
            }
        }
    }

    /** True if {@code elems} elements are enough for chunks of streaming copies, and there is {@code big} scratch. */
    private static boolean streams(long elems, int es, MemorySegment big) {
        return big != null && elems * es >= 2 * (STREAMING_COPY_MIN + 4096);
    }

    /**
     * Elements per chunk of {@code elems}: with {@code streaming}, equal chunks of at least
     * {@link #STREAMING_COPY_MIN} bytes (plus a page of margin); else what {@code scratch} holds.
     */
    private static long chunk(long elems, int es, boolean streaming, MemorySegment scratch) {
        if (!streaming) return Math.max(1, scratch.byteSize() / es);
        long min = (STREAMING_COPY_MIN + 4096 + es - 1) / es;
        long pieces = elems / min;
        return (elems + pieces - 1) / pieces;
    }

    /**
     * Reduce-scatter: this rank reduces its block, elements {@code [from, to)} of every rank's send buffer, into its
     * own receive buffer {@code out} at {@code outOff}.
     */
    public static void reduceScatter(MemorySegment[] send, long[] sendOff, int n, long from, long to, MemorySegment out,
                                     long outOff, ReduceKernel k, int avg, MemorySegment scratch) {
        reduceScatter(send, sendOff, n, from, to, out, outOff, k, avg, scratch, null);
    }

    /** As above; a large block goes through {@code big} (may be null) in chunks whose copies stream to memory. */
    public static void reduceScatter(MemorySegment[] send, long[] sendOff, int n, long from, long to, MemorySegment out,
                                     long outOff, ReduceKernel k, int avg, MemorySegment scratch, MemorySegment big) {
        int es = k.type().byteSize();
        MemorySegment through = streams(to - from, es, big) ? big : scratch;
        long chunk = chunk(to - from, es, through == big, scratch);
        for (long e = from; e < to; e += chunk) {
            long c = Math.min(chunk, to - e);
            reduce(send, sendOff, n, e * es, c, k, avg, through);
            MemorySegment.copy(through, 0, out, outOff + (e - from) * es, c * es);
        }
    }

    /** {@code scratch[0, c)} = the reduction over ranks 0..n-1 of elements at byte {@code b} of their buffers. */
    private static void reduce(MemorySegment[] send, long[] sendOff, int n, long b, long c, ReduceKernel k, int avg,
                               MemorySegment scratch) {
        if (n == 1) {
            MemorySegment.copy(send[0], sendOff[0] + b, scratch, 0, c * k.type().byteSize());
        } else {
            k.combine(send[0], sendOff[0] + b, send[1], sendOff[1] + b, scratch, 0, c);
            for (int q = 2; q < n; q++) k.accumulate(scratch, 0, send[q], sendOff[q] + b, c);
        }
        if (avg > 1) k.finish(scratch, 0, c, avg);
    }

    /**
     * All-gather, pulled: this rank copies every other rank's block ({@code len[q]} bytes from {@code send[q]} at
     * {@code sendOff[q]}) into its own receive buffer at {@code recvOff + off[q]}. Its own block is the caller's.
     * With {@code off == null} the blocks are equal, {@code len[0]} bytes each, block {@code q} at {@code q * len[0]}.
     */
    public static void allGather(MemorySegment[] send, long[] sendOff, int rank, int n, MemorySegment recv, long recvOff,
                                 long[] off, long[] len) {
        // start after this rank: the ranks read different peers at a time
        for (int i = 1; i < n; i++) {
            int q = rank + i < n ? rank + i : rank + i - n;
            long l = off == null ? len[0] : len[q];
            long at = off == null ? q * len[0] : off[q];
            if (l > 0) MemorySegment.copy(send[q], sendOff[q], recv, recvOff + at, l);
        }
    }

    /**
     * Broadcast, split: this rank copies its share of the root's buffer into every other non-root rank's buffer (the
     * shares are {@link #sliceStart} slices of {@code bytes} single bytes). Every rank's buffer is {@code buf[q]} at
     * {@code off[q]}.
     */
    public static void broadcastSplit(MemorySegment[] buf, long[] off, int rank, int n, int root, long bytes) {
        long lo = sliceStart(bytes, n, rank, 1);
        long hi = sliceStart(bytes, n, rank + 1, 1);
        // a chunk at a time to every destination: the root's bytes are read from memory once, then from the cache;
        // large chunks stream to memory (STREAMING_COPY_MIN) and are read again from the last-level cache
        long chunk = hi - lo >= 2 * (STREAMING_COPY_MIN + 4096) ? chunk(hi - lo, 1, true, null) : BCAST_CHUNK;
        for (long at = lo; at < hi; at += chunk) {
            long len = Math.min(chunk, hi - at);
            if (rank != root) MemorySegment.copy(buf[root], off[root] + at, buf[rank], off[rank] + at, len);
            for (int i = 1; i < n; i++) {
                int q = rank + i < n ? rank + i : rank + i - n;
                if (q != root) MemorySegment.copy(buf[root], off[root] + at, buf[q], off[q] + at, len);
            }
        }
    }

    /** Bytes a split broadcast copies to every destination before the next ones (they stay in L2 meanwhile). */
    static final long BCAST_CHUNK = 64 * 1024;
}
