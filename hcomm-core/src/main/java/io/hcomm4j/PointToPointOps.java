package io.hcomm4j;

import java.lang.foreign.MemorySegment;

/**
 * The point-to-point half of a {@link Communicator}: sends and receives of a {@link MemorySegment} or a primitive
 * array, blocking and asynchronous. Every message carries a tag ({@code >= 0}); messages from one sender with one tag
 * are received in the order they were sent (the MPI non-overtaking rule). A receive takes a message from {@code peer}
 * or {@link Communicator#ANY_SOURCE}, with {@code tag} or {@link Communicator#ANY_TAG}.
 */
public interface PointToPointOps {
    /**
     * Starts sending {@code buf} (all of it) to {@code peer}. The buffer must not change until the future
     * completes. Off-heap segments are written to the socket without a copy.
     */
    CommFuture<Void> sendAsync(MemorySegment buf, int peer, int tag);

    /**
     * Starts receiving one message from {@code peer} (or {@link Communicator#ANY_SOURCE}) with {@code tag} (or
     * {@link Communicator#ANY_TAG}) into {@code buf}. The message may be shorter than the buffer; a longer one fails the
     * receive with an exception naming the buffer size and the message size.
     */
    CommFuture<Status> recvAsync(MemorySegment buf, int peer, int tag);

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
}
