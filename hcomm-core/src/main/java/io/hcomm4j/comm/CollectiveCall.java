package io.hcomm4j.comm;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import io.hcomm4j.kernel.ReduceKernel;
import java.lang.foreign.MemorySegment;

/**
 * One collective call: its op, sequence number, fingerprint and checked arguments, which {@link CollectiveFrame} runs
 * in shared memory or through the transport. A blocking call borrows the communicator's spare instance (so the hot
 * path allocates nothing); an async one gets its own, which is also the task its worker runs. Which fields an op
 * uses is its {@link CollectiveOp}'s business: the frame and the algorithms switch on it.
 */
final class CollectiveCall implements Runnable {
    private final CollectiveFrame frame;

    CollectiveOp op;
    long seq;
    int fingerprint;
    /** The fingerprint's inputs (to say which argument differs from a peer's); {@link #fpKnown} false: not recorded. */
    long fpCount;
    DataType fpType;
    /** {@link CollectiveOp#redopCode}, 0: no reduction. */
    int fpRedop;
    int fpRoot;
    boolean fpKnown;
    /** The op's size for metrics, reports and events. */
    long bytes;
    MemorySegment send;
    MemorySegment recv;
    long count;
    ReduceKernel kernel;
    /** The AVG divisor (the communicator's size), else 1. */
    int avg;
    int root;
    /** Equal-block ops: bytes of one rank's block. */
    long blockBytes;
    /** reduceScatter: elements of every rank's block when {@link #counts} is null. */
    long blockCount;
    /** reduceScatterV: elements of each rank's block. */
    long[] counts;
    /** allGather: this rank's contribution (its send buffer, or recv when in place) and where in it its block lies. */
    MemorySegment mine;
    long mineOffset;
    boolean inPlace;
    /** V forms: byte offset and length of each rank's block in the send and in the receive buffer. */
    long[] sendOff;
    long[] sendLen;
    long[] recvOff;
    long[] recvLen;
    /** allToAll(V): bytes of the send and receive buffers the blocks span. */
    long sendBytes;
    long recvBytes;
    /** Async only: the future its worker completes. */
    WorkerFuture<Void> future;
    /** The transport algorithm the tuner chose for it (null: the op has one, or it ran in shared memory). */
    io.hcomm4j.algo.Tuner.Algo algo;
    /** The bytes the tuner chose {@link #algo} for, which feedback times it under; -1: no choice was made. */
    long tunedBytes = -1;
    /** Run from a stream of {@link io.hcomm4j.Stream.Priority#HIGH} priority: its payloads' chunks go first. */
    boolean high;
    /** Its flight-record ticket ({@link io.hcomm4j.monitor.OpTrace}), -1: not recorded. */
    long ticket = -1;
    /** How its data moved, for the flight record: {@code zero_copy} or {@code transport}; null until it ran. */
    String path;
    /** The most links one of its messages went over ({@link TransportLinks#channels}); 0: none (zero copy). */
    int channels;
    /** When it ended ({@link System#nanoTime()}, read for its metrics), or 0: its flight record reads the clock. */
    long endNanos;
    /** When a call run on its caller's thread was made ({@link System#nanoTime()}), or 0 (queued: read when it runs). */
    long calledNanos;

    CollectiveCall(CollectiveFrame frame) {
        this.frame = frame;
    }

    /**
     * Sets the fields every op has (the buffers may be null), its fingerprint made of {@code count}, {@code type},
     * {@code redop} and {@code root} (see {@link CollectiveOp#fingerprint}); returns this.
     */
    CollectiveCall of(CollectiveOp op, long count, DataType type, ReduceOp redop, int root, long bytes, MemorySegment send,
                      MemorySegment recv) {
        return of(op, count, type, redop == null ? 0 : CollectiveOp.redopCode(redop), root, bytes, send, recv);
    }

