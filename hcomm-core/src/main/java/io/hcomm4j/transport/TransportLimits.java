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
 */
public record TransportLimits(long unexpectedTotal, int unexpectedCount, AcceptGate.Limits accept) {
    /** The defaults: 1 GiB, 1 Mi messages, {@link AcceptGate.Limits#DEFAULT}. */
    public static final TransportLimits DEFAULT = new TransportLimits(1L << 30, 1 << 20, AcceptGate.Limits.DEFAULT);
}
