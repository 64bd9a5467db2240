package io.hcomm4j.rma;

import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.transport.PeerTransport;
import java.nio.file.Path;

/**
 * What a window needs of the communicator it is made on (implemented by the comm layer, which sits above this one):
 * its ranks, a collective exchange and a barrier among them, the session's transport and pool, and its failure state.
 */
public interface WindowGroup {
    int rank();

    int size();

    /** The communicator's id (windows derive theirs from it). */
    long commId();

    /** Collective order: 0 for the communicator's first window, 1 for the next... (windows derive their ids from it). */
    int nextWindowNumber();

    /** The world rank of communicator rank {@code r}. */
    int worldRank(int r);

    /** True if rank {@code r} is another process of this host reachable through shared memory. */
    boolean sameHost(int r);

    /** Collective: every member's {@code mine} (all of one length), in rank order. */
    byte[][] allGather(byte[] mine);

    /** Collective: returns when every member has called it. */
    void barrier();

    PeerTransport transport();

    /** The session's registered memory, or null if shared memory is off. */
    MemoryPool pool();

    /** Where the session's shared-memory files are, or null if shared memory is off. */
    Path shmDir();

    /** The communicator's flight record (one-sided ops are recorded there too). */
    io.hcomm4j.monitor.OpTrace trace();

    /** HCOMM_TIMEOUT in nanoseconds. */
    long timeoutNanos();

    /** Throws if the communicator is closed or aborted (naming {@code what}). */
    void checkUsable(String what);

    /** True if rank {@code r} is known to have failed. */
    boolean failed(int r);

    /** The PeerFailedException for an op of {@code what} on rank {@code r} if {@code r} failed, else null. */
    RuntimeException failure(int r, String what);
}
