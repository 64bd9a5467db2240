package io.hcomm4j.transport;

/**
 * One link to a peer as {@link PeerTransport#linkStats} reports it.
 *
 * @param index          0 for the primary link, k for rail k
 * @param kind           {@code tcp} or {@code shm}
 * @param route          {@code local -> remote} for TCP
 * @param bytesPerSecond the rate its chunk acknowledgements measured (0: not measured yet)
 * @param bytes          chunk bytes the peer acknowledged on it so far (its share of the striped traffic)
 * @param roundTripNanos the shortest round trip of a latency probe on it (see {@link Frame#ECHO}); 0: not probed
 * @param unsentBytes    the bound on bytes its socket holds unsent, set from its rate (see {@link TcpOptions}); 0: the
 *                       kernel's own
 * @param congestion     its socket's TCP congestion control algorithm (see {@link CongestionControl}); "": not known
 */
public record LinkStats(int index, String kind, String route, double bytesPerSecond, long bytes, long roundTripNanos,
                        long unsentBytes, String congestion) {
}
