package io.hcomm4j.comm;

import io.hcomm4j.DataType;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.rma.WindowGroup;
import io.hcomm4j.transport.PeerTransport;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/** A communicator as the one-sided layer sees it ({@link WindowGroup}): ranks, an exchange, a barrier, its state. */
final class WindowMembers implements WindowGroup {
    private final CommunicatorImpl comm;
    private final Session session;
    private final PeerTransport transport;
    private final int number;

    WindowMembers(CommunicatorImpl comm, Session session, PeerTransport transport, int number) {
        this.comm = comm;
        this.session = session;
        this.transport = transport;
        this.number = number;
    }

    @Override
    public int rank() {
        return comm.rank();
    }

    @Override
    public int size() {
        return comm.size();
    }

    @Override
    public long commId() {
        return comm.id();
    }

    @Override
    public int nextWindowNumber() {
        return number;
    }

    @Override
    public int worldRank(int r) {
        return comm.world(r);
    }

    @Override
    public boolean sameHost(int r) {
        return session.sameHost(comm.world(r)) && transport.shmDir() != null;
    }

    @Override
    public byte[][] allGather(byte[] mine) {
        int n = comm.size();
        byte[] all = new byte[mine.length * n];
        comm.allGather(MemorySegment.ofArray(mine), MemorySegment.ofArray(all), mine.length, DataType.INT8);
        byte[][] out = new byte[n][];
        for (int r = 0; r < n; r++) out[r] = java.util.Arrays.copyOfRange(all, r * mine.length, (r + 1) * mine.length);
        return out;
    }

    @Override
    public io.hcomm4j.monitor.OpTrace trace() {
        return comm.trace();
    }

    @Override
    public void barrier() {
        comm.barrier();
    }

    @Override
    public PeerTransport transport() {
        return transport;
    }

    @Override
    public MemoryPool pool() {
        return session.memory();
    }

    @Override
    public Path shmDir() {
        return transport.shmDir();
    }

    @Override
    public long timeoutNanos() {
        return comm.timeoutNanos();
    }

    @Override
    public void checkUsable(String what) {
        comm.checkUsable(what);
    }

    @Override
    public boolean failed(int r) {
        return transport.failed(comm.world(r));
    }

    @Override
    public RuntimeException failure(int r, String what) {
        int w = comm.world(r);
        return transport.failed(w) ? transport.failure(w, what) : null;
    }
}
