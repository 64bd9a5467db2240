package io.hcomm4j;

import java.time.Duration;

/** The checks of {@link CommConfig.Builder#build()} that take more than a line: each throws naming the setting. */
final class ConfigChecks {
    private static final Duration MIN_HEARTBEAT_TIMEOUT = Duration.ofMillis(500);

    private ConfigChecks() {
    }

    /** The links per peer: interface names, connections per interface, congestion control. */
    static void links(String socketIfname, int channels, String tcpCongestion) {
        if (!tcpCongestion.isEmpty() && !tcpCongestion.matches("[a-z0-9_]{1,15}")) {
            throw new IllegalArgumentException("tcpCongestion (HCOMM_TCP_CONGESTION) must be 1 to 15 of a-z 0-9 _ (a "
                    + "Linux congestion control such as cubic or bbr), or empty for the system's, was '" + tcpCongestion + "'");
        }
        if (channels < 1 || channels > 16) throw new IllegalArgumentException("channels (HCOMM_CHANNELS) must be in [1, 16], was " + channels);
        if (socketIfname != null) {
            String[] names = socketIfname.split(",", -1);
            for (String n : names) {
                if (n.isBlank()) {
                    throw new IllegalArgumentException("socketIfname (HCOMM_SOCKET_IFNAME) '" + socketIfname
                            + "' has an empty interface name; give one name, or several separated by commas");
                }
            }
            if (names.length * channels > 16) {
                throw new IllegalArgumentException(names.length + " interfaces (HCOMM_SOCKET_IFNAME) x " + channels
                        + " channels (HCOMM_CHANNELS) make " + names.length * channels + " links per peer; at most 16");
            }
        }
    }

    static void hostId(String hostId) {
        if (hostId != null && (hostId.isEmpty() || hostId.length() > 200 || !hostId.chars().allMatch(c -> c > 32 && c < 127))) {
            throw new IllegalArgumentException("hostId (HCOMM_HOST_ID) must be 1 to 200 printable ASCII characters without spaces, was '" + hostId + "'");
        }
    }

    static void heartbeats(Duration heartbeatTimeout, Duration heartbeatInterval) {
        if (heartbeatTimeout.isNegative() || (!heartbeatTimeout.isZero() && heartbeatTimeout.compareTo(MIN_HEARTBEAT_TIMEOUT) < 0)) {
            throw new IllegalArgumentException("heartbeatTimeout (HCOMM_HEARTBEAT_TIMEOUT) must be at least 500ms, or 0 to turn "
                    + "heartbeats off, was " + io.hcomm4j.Units.duration(heartbeatTimeout));
        }
        if (heartbeatInterval != null) {
            if (heartbeatInterval.isNegative() || heartbeatInterval.isZero()) {
                throw new IllegalArgumentException("heartbeatInterval (HCOMM_HEARTBEAT_INTERVAL) must be > 0, was " + io.hcomm4j.Units.duration(heartbeatInterval));
            }
            if (!heartbeatTimeout.isZero() && heartbeatInterval.multipliedBy(3).compareTo(heartbeatTimeout) > 0) {
                throw new IllegalArgumentException("heartbeatInterval (HCOMM_HEARTBEAT_INTERVAL, " + heartbeatInterval
                        + ") must be at most a third of heartbeatTimeout (HCOMM_HEARTBEAT_TIMEOUT, " + heartbeatTimeout
                        + "), so that a live peer sends several heartbeats within the timeout");
            }
        }
    }

    /** Store keys are UTF-8 text; a scope of plain characters keeps them readable in {@code hcomm status} and logs. */
    static void storeScope(String scope) {
        if (scope.isEmpty()) return;
        boolean plain = scope.chars().allMatch(c -> c < 127 && (Character.isLetterOrDigit(c) || "._:/-".indexOf(c) >= 0));
        if (scope.length() > 200 || !plain || scope.startsWith("/") || scope.endsWith("/") || scope.contains("//")) {
            throw new IllegalArgumentException("storeScope (HCOMM_STORE_SCOPE) must be 1 to 200 of the characters "
                    + "A-Z a-z 0-9 . _ : / - without a leading, trailing or doubled '/', was '" + scope + "'");
        }
    }

    /** The bounds on what a rank holds of messages nobody has received yet: per peer, and from all peers together. */
    static void limits(long eagerLimit, long unexpectedLimit, long unexpectedTotal, int unexpectedCount) {
        if (eagerLimit < 0 || eagerLimit > 64L * 1024 * 1024) {
            throw new IllegalArgumentException("eagerLimit must be in [0, 64M], was " + eagerLimit);
        }
        if (unexpectedLimit < eagerLimit) {
            throw new IllegalArgumentException("unexpectedLimit (" + unexpectedLimit + ") must be >= eagerLimit (" + eagerLimit + ")");
        }
        if (unexpectedTotal < unexpectedLimit) {
            throw new IllegalArgumentException("unexpectedTotal (HCOMM_UNEXPECTED_TOTAL, " + unexpectedTotal
                    + ") must be >= unexpectedLimit (HCOMM_UNEXPECTED_LIMIT, " + unexpectedLimit + "): one peer may send that much");
        }
        if (unexpectedCount < 1024) {
            throw new IllegalArgumentException("unexpectedCount (HCOMM_UNEXPECTED_COUNT) must be in [1024, 2147483647], was " + unexpectedCount);
        }
    }

