package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;

/**
 * What a collective algorithm sees of its communicator for one op: ranks, and an ordered, reliable
 * message pipe to each peer that moves {@link MemorySegment} slices. Messages of one op between two ranks
 * arrive in the order they were sent; messages of different ops never mix. Algorithms never touch
 * sockets, threads or deadlines: they start sends and receives and wait for them.
 */
public interface CollectiveLinks {
    /** This rank, {@code 0 .. size()-1}. */
    int rank();

    /** Number of ranks. */
    int size();

    /** Starts sending all of {@code slice} to {@code peer} as one message. */
    CommFuture<Void> send(int peer, MemorySegment slice);

    /** Starts receiving one message from {@code peer} into {@code slice}; {@link #await} checks its size. */
    CommFuture<Status> recv(int peer, MemorySegment slice);

    /**
     * Waits for a receive started by {@link #recv} and checks that the message filled exactly {@code expectedBytes}
     * (another size means the peer called the collective with other arguments).
     */
    void await(CommFuture<Status> recv, long expectedBytes);

    /** Scratch memory for this op (off-heap, valid until the op ends). */
    MemorySegment scratch(long bytes);
}
