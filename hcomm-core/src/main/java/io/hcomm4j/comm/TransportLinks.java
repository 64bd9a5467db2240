package io.hcomm4j.comm;

import io.hcomm4j.CollectiveMismatchException;
import io.hcomm4j.CommFuture;
import io.hcomm4j.Status;
import io.hcomm4j.algo.CollectiveLinks;
import io.hcomm4j.transport.TcpTransport;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The links of one collective op: the transport's tagged messages on the communicator's collective
 * channel (its id with the collective bit, so user receives with ANY_TAG never see them), tagged with
 * the op's sequence number, so consecutive ops and ops issued from different threads never mix.
 */
final class TransportLinks implements CollectiveLinks, AutoCloseable {
    private final TcpTransport transport;
    private final long channel;
    private final int tag;
    private final int rank;
    private final int size;
    private final String op;
    private final ScratchPool pool;
    /** Communicator rank → world rank, or null (world). */
    private final int[] group;
    private List<MemorySegment> scratch;

    TransportLinks(TcpTransport transport, long channel, long seq, int rank, int size, int[] group, String op, ScratchPool pool) {
        this.group = group;
        this.transport = transport;
        this.channel = channel;
        this.tag = (int) (seq & 0x7fffffff);
        this.rank = rank;
        this.size = size;
        this.op = op;
        this.pool = pool;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public CommFuture<Void> send(int peer, MemorySegment slice) {
        return transport.send(channel, group == null ? peer : group[peer], tag, slice);
    }

    @Override
    public CommFuture<Status> recv(int peer, MemorySegment slice) {
        return transport.recv(channel, group == null ? peer : group[peer], tag, slice);
    }

    @Override
    public void await(CommFuture<Status> recv, long expectedBytes) {
        Status st;
        try {
            st = recv.await();
        } catch (IllegalArgumentException tooLong) {
            throw new CollectiveMismatchException("rank " + rank + ": " + op + ": a peer sent more data than this rank's "
                    + "arguments allow (" + tooLong.getMessage() + "): the ranks called it with different counts or types");
        }
        if (st.bytes() != expectedBytes) {
            throw new CollectiveMismatchException("rank " + rank + ": " + op + ": rank " + st.source() + " sent " + st.bytes()
                    + " bytes where this rank expected " + expectedBytes + ": the ranks called it with different counts or types");
        }
    }

    @Override
    public MemorySegment scratch(long bytes) {
        MemorySegment s = pool.take(bytes);
        if (scratch == null) scratch = new ArrayList<>(2);
        scratch.add(s);
        return s.asSlice(0, bytes);
    }

    @Override
    public void close() {
        if (scratch != null) {
            for (MemorySegment s : scratch) pool.give(s);
            scratch = null;
        }
    }
}
