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
}
