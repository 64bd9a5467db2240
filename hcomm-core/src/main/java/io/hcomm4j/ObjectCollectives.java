package io.hcomm4j;

import java.util.List;

/**
 * Collectives and point-to-point of Java objects, the part of {@link Communicator} that does what torch.distributed's
 * {@code all_gather_object}, {@code broadcast_object_list}, {@code gather_object}, {@code scatter_object_list},
 * {@code send_object_list}/{@code recv_object_list} and mpi4py's lower-case {@code comm.allgather}, {@code bcast} ...
 * do: {@code List<String> names = comm.allGatherObject(myName);}.
 *
 * <p>Objects travel as bytes of an {@link ObjectCodec}: by default {@link ObjectCodec#standard()} (null, strings,
 * boxed primitives, primitive arrays, lists, sets and maps of them, nested; safe to decode whatever a peer sends);
 * each method has an overload that takes a codec ({@code ObjectCodec.standard(MyRecord.class)}, a codec of your own,
 * {@link ObjectCodec#javaSerialization(Class...)}). Every rank must use codecs that read each other's bytes.
 *
 * <p>Each collective is made of the byte collectives of {@link Communicator}: an all-gather (or broadcast) of the
 * encoded sizes, then an all-gather-v, broadcast, gather-v or scatter-v of the bytes, so it has their semantics: every
 * rank calls it in the same order as its other collectives, with the same root; mismatches, failed peers, aborts and
 * {@code HCOMM_TIMEOUT} end it as they end those, and it counts in {@link Communicator#metrics()} as those two calls.
 * Results are always decoded copies, on every rank, the caller's own contribution included (nothing is shared with
 * the arguments); lists are unmodifiable and may hold nulls.
 *
 * <p>Failures. Each rank encodes before it communicates. If a rank cannot (its codec refuses the object, a root's list
 * has the wrong size), it still takes part, sending a refusal in place of its size, and then every rank throws:
 * that rank an {@link IllegalArgumentException} {@code "rank 2: allGatherObject: <reason>"}, every other a
 * {@link CollectiveMismatchException} {@code "rank 0: allGatherObject fails on every rank: rank 2 refused its own
 * arguments: <reason>"}. No rank is left waiting. Bytes that a rank's codec cannot decode (codecs that differ between
 * ranks, a class a filter refuses) fail on that rank after the data moved, with an {@link IllegalArgumentException}
 * naming the rank the object came from. An {@link Error} thrown by a codec is not caught.
 *
 * <p>No {@code *Async} forms of the collectives: the size of the second step is known only when the first is done,
 * and a collective takes its place in the communicator's order when it is called, so a second step started later
 * could fall behind collectives called in between. {@link #sendObjectAsync} exists (one message).
 *
 * <p>Sizes: an encoded object is at most 2 GiB (a {@code byte[]}), and so are the objects of one all-gather or
 * gather together on a receiving rank; larger data belongs in {@code MemorySegment}s and the byte collectives.
 */
public sealed interface ObjectCollectives permits Communicator {
    /**
     * Collective: every rank's {@code obj} (encoded with {@link ObjectCodec#standard()}), in rank order, on every rank.
     * Like torch's {@code all_gather_object} and mpi4py's {@code comm.allgather}.
     *
     * @param obj this rank's object (may be null)
     * @param <T> the objects' type (the result's elements are decoded copies, cast unchecked)
     * @return element r is rank r's object; unmodifiable
     * @throws IllegalArgumentException   if the codec refuses {@code obj} (after every rank learned it)
     * @throws CollectiveMismatchException if another rank's codec refused its object
     */
    default <T> List<T> allGatherObject(T obj) {
        return allGatherObject(obj, ObjectCodec.standard());
    }

    /** {@link #allGatherObject(Object)} with {@code codec} (the same on every rank). */
    default <T> List<T> allGatherObject(T obj, ObjectCodec<? super T> codec) {
        return new ObjectExchange(self(), "allGatherObject").allGather(obj, codec);
    }

    /**
     * Collective: {@code root}'s {@code obj} on every rank (encoded with {@link ObjectCodec#standard()}); the other
     * ranks' {@code obj} is ignored (pass null). Like torch's {@code broadcast_object_list} and mpi4py's
     * {@code comm.bcast}.
     *
     * @return a decoded copy of root's object, on the root too
     * @throws IllegalArgumentException    on the root, if the codec refuses {@code obj}; on every rank, if {@code root}
     *                                     is out of range (from the broadcast it starts with)
     * @throws CollectiveMismatchException on the other ranks, if the root's codec refused its object
     */
    default <T> T broadcastObject(T obj, int root) {
        return broadcastObject(obj, root, ObjectCodec.standard());
    }

    /** {@link #broadcastObject(Object, int)} with {@code codec} (the same on every rank). */
    default <T> T broadcastObject(T obj, int root, ObjectCodec<? super T> codec) {
        return new ObjectExchange(self(), "broadcastObject").broadcast(obj, root, codec);
    }

