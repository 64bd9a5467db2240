package io.hcomm4j;

import java.util.Locale;

import static io.hcomm4j.CommConfig.parseDuration;
import static io.hcomm4j.CommConfig.parseSize;

/**
 * The settings {@link CommConfig#fromEnvironment()} reads: each is the environment variable {@code HCOMM_<NAME>} and
 * the system property {@code hcomm.<name>} (lower case, dots for underscores), parsed and applied to a builder, which
 * validates the whole at {@code build()}.
 */
enum ConfigSetting {
    INIT_METHOD { void apply(CommConfig.Builder b, String v) { b.initMethod(v); } },
    RANK { void apply(CommConfig.Builder b, String v) { b.rank(parseInt(v)); } },
    WORLD_SIZE { void apply(CommConfig.Builder b, String v) { b.worldSize(parseInt(v)); } },
    SECRET { void apply(CommConfig.Builder b, String v) { b.secret(v); } },
    TIMEOUT { void apply(CommConfig.Builder b, String v) { b.timeout(parseDuration(v)); } },
    INIT_TIMEOUT { void apply(CommConfig.Builder b, String v) { b.initTimeout(parseDuration(v)); } },
    SOCKET_IFNAME { void apply(CommConfig.Builder b, String v) { b.socketIfname(v); } },
    SOCKET_ADDR { void apply(CommConfig.Builder b, String v) { b.socketAddr(v); } },
    SPIN_TIME { void apply(CommConfig.Builder b, String v) { b.spinTime(parseDuration(v)); } },
    EAGER_LIMIT { void apply(CommConfig.Builder b, String v) { b.eagerLimit(parseSize(v)); } },
    UNEXPECTED_LIMIT { void apply(CommConfig.Builder b, String v) { b.unexpectedLimit(parseSize(v)); } },
    STORE_HOSTED { void apply(CommConfig.Builder b, String v) { b.storeHosted(parseBool(v)); } },
    STORE_PORT { void apply(CommConfig.Builder b, String v) { b.storePort(parseInt(v)); } },
    STORE_RECONNECT { void apply(CommConfig.Builder b, String v) { b.storeReconnect(parseDuration(v)); } },
    STORE_SCOPE { void apply(CommConfig.Builder b, String v) { b.storeScope(v); } },
    ALGO { void apply(CommConfig.Builder b, String v) { b.algo(v); } },
    TUNING_FILE { void apply(CommConfig.Builder b, String v) { b.tuningFile(v); } },
    FEEDBACK { void apply(CommConfig.Builder b, String v) { b.feedback(parseBool(v)); } },
    JOIN { void apply(CommConfig.Builder b, String v) { b.join(parseBool(v)); } },
    CHANNELS { void apply(CommConfig.Builder b, String v) { b.channels(parseInt(v)); } },
    TUNE_AT_INIT { void apply(CommConfig.Builder b, String v) { b.tuneAtInit(parseBool(v)); } },
    MEM_POOL_MAX { void apply(CommConfig.Builder b, String v) { b.memPoolMax(parseSize(v)); } },
    SHM_DIR { void apply(CommConfig.Builder b, String v) { b.shmDir(v); } },
    MEM_DEBUG { void apply(CommConfig.Builder b, String v) { b.memDebug(parseBool(v)); } },
    MEM_ADOPT { void apply(CommConfig.Builder b, String v) { b.memAdopt(parseBool(v)); } },
    TRANSPORT {
        void apply(CommConfig.Builder b, String v) {
            switch (v.toLowerCase(Locale.ROOT)) {
                case "auto" -> b.transport(CommConfig.Transport.AUTO);
                case "tcp" -> b.transport(CommConfig.Transport.TCP);
                case "shm" -> b.transport(CommConfig.Transport.SHM);
                default -> throw new IllegalArgumentException("not one of auto, tcp, shm");
            }
        }
    },
    HOST_ID { void apply(CommConfig.Builder b, String v) { b.hostId(v); } },
    SHM_RING_SIZE { void apply(CommConfig.Builder b, String v) { b.shmRingSize(parseSize(v)); } },
    HEARTBEAT_TIMEOUT { void apply(CommConfig.Builder b, String v) { b.heartbeatTimeout(parseDuration(v)); } },
    HEARTBEAT_INTERVAL { void apply(CommConfig.Builder b, String v) { b.heartbeatInterval(parseDuration(v)); } },
    STUCK_REPORT { void apply(CommConfig.Builder b, String v) { b.stuckReport(parseDuration(v)); } },
    WARMUP { void apply(CommConfig.Builder b, String v) { b.warmUp(parseDuration(v)); } },
    ZERO_COPY { void apply(CommConfig.Builder b, String v) { b.zeroCopy(parseBool(v)); } },
    RETRY_MAX { void apply(CommConfig.Builder b, String v) { b.retryMax(parseInt(v)); } },
    RETRY_INTERVAL { void apply(CommConfig.Builder b, String v) { b.retryInterval(parseDuration(v)); } },
    CHECK {
        void apply(CommConfig.Builder b, String v) {
            switch (v.toLowerCase(Locale.ROOT)) {
                case "cheap" -> b.fullCheck(false);
                case "full" -> b.fullCheck(true);
                default -> throw new IllegalArgumentException("not one of cheap, full");
            }
        }
    };

    abstract void apply(CommConfig.Builder b, String value);

    String env() { return "HCOMM_" + name(); }

    String property() { return "hcomm." + name().toLowerCase(Locale.ROOT).replace('_', '.'); }

    static int parseInt(String v) {
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not an integer");
        }
    }

    static boolean parseBool(String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "1", "true", "yes", "on" -> true;
            case "0", "false", "no", "off" -> false;
            default -> throw new IllegalArgumentException("not a boolean (1/0, true/false)");
        };
    }
}
