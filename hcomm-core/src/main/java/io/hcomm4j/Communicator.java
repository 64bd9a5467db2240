package io.hcomm4j;

import java.lang.foreign.MemorySegment;

/**
 * A group of ranks that exchange messages: ranks {@code 0 .. size()-1}. Obtained from {@link Hcomm#world()}.
 *
 * <p>Point-to-point messages carry a tag ({@code >= 0}). Messages from one sender with one tag are received
 * in the order they were sent (the MPI non-overtaking rule). Every call is thread-safe; every blocking call
 * has a deadline ({@code HCOMM_TIMEOUT}) and throws {@link CommTimeoutException} naming the op and peer.
 * A peer that dies fails the ops that wait for it with {@link PeerFailedException}. Bad arguments throw
 * {@link IllegalArgumentException} naming the argument and the rank.
 *
 * <p>Sizes are {@code long}: a single message may exceed 2 GiB when sent from a {@link MemorySegment}.
 */
public interface Communicator extends AutoCloseable {
    /** Receive from any source. */
    int ANY_SOURCE = -1;
    /** Receive with any tag. */
    int ANY_TAG = -1;

    /** This process's rank in the communicator. */
    int rank();

    /** Number of ranks in the communicator. */
    int size();

    /**
     * Starts sending {@code buf} (all of it) to {@code peer}. The buffer must not change until the future
     * completes. Off-heap segments are written to the socket without a copy.
     */
    CommFuture<Void> sendAsync(MemorySegment buf, int peer, int tag);

    /**
     * Starts receiving one message from {@code peer} (or {@link #ANY_SOURCE}) with {@code tag} (or
     * {@link #ANY_TAG}) into {@code buf}. The message may be shorter than the buffer; a longer one fails the
     * receive with an exception naming the buffer size and the message size.
     */
    CommFuture<Status> recvAsync(MemorySegment buf, int peer, int tag);

    /**
     * Waits until a message from {@code peer} (or {@link #ANY_SOURCE}) with {@code tag} (or {@link #ANY_TAG}) can be
     * received, and returns its source, tag and size without receiving it: allocate a buffer of that size,
     * then {@code recv} it with the returned source and tag. Receives posted earlier take messages first.
     */
    default Status probe(int peer, int tag) {
        return probeAsync(peer, tag).await();
    }

    /** The asynchronous form of {@link #probe}. */
    CommFuture<Status> probeAsync(int peer, int tag);

    /**
     * The status of a message from {@code peer} (or ANY_SOURCE) with {@code tag} (or ANY_TAG) that a receive
     * posted now would get, if one has arrived; never waits (MPI_Iprobe).
     */
    java.util.Optional<Status> iprobe(int peer, int tag);

    /** Blocking send: {@code sendAsync(buf, peer, tag).await()}. */
    default void send(MemorySegment buf, int peer, int tag) {
        sendAsync(buf, peer, tag).await();
    }

    /** Blocking receive: {@code recvAsync(buf, peer, tag).await()}. */
    default Status recv(MemorySegment buf, int peer, int tag) {
        return recvAsync(buf, peer, tag).await();
    }

    /** Blocking send of an array (byte elements; the array is read in place for the duration of the op). */
    default void send(byte[] data, int peer, int tag) {
        send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking receive into an array (byte elements; the message may be shorter than the array). */
    default Status recv(byte[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking send of an array (short elements; the array is read in place for the duration of the op). */
    default void send(short[] data, int peer, int tag) {
        send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking receive into an array (short elements; the message may be shorter than the array). */
    default Status recv(short[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking send of an array (int elements; the array is read in place for the duration of the op). */
    default void send(int[] data, int peer, int tag) {
        send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking receive into an array (int elements; the message may be shorter than the array). */
    default Status recv(int[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking send of an array (long elements; the array is read in place for the duration of the op). */
    default void send(long[] data, int peer, int tag) {
        send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking receive into an array (long elements; the message may be shorter than the array). */
    default Status recv(long[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking send of an array (float elements; the array is read in place for the duration of the op). */
    default void send(float[] data, int peer, int tag) {
        send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking receive into an array (float elements; the message may be shorter than the array). */
    default Status recv(float[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking send of an array (double elements; the array is read in place for the duration of the op). */
    default void send(double[] data, int peer, int tag) {
        send(MemorySegment.ofArray(data), peer, tag);
    }

    /** Blocking receive into an array (double elements; the message may be shorter than the array). */
    default Status recv(double[] data, int peer, int tag) {
        return recv(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous send of an array (byte elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> sendAsync(byte[] data, int peer, int tag) {
        return sendAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous receive into an array (byte elements; the message may be shorter than the array). */
    default CommFuture<Status> recvAsync(byte[] data, int peer, int tag) {
        return recvAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous send of an array (short elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> sendAsync(short[] data, int peer, int tag) {
        return sendAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous receive into an array (short elements; the message may be shorter than the array). */
    default CommFuture<Status> recvAsync(short[] data, int peer, int tag) {
        return recvAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous send of an array (int elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> sendAsync(int[] data, int peer, int tag) {
        return sendAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous receive into an array (int elements; the message may be shorter than the array). */
    default CommFuture<Status> recvAsync(int[] data, int peer, int tag) {
        return recvAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous send of an array (long elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> sendAsync(long[] data, int peer, int tag) {
        return sendAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous receive into an array (long elements; the message may be shorter than the array). */
    default CommFuture<Status> recvAsync(long[] data, int peer, int tag) {
        return recvAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous send of an array (float elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> sendAsync(float[] data, int peer, int tag) {
        return sendAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous receive into an array (float elements; the message may be shorter than the array). */
    default CommFuture<Status> recvAsync(float[] data, int peer, int tag) {
        return recvAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous send of an array (double elements; the array is read in place for the duration of the op). */
    default CommFuture<Void> sendAsync(double[] data, int peer, int tag) {
        return sendAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** Asynchronous receive into an array (double elements; the message may be shorter than the array). */
    default CommFuture<Status> recvAsync(double[] data, int peer, int tag) {
        return recvAsync(MemorySegment.ofArray(data), peer, tag);
    }

    /** A new ordered queue of ops on this communicator (see {@link Stream}). */
    Stream newStream();

    /** True once {@link #close()} was called. */
    boolean isClosed();

    /**
     * Closes the communicator: pending ops fail with {@link CommAbortedException}. Closing the world
     * communicator does not close the {@link Hcomm} session; closing the session closes every communicator.
     */
    @Override
    void close();
}
