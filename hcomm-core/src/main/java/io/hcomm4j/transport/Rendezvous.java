package io.hcomm4j.transport;

import io.hcomm4j.HcommException;
import io.hcomm4j.memory.SharedFiles;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * The sending side of a message and the frames that move its bytes: up to the eager limit (and while the receiver
 * gives credit) the bytes travel with the header (EAGER); larger ones go as a ready-to-send (RTS) and their bytes only
 * after the receiver matched them and cleared them (CTS, then DATA), so an unexpected large message costs no buffer.
 * Between ranks of one host a rendezvous message from a registered buffer goes as a reference (DATA_REF): the
 * receiver copies it straight out of the sender's mapping and answers DATA_DONE (one copy instead of two).
 */
final class Rendezvous {
    private final PeerTransport t;
    private final int rank;
    private final long eagerLimit;
    private final PeerLink[] links;
    private final String ownFilePrefix = SharedFiles.ownPrefix();
    /** Rendezvous sends whose data went as DATA_REF (the peer read it in place), for diagnostics and tests. */
    final java.util.concurrent.atomic.AtomicLong oneCopySends = new java.util.concurrent.atomic.AtomicLong();
    /** The last registered file a send came from and its sequence number (poller only: a one-entry cache). */
    private Path lastRefFile;
    private long lastRefSeq;

    Rendezvous(PeerTransport t, int rank, long eagerLimit, PeerLink[] links) {
        this.t = t;
        this.rank = rank;
        this.eagerLimit = eagerLimit;
        this.links = links;
    }

    /**
     * Sends {@code buf} to world rank {@code dst}; a {@link io.hcomm4j.PeerFailedException} it fails with names ranks
     * as {@code rankMap[worldRank]} (null: world ranks); {@code high}: its chunks go before other messages' ones.
     */
    SendRequest send(long commId, int dst, int tag, MemorySegment buf, int flags, int[] rankMap, boolean high) {
        SendRequest s = new SendRequest(t, commId, dst, tag, buf, flags, rankMap);
        if (high) s.priority = DataPump.HIGH;
        if (t.isClosing()) {
            s.abort("failed: the session is closed");
            return s;
        }
        if (dst == rank) {
            t.matching.sendToSelf(s);
            return s;
        }
        PeerLink l = links[dst];
        if (l.state != PeerLink.State.CONNECTED) {
            try {
                l = t.connections.linkTo(dst, System.nanoTime() + t.timeoutNanos);
            } catch (HcommException e) {
                s.fail(e);
                return s;
            }
        }
        boolean ok;
        int eager = s.size <= eagerLimit ? l.sendEager(flags, commId, tag, buf, s) : FrameWriter.NO_CREDIT;
        if (eager != FrameWriter.NO_CREDIT) {
            ok = eager == FrameWriter.SENT;
        } else {
            s.msgId = l.nextMsgId();
            l.awaitingCts.put(s.msgId, s);
            ok = l.sendFrame(Frame.RTS, flags, commId, tag, s.size, s.msgId, null, null);
            if (!ok) l.awaitingCts.remove(s.msgId);
        }
        if (!ok) s.fail(t.failures.peerFailed(dst, "send to rank " + dst, null));
        return s;
    }

    /**
     * The CTS for {@code s} came: send its data. To a peer on this host, a buffer from this session's memory pool goes as
     * a DATA_REF (where it lies in our file; the peer copies it straight out and answers DATA_DONE); anything else
     * streams through the ring for a peer on this host (two copies, pipelined), or goes over TCP as chunks that the
     * links to the peer take as they have room ({@link DataPump}).
     */
    void sendData(PeerLink l, SendRequest s, long msgId) {
        ShmOptions so = t.shm();
        if (l.ch instanceof ShmConduit c && so != null && so.pool() != null && s.size > 0) {
            var reg = so.pool().lookup(s.buf);
            long seq = reg.isEmpty() ? -1 : fileSequence(reg.get().file());
            if (seq >= 0) {
                long offset = reg.get().offset();
                l.awaitingDone.put(msgId, s);
                oneCopySends.incrementAndGet();
                if (!l.sendFrame(Frame.DATA_REF, (int) offset, seq, (int) (offset >>> 32), s.size, msgId, null, null)
                        && l.awaitingDone.remove(msgId) != null) {
                    s.fail(t.failures.peerFailed(l.peer, s.describe(), null));
                }
                return;
            }
        }
        if (l.ch instanceof ShmConduit || s.size == 0) {
            l.sendFrame(Frame.DATA, 0, s.commId, s.tag, s.size, msgId, s.buf, s);
        } else {
            l.pump.add(s); // in chunks, over whichever links to the peer have room
        }
    }

    /** The sequence number of our pool file {@code file}, or -1 if it is not one of ours. */
    private long fileSequence(Path file) {
        if (file == lastRefFile) return lastRefSeq;
        String name = file.getFileName().toString();
        long seq = name.startsWith(ownFilePrefix) ? SharedFiles.sequence(name) : -1;
        lastRefFile = file;
        lastRefSeq = seq;
        return seq;
    }

    /** A DATA_REF came: copy the message out of the sender's file into the receive buffer, then tell the sender. */
    void onDataRef(PeerLink l, long msgId, long fileSeq, long offset, long length) throws PeerLink.ProtocolException {
        if (!(l.ch instanceof ShmConduit c)) throw new PeerLink.ProtocolException("DATA_REF over TCP");
        RecvRequest r = l.awaitingData.remove(msgId);
        if (r == null) throw new PeerLink.ProtocolException("DATA_REF for unknown message " + msgId);
        if (length != r.matchedSize) {
            throw new PeerLink.ProtocolException("DATA_REF of " + length + " bytes for a message of " + r.matchedSize);
        }
        MemorySegment file;
        try {
            file = c.peerFile(fileSeq);
        } catch (IOException e) {
            l.sendFrame(Frame.DATA_DONE, Frame.DONE_FAILED, 0, 0, 0, msgId, null, null);
            r.fail(new HcommException("rank " + rank + ": " + r.describe() + ": cannot map the buffer of rank " + l.peer
                    + " to read the message in place: " + e.getMessage(), e));
            return;
        }
        if (offset < 0 || offset > file.byteSize() - length) {
            throw new PeerLink.ProtocolException("DATA_REF of [" + offset + ", +" + length + ") beyond a file of " + file.byteSize());
        }
        if (!r.finished()) MemorySegment.copy(file, offset, r.buf, 0, length); // a failed receive no longer owns its buffer
        l.sendFrame(Frame.DATA_DONE, 0, 0, 0, 0, msgId, null, null);
        if (!r.isDone()) r.succeedMatched();
    }

    /** The peer read a DATA_REF message of ours: its send is complete. */
    void onDataDone(PeerLink l, long msgId, int flags) throws PeerLink.ProtocolException {
        if (!(l.ch instanceof ShmConduit)) throw new PeerLink.ProtocolException("DATA_DONE over TCP");
        SendRequest s = l.awaitingDone.remove(msgId);
        if (s == null) throw new PeerLink.ProtocolException("DATA_DONE for unknown message " + msgId);
        if ((flags & Frame.DONE_FAILED) != 0) {
            s.fail(new HcommException("rank " + rank + ": " + s.describe() + ": rank " + l.peer
                    + " could not map this buffer to read it in place (is HCOMM_SHM_DIR the same for both?)"));
        } else {
            s.succeed(null);
        }
    }
}
