package io.hcomm4j.comm;

import io.hcomm4j.bootstrap.Store;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last resort of mismatch detection over the transport: a collective that has waited {@link #after} compares its
 * fingerprint with those of the ranks it waits for, through the store.
 *
 * <p>Messages reveal most mismatches (every collective message carries its op's fingerprint, and a message for a
 * finished op is reported too, see {@link TransportLinks}), but not all: when one rank calls a rooted op with another
 * root, the two patterns may never cross (every rank waits to receive: the real root believes another rank is the
 * root), and nothing would end the wait but {@code HCOMM_TIMEOUT}. So a stuck op writes its sequence number and
 * fingerprint under {@code <namespace>fp/<communicator>/<world rank>} (one key per rank and communicator, overwritten)
 * and reads the keys of the ranks it waits for: a rank stuck in the same op with another fingerprint is a mismatch,
 * and the op fails and tells the others as if a message had shown it. In a wait that no message ends, some rank waits
 * for the odd one, which waits too, so one of them finds it. A straggler (the peer computes) costs one store write and
 * a read per peer and second of waiting. The store is used on a virtual thread, one check at a time, so a slow store
 * never delays the watchdog.
 */
final class StuckAgreement {
    private static final Logger LOG = LoggerFactory.getLogger(StuckAgreement.class);
    /** The longest an op waits before its first check (a shorter HCOMM_STUCK_REPORT checks sooner). */
    static final long AFTER_NANOS = 2_000_000_000L;

    private final Store store;
    private final String namespace;
    private final int rank;
    /** How long an op waits before it is checked. */
    final long after;
    private final AtomicBoolean checking = new AtomicBoolean();

    StuckAgreement(Store store, String namespace, int rank, long stuckNanos) {
        this.store = store;
        this.namespace = namespace;
        this.rank = rank;
        this.after = Math.min(AFTER_NANOS, stuckNanos);
    }

    private String key(long commId, int worldRank) {
        return namespace + "fp/" + Long.toHexString(commId) + "/" + worldRank;
    }

    /**
     * Checks {@code op} (waiting for {@code peers}, world ranks) on a virtual thread, unless a
     * check runs already (the next scan tries again).
     */
    void check(TransportLinks op, int[] peers) {
        if (peers.length == 0 || !op.runsCall() || !checking.compareAndSet(false, true)) return;
        Thread.ofVirtual().name("hcomm-agree-" + rank).start(() -> {
            try {
                if (!op.fingerprintPublished) {
                    store.set(key(op.commId, rank), (op.seq() + " " + op.fingerprint()).getBytes(StandardCharsets.UTF_8));
                    op.fingerprintPublished = true;
                }
                for (int peer : peers) {
                    byte[] v = store.tryGet(key(op.commId, peer));
                    if (v == null) continue;
                    String[] seqFp = new String(v, StandardCharsets.UTF_8).split(" ");
                    if (seqFp.length != 2 || Long.parseLong(seqFp[0]) != op.seq()) continue;
                    int theirs = Integer.parseInt(seqFp[1]);
                    if (theirs != op.fingerprint()) {
                        op.disagree(peer, theirs);
                        return;
                    }
                }
            } catch (RuntimeException e) {
                LOG.debug("rank {}: could not compare {} #{} with its peers: {}", rank, op.op(), op.seq(), e.toString());
            } finally {
                checking.set(false);
            }
        });
    }
}
