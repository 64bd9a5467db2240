package io.hcomm4j.comm;

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

    CollectiveCall(CollectiveFrame frame) {
        this.frame = frame;
    }

    /** Sets the fields every op has (the buffers may be null); returns this. */
    CollectiveCall of(CollectiveOp op, int fingerprint, long bytes, MemorySegment send, MemorySegment recv) {
        this.op = op;
        this.fingerprint = fingerprint;
        this.bytes = bytes;
        this.send = send;
        this.recv = recv;
        return this;
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
    }
}