    /**
     * Collective: every rank's {@code obj} (encoded with {@link ObjectCodec#standard()}), in rank order, on
     * {@code root}. Like torch's {@code gather_object} and mpi4py's {@code comm.gather}. The sizes go to every rank
     * (an all-gather of one {@code long} each), so that every rank learns of a refusal and fails with it.
     *
     * @return on {@code root}: element r is rank r's object (unmodifiable); on every other rank: {@code null}
     * @throws IllegalArgumentException    if the codec refuses {@code obj}
     * @throws CollectiveMismatchException if another rank's codec refused its object
     */
    default <T> List<T> gatherObject(T obj, int root) {
        return gatherObject(obj, root, ObjectCodec.standard());
    }

    /** {@link #gatherObject(Object, int)} with {@code codec} (the same on every rank). */
    default <T> List<T> gatherObject(T obj, int root, ObjectCodec<? super T> codec) {
        return new ObjectExchange(self(), "gatherObject").gather(obj, root, codec);
    }

    /**
     * Collective: element r of {@code root}'s {@code objs} (encoded with {@link ObjectCodec#standard()}) on rank r.
     * The other ranks' {@code objs} is ignored (pass null). Like torch's {@code scatter_object_list} and mpi4py's
     * {@code comm.scatter}.
     *
     * @param objs on the root, one object per rank ({@code size()} elements, nulls allowed)
     * @return a decoded copy of the root's element for this rank
     * @throws IllegalArgumentException    on the root, if {@code objs} is null, does not have {@code size()} elements
     *                                     or holds an object the codec refuses (the message names its index)
     * @throws CollectiveMismatchException on the other ranks, in those cases
     */
    default <T> T scatterObject(List<? extends T> objs, int root) {
        return scatterObject(objs, root, ObjectCodec.standard());
    }

    /** {@link #scatterObject(List, int)} with {@code codec} (the same on every rank). */
    default <T> T scatterObject(List<? extends T> objs, int root, ObjectCodec<? super T> codec) {
        return new ObjectExchange(self(), "scatterObject").scatter(objs, root, codec);
    }

    /**
     * Sends {@code obj} (encoded with {@link ObjectCodec#standard()}) to {@code peer} as one message with {@code tag},
     * for {@link #recvObject}. Like torch's {@code send_object_list} and mpi4py's {@code comm.send}. The message is a
     * kind byte ({@code 1}: an object follows; {@code 2}: a refusal, its reason in UTF-8 follows) and the codec's bytes.
     * If the codec refuses {@code obj}, the peer is sent the refusal (so its {@code recvObject} fails with the reason
     * instead of waiting), then this throws.
     *
     * @throws IllegalArgumentException if the codec refuses {@code obj}, or {@code peer} or {@code tag} is invalid
     */
    default void sendObject(Object obj, int peer, int tag) {
        sendObject(obj, peer, tag, ObjectCodec.standard());
    }

    /** {@link #sendObject(Object, int, int)} with {@code codec} (the receiver's must read its bytes). */
    default <T> void sendObject(T obj, int peer, int tag, ObjectCodec<? super T> codec) {
        new ObjectExchange(self(), "sendObject").send(obj, peer, tag, codec, true).await();
    }

    /**
     * Starts {@link #sendObject(Object, int, int)}: encodes {@code obj} now, on the caller's thread, then sends it
     * asynchronously (the future completes as {@link Communicator#sendAsync} does).
     *
     * @throws IllegalArgumentException at once, if the codec refuses {@code obj} (the peer is sent the refusal)
     */
    default CommFuture<Void> sendObjectAsync(Object obj, int peer, int tag) {
        return sendObjectAsync(obj, peer, tag, ObjectCodec.standard());
    }

    /** {@link #sendObjectAsync(Object, int, int)} with {@code codec}. */
    default <T> CommFuture<Void> sendObjectAsync(T obj, int peer, int tag, ObjectCodec<? super T> codec) {
        return new ObjectExchange(self(), "sendObjectAsync").send(obj, peer, tag, codec, false);
    }

    /**
     * Receives an object that {@code sendObject} sent from {@code peer} (or {@link Communicator#ANY_SOURCE}) with
     * {@code tag} (or {@link Communicator#ANY_TAG}), decoded with {@link ObjectCodec#standard()}. It learns the size
     * with {@link Communicator#probe}, then receives that message: two threads that receive from the same source
     * and tag at once may take each other's message (use a tag per thread).
     *
     * @param <T> the type expected (the decoded value is cast unchecked)
     * @throws HcommException           if the sender's codec refused its object (the message gives its reason)
     * @throws IllegalArgumentException if the message is not one of {@code sendObject}, or the codec cannot decode it
     *                                  (the message is consumed); or, without receiving it, if it exceeds 2 GiB
     */
    default <T> T recvObject(int peer, int tag) {
        return recvObject(peer, tag, ObjectCodec.standard());
    }

    /** {@link #recvObject(int, int)} with {@code codec} (it must read the sender's bytes). */
    default <T> T recvObject(int peer, int tag, ObjectCodec<? super T> codec) {
        return new ObjectExchange(self(), "recvObject").recv(peer, tag, codec);
    }

    /** This, as the communicator it is: Communicator is the only type this interface permits. */
    private Communicator self() {
        return (Communicator) this;
    }
}
