package io.hcomm4j.transport;

import io.hcomm4j.security.AcceptGate;

/**
 * The transport's bounds against floods and hostile peers (issue 18, "limits that hold"), taken from CommConfig by the
 * layer above; docs/reliability.md lists them with the tests that show them.
 *
 * @param unexpectedTotal bytes of unexpected eager messages held from all peers and communicators together
 *                        ({@code HCOMM_UNEXPECTED_TOTAL}); a message beyond it fails its link
 * @param unexpectedCount unexpected messages and rendezvous requests held from all peers and communicators together
 *                        ({@code HCOMM_UNEXPECTED_COUNT}); one beyond it fails its link
 * @param accept          what a data listener lets in before the secret is proven
 * @param resendLogFrames frames a reliable link keeps for a resend before the peer acknowledges them
 *                        ({@code HCOMM_RESEND_LOG_FRAMES}, a power of two); beyond it the link fails
 * @param resendLogBytes  bytes of the ring that keeps their headers and copied payloads ({@code HCOMM_RESEND_LOG_BYTES}, a
 *                        power of two of at most 1 GiB); beyond it the link fails
 */
public record TransportLimits(long unexpectedTotal, int unexpectedCount, AcceptGate.Limits accept, int resendLogFrames,
                              long resendLogBytes) {
    /** The defaults: 1 GiB, 1 Mi messages, {@link AcceptGate.Limits#DEFAULT}, 4 Mi frames and 1 GiB of resend log. */
    public static final TransportLimits DEFAULT = new TransportLimits(1L << 30, 1 << 20, AcceptGate.Limits.DEFAULT);

    /** Checks the resend log's bounds (what the unexpected bounds may be is CommConfig's to check). */
    public TransportLimits {
        ResendLog.checkBounds(resendLogFrames, resendLogBytes);
    }

    /** The limits {@code c} sets. */
    public static TransportLimits of(io.hcomm4j.CommConfig c) {
        return new TransportLimits(c.unexpectedTotal(), c.unexpectedCount(), AcceptGate.Limits.of(c), c.resendLogFrames(),
                c.resendLogBytes());
    }

    /** With the default resend log bounds. */
    public TransportLimits(long unexpectedTotal, int unexpectedCount, AcceptGate.Limits accept) {
        this(unexpectedTotal, unexpectedCount, accept, ResendLog.MAX_RECORDS, ResendLog.MAX_BYTES);
    }
}
