package io.hcomm4j.algo;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import java.lang.foreign.MemorySegment;

/**
 * A group of an op's ranks seen as links of their own: sub-rank i is rank {@code members[i]} of the op. Messages go
 * through the op's links unchanged (same tag, same fingerprint), so a flat algorithm runs on the group as it would on
 * a communicator of those ranks. Two levels that use the same pair of ranks one after the other cannot mix: each
 * level ends (every receive awaited) before the next starts on a rank, and messages between a pair are matched in
 * the order they were sent.
 */
final class SubLinks implements CollectiveLinks {
    private final CollectiveLinks parent;
    private final int[] members;
    private final int rank;

    /** @param me this rank's index in {@code members} */
    SubLinks(CollectiveLinks parent, int[] members, int me) {
        if (members[me] != parent.rank()) {
            throw new IllegalArgumentException("rank " + parent.rank() + " is not member " + me + " of " + java.util.Arrays.toString(members));
        }
        this.parent = parent;
        this.members = members;
        this.rank = me;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return members.length;
    }

    @Override
    public CommFuture<Void> send(int peer, MemorySegment slice) {
        return parent.send(members[peer], slice);
    }

    @Override
    public CommFuture<Status> recv(int peer, MemorySegment slice) {
        return parent.recv(members[peer], slice);
    }

    @Override
    public void await(CommFuture<Status> recv, long expectedBytes) {
        parent.await(recv, expectedBytes);
    }

    @Override
    public MemorySegment scratch(long bytes) {
        return parent.scratch(bytes);
    }
}
