package io.hcomm4j.transport;

import java.time.Duration;

/**
 * Settings the transport needs, taken from CommConfig by the layer above.
 *
 * @param heartbeatTimeout  silence after which a connected peer is declared failed (a reliable link: its connection
 *                          re-established); zero: no heartbeats
 * @param heartbeatInterval heartbeat period of an idle connection
 * @param retryMax          attempts to re-establish a lost connection before its peer is declared failed; 0: none
 * @param retryInterval     window of the first attempt; each next one twice the last, at most 8 times this
 * @param limits            bounds against floods and hostile peers
 */
public record TransportOptions(Duration timeout, Duration connectTimeout, Duration spinTime, long eagerLimit,
                      long unexpectedLimit, Duration heartbeatTimeout, Duration heartbeatInterval, int retryMax,
                      Duration retryInterval, TransportLimits limits) {
    /** With the default {@link TransportLimits}. */
    public TransportOptions(Duration timeout, Duration connectTimeout, Duration spinTime, long eagerLimit, long unexpectedLimit,
                   Duration heartbeatTimeout, Duration heartbeatInterval, int retryMax, Duration retryInterval) {
        this(timeout, connectTimeout, spinTime, eagerLimit, unexpectedLimit, heartbeatTimeout, heartbeatInterval, retryMax,
                retryInterval, TransportLimits.DEFAULT);
    }

    /** Without heartbeats and reconnects. */
    public TransportOptions(Duration timeout, Duration connectTimeout, Duration spinTime, long eagerLimit, long unexpectedLimit) {
        this(timeout, connectTimeout, spinTime, eagerLimit, unexpectedLimit, Duration.ZERO, Duration.ZERO);
    }

    /** Without reconnects. */
    public TransportOptions(Duration timeout, Duration connectTimeout, Duration spinTime, long eagerLimit, long unexpectedLimit,
                   Duration heartbeatTimeout, Duration heartbeatInterval) {
        this(timeout, connectTimeout, spinTime, eagerLimit, unexpectedLimit, heartbeatTimeout, heartbeatInterval, 0,
                Duration.ofMillis(100));
    }

    /** The same with {@code retryMax} reconnect attempts, the first one's window {@code retryInterval}. */
    public TransportOptions withRetry(int retryMax, Duration retryInterval) {
        return new TransportOptions(timeout, connectTimeout, spinTime, eagerLimit, unexpectedLimit, heartbeatTimeout,
                heartbeatInterval, retryMax, retryInterval, limits);
    }

    /** The same with other {@code limits}. */
    public TransportOptions withLimits(TransportLimits limits) {
        return new TransportOptions(timeout, connectTimeout, spinTime, eagerLimit, unexpectedLimit, heartbeatTimeout,
                heartbeatInterval, retryMax, retryInterval, limits);
    }
}