    /** As above, the reduction given by its {@link CollectiveOp#redopCode} (a user's function has one too). */
    CollectiveCall of(CollectiveOp op, long count, DataType type, int redop, int root, long bytes, MemorySegment send,
                      MemorySegment recv) {
        of(op, op.fingerprint(count, type, redop, root), bytes, send, recv);
        this.fpCount = count;
        this.fpType = type;
        this.fpRedop = redop;
        this.fpRoot = root;
        this.fpKnown = true;
        return this;
    }

    /** Sets the fields every op has (the buffers may be null); returns this. */
    CollectiveCall of(CollectiveOp op, int fingerprint, long bytes, MemorySegment send, MemorySegment recv) {
        this.op = op;
        this.fingerprint = fingerprint;
        this.fpKnown = false;
        this.bytes = bytes;
        this.send = send;
        this.recv = recv;
        return this;
    }

    /**
     * " with count 1000 where rank 0 has count 1024": which argument of a call of {@code op} with these fingerprint
     * inputs (rank {@code myRank}'s) differs from the call whose fingerprint is {@code other}, or "" if that cannot be told.
     */
    static String whatDiffers(CollectiveOp op, long count, DataType type, int redop, int root, int other, int size, String myRank) {
        String theirs = op.differingArgument(other, count, type, redop, root, size);
        if (theirs == null) return "";
        if (theirs.isEmpty()) return " with other per-rank counts than " + myRank;
        return " with " + theirs + " where " + myRank + " has " + op.argumentValue(theirs, count, type, redop, root);
    }

    /**
     * The verdict of a mismatch among every rank's fingerprint as {@link CollectiveOp#describeMismatch(int[])} gives it,
     * with the differing argument's two values when this rank's fingerprint is one of the two named ({@code me}: this
     * rank): "rank 2 called allReduce with count 1000 where rank 0 has count 1024".
     */
    String verdict(int[] fingerprints, int me) {
        int[] oddRef = CollectiveOp.oddAndReference(fingerprints);
        int odd = oddRef[0];
        int ref = oddRef[1];
        String generic = CollectiveOp.describeMismatch(odd, fingerprints[odd], ref, fingerprints[ref]);
        if (!fpKnown || !CollectiveOp.labelOf(fingerprints[odd]).equals(op.label())) return generic;
        int size = fingerprints.length;
        if (fingerprints[me] == fingerprints[ref]) {
            String theirs = op.differingArgument(fingerprints[odd], fpCount, fpType, fpRedop, fpRoot, size);
            if (theirs == null || theirs.isEmpty()) return generic;
            return "rank " + odd + " called " + op.label() + " with " + theirs + " where rank " + ref + " has "
                    + op.argumentValue(theirs, fpCount, fpType, fpRedop, fpRoot);
        }
        if (fingerprints[me] == fingerprints[odd]) {
            String refs = op.differingArgument(fingerprints[ref], fpCount, fpType, fpRedop, fpRoot, size);
            if (refs == null || refs.isEmpty()) return generic;
            return "rank " + odd + " called " + op.label() + " with " + op.argumentValue(refs, fpCount, fpType, fpRedop, fpRoot)
                    + " where rank " + ref + " has " + refs;
        }
        return generic;
    }

    /** Its communicator's flight record. */
    io.hcomm4j.monitor.OpTrace trace() {
        return frame.trace;
    }

    /** Its communicator's id. */
    long commId() {
        return frame.commId();
    }

    /** Runs the op where the caller is (a stream's worker, or a blocking caller via the frame). */
    void execute() {
        frame.execute(this);
    }

    /** On the collective thread: runs the op and completes its future. */
    @Override
    public void run() {
        try {
            execute();
            future.complete(null);
        } catch (Throwable e) {
            future.completeExceptionally(e);
        }
    }

    /** The op will never run (its queue refused or skipped it): the ones numbered after it must not wait for it. */
    void giveUpTurn() {
        frame.giveUpTurn(this);
    }

    /** Drops the references to the caller's memory before the instance waits for its next call. */
    void clear() {
        send = recv = mine = null;
        kernel = null;
        counts = sendOff = sendLen = recvOff = recvLen = null;
        future = null;
        ticket = -1;
        path = null;
        channels = 0;
        endNanos = 0;
        calledNanos = 0;
    }
}