    /** Settings with a plain range. */
    static void ranges(Duration warmUp, int retryMax, Duration retryInterval, int storePort, Duration storeReconnect) {
        if (warmUp.isNegative() || warmUp.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new IllegalArgumentException("warmUp (HCOMM_WARMUP) must be in [0, 10 min], was " + io.hcomm4j.Units.duration(warmUp));
        }
        if (retryMax < 0 || retryMax > 1000) throw new IllegalArgumentException("retryMax (HCOMM_RETRY_MAX) must be in [0, 1000], was " + retryMax);
        if (retryInterval.compareTo(Duration.ofMillis(1)) < 0 || retryInterval.compareTo(Duration.ofMinutes(1)) > 0) {
            throw new IllegalArgumentException("retryInterval (HCOMM_RETRY_INTERVAL) must be in [1 ms, 1 min], was " + io.hcomm4j.Units.duration(retryInterval));
        }
        if (storePort < CommConfig.UNSET || storePort > 65535) throw new IllegalArgumentException("storePort must be in [0, 65535], was " + storePort);
        if (storeReconnect.isNegative() || storeReconnect.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new IllegalArgumentException("storeReconnect (HCOMM_STORE_RECONNECT) must be in [0, 10 min], was " + io.hcomm4j.Units.duration(storeReconnect));
        }
    }

    /** What a listener lets in before the secret is proven (the transport's AcceptGate.Limits has the same bounds). */
    static void accept(int pending, int perSource, Duration handshakeTimeout) {
        if (pending < 1 || pending > 65_536) {
            throw new IllegalArgumentException("acceptPending (HCOMM_ACCEPT_PENDING) must be in [1, 65536], was " + pending);
        }
        if (perSource < 1 || perSource > pending) {
            throw new IllegalArgumentException("acceptPendingPerSource (HCOMM_ACCEPT_PENDING_PER_SOURCE) must be in [1, acceptPending ("
                    + pending + ")], was " + perSource);
        }
        if (handshakeTimeout.compareTo(Duration.ofMillis(100)) < 0 || handshakeTimeout.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new IllegalArgumentException("handshakeTimeout (HCOMM_HANDSHAKE_TIMEOUT) must be in [100 ms, 10 min], was "
                    + io.hcomm4j.Units.duration(handshakeTimeout));
        }
    }

    /** The memory pool's bound and directory, the rings' size. */
    static void memory(long memPoolMax, String shmDir, long shmRingSize) {
        if (memPoolMax < 4096 || memPoolMax > 1L << 50) {
            throw new IllegalArgumentException("memPoolMax must be in [4K, 1P], was " + memPoolMax);
        }
        if (shmDir.isBlank()) throw new IllegalArgumentException("shmDir must not be empty");
        if (shmRingSize < 64 * 1024 || shmRingSize > 1L << 30 || Long.bitCount(shmRingSize) != 1) {
            throw new IllegalArgumentException("shmRingSize (HCOMM_SHM_RING_SIZE) must be a power of two in [64K, 1G], was " + shmRingSize);
        }
    }

    /**
     * A reliable link's resend log (the transport's ResendLog has the same bounds). It must hold what a peer that reads
     * may leave unacknowledged: eager messages up to its credit ({@code unexpectedLimit}, each at least 64 bytes of it),
     * copied into a ring of powers of two (so twice that). Without reconnects ({@code retryMax} 0) there is no log, and
     * only the plain ranges are checked.
     */
    static void resendLog(int frames, long bytes, long unexpectedLimit, int retryMax) {
        if (retryMax == 0) unexpectedLimit = 0;
        long minFrames = Math.max(1024, unexpectedLimit / 64);
        if (Integer.bitCount(frames) != 1 || frames < minFrames) {
            throw new IllegalArgumentException("resendLogFrames (HCOMM_RESEND_LOG_FRAMES) must be a power of two of at least "
                    + minFrames + " (1024, and HCOMM_UNEXPECTED_LIMIT / 64: the eager messages a peer's credit lets it leave "
                    + "unacknowledged), was " + frames);
        }
        long minBytes = Math.max(256 * 1024, 2 * unexpectedLimit);
        if (Long.bitCount(bytes) != 1 || bytes < minBytes || bytes > 1L << 30) {
            throw new IllegalArgumentException("resendLogBytes (HCOMM_RESEND_LOG_BYTES) must be a power of two in [" + minBytes
                    + ", 1G] (at least twice HCOMM_UNEXPECTED_LIMIT: the eager bytes a peer's credit lets it leave unacknowledged), was " + bytes);
        }
    }
}
