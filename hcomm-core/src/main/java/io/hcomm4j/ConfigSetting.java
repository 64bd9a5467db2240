package io.hcomm4j;

import java.util.Locale;


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
    TLS { void apply(CommConfig.Builder b, String v) { b.tlsParts().on = parseBool(v); } },
    TLS_KEYSTORE { void apply(CommConfig.Builder b, String v) { b.tlsParts().keyStore = java.nio.file.Path.of(v); } },
    TLS_KEYSTORE_PASSWORD { void apply(CommConfig.Builder b, String v) { b.tlsParts().keyStorePassword = v.toCharArray(); } },
    TLS_KEYSTORE_PASSWORD_FILE { void apply(CommConfig.Builder b, String v) { b.tlsParts().keyStorePassword = TlsConfig.Parts.passwordFile(v); } },
    TLS_TRUSTSTORE { void apply(CommConfig.Builder b, String v) { b.tlsParts().trustStore = java.nio.file.Path.of(v); } },
    TLS_TRUSTSTORE_PASSWORD { void apply(CommConfig.Builder b, String v) { b.tlsParts().trustStorePassword = v.toCharArray(); } },
    TLS_TRUSTSTORE_PASSWORD_FILE { void apply(CommConfig.Builder b, String v) { b.tlsParts().trustStorePassword = TlsConfig.Parts.passwordFile(v); } },
    AUTH {
        // by name only, not as a boolean: running unauthenticated must read as the choice it is
        void apply(CommConfig.Builder b, String v) {
            switch (v.toLowerCase(Locale.ROOT)) {
                case "secret" -> b.unauthenticated(false);
                case "none" -> b.unauthenticated(true);
                default -> throw new IllegalArgumentException("not one of secret, none");
            }
        }
    },
    TIMEOUT { void apply(CommConfig.Builder b, String v) { b.timeout(duration(v)); } },
    INIT_TIMEOUT { void apply(CommConfig.Builder b, String v) { b.initTimeout(duration(v)); } },
    SOCKET_IFNAME { void apply(CommConfig.Builder b, String v) { b.socketIfname(v); } },
    SOCKET_ADDR { void apply(CommConfig.Builder b, String v) { b.socketAddr(v); } },
    SPIN_TIME { void apply(CommConfig.Builder b, String v) { b.spinTime(duration(v)); } },
    EAGER_LIMIT { void apply(CommConfig.Builder b, String v) { b.eagerLimit(size(v)); } },
    UNEXPECTED_LIMIT { void apply(CommConfig.Builder b, String v) { b.unexpectedLimit(size(v)); } },
    UNEXPECTED_TOTAL { void apply(CommConfig.Builder b, String v) { b.unexpectedTotal(size(v)); } },
    UNEXPECTED_COUNT { void apply(CommConfig.Builder b, String v) { b.unexpectedCount(parseInt(v)); } },
    RESEND_LOG_FRAMES { void apply(CommConfig.Builder b, String v) { b.resendLogFrames(parseInt(v)); } },
    RESEND_LOG_BYTES { void apply(CommConfig.Builder b, String v) { b.resendLogBytes(size(v)); } },
    ACCEPT_PENDING { void apply(CommConfig.Builder b, String v) { b.acceptPending(parseInt(v)); } },
    ACCEPT_PENDING_PER_SOURCE { void apply(CommConfig.Builder b, String v) { b.acceptPendingPerSource(parseInt(v)); } },
    HANDSHAKE_TIMEOUT { void apply(CommConfig.Builder b, String v) { b.handshakeTimeout(duration(v)); } },
    STORE_HOSTED { void apply(CommConfig.Builder b, String v) { b.storeHosted(parseBool(v)); } },
    STORE_PORT { void apply(CommConfig.Builder b, String v) { b.storePort(parseInt(v)); } },
    STORE_RECONNECT { void apply(CommConfig.Builder b, String v) { b.storeReconnect(duration(v)); } },
    STORE_SCOPE { void apply(CommConfig.Builder b, String v) { b.storeScope(v); } },
    ALGO { void apply(CommConfig.Builder b, String v) { b.algo(v); } },
    TUNING_FILE { void apply(CommConfig.Builder b, String v) { b.tuningFile(v); } },
    FEEDBACK { void apply(CommConfig.Builder b, String v) { b.feedback(parseBool(v)); } },
    JOIN { void apply(CommConfig.Builder b, String v) { b.join(parseBool(v)); } },
    CHANNELS { void apply(CommConfig.Builder b, String v) { b.channels(parseInt(v)); } },
    TCP_CONGESTION { void apply(CommConfig.Builder b, String v) { b.tcpCongestion(v); } },
    TUNE_AT_INIT { void apply(CommConfig.Builder b, String v) { b.tuneAtInit(parseBool(v)); } },
    MEM_POOL_MAX { void apply(CommConfig.Builder b, String v) { b.memPoolMax(size(v)); } },
    SHM_DIR { void apply(CommConfig.Builder b, String v) { b.shmDir(v); } },
    MEM_DEBUG { void apply(CommConfig.Builder b, String v) { b.memDebug(parseBool(v)); } },
    MEM_ADOPT { void apply(CommConfig.Builder b, String v) { b.memAdopt(parseBool(v)); } },
    TRANSPORT {
        void apply(CommConfig.Builder b, String v) {
            switch (v.toLowerCase(Locale.ROOT)) {
                case "auto" -> b.transport(CommConfig.Transport.AUTO);
                case "tcp" -> b.transport(CommConfig.Transport.TCP);
                case "shm" -> b.transport(CommConfig.Transport.SHM);
                case "ucx" -> b.transport(CommConfig.Transport.UCX);
                case "auto-ucx" -> b.transport(CommConfig.Transport.AUTO_UCX);
                default -> throw new IllegalArgumentException("not one of auto, tcp, shm, ucx, auto-ucx");
            }
        }
    },
    HOST_ID { void apply(CommConfig.Builder b, String v) { b.hostId(v); } },
    SHM_RING_SIZE { void apply(CommConfig.Builder b, String v) { b.shmRingSize(size(v)); } },
    HEARTBEAT_TIMEOUT { void apply(CommConfig.Builder b, String v) { b.heartbeatTimeout(duration(v)); } },
    HEARTBEAT_INTERVAL { void apply(CommConfig.Builder b, String v) { b.heartbeatInterval(duration(v)); } },
    STUCK_REPORT { void apply(CommConfig.Builder b, String v) { b.stuckReport(duration(v)); } },
    TRACE_BUFFER { void apply(CommConfig.Builder b, String v) { b.monitor(b.monitor().withTraceBuffer(parseInt(v))); } },
    TRACE_DIR { void apply(CommConfig.Builder b, String v) { b.monitor(b.monitor().withTraceDir(java.nio.file.Path.of(v))); } },
    DEBUG {
        void apply(CommConfig.Builder b, String v) {
            MonitorConfig.Debug level;
            try {
                level = MonitorConfig.Debug.valueOf(v.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("not one of WARN, VERSION, INFO");
            }
            b.monitor(b.monitor().withDebug(level));
        }
    },
    DEBUG_FILE { void apply(CommConfig.Builder b, String v) { b.monitor(b.monitor().withDebugFile(v)); } },
    WARMUP { void apply(CommConfig.Builder b, String v) { b.warmUp(duration(v)); } },
    ZERO_COPY { void apply(CommConfig.Builder b, String v) { b.zeroCopy(parseBool(v)); } },
    RETRY_MAX { void apply(CommConfig.Builder b, String v) { b.retryMax(parseInt(v)); } },
    RETRY_INTERVAL { void apply(CommConfig.Builder b, String v) { b.retryInterval(duration(v)); } },
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

    /** {@link CommConfig#parseDuration}: parses {@code 500ms}, {@code 3s}, {@code 2m}, {@code 1h}, {@code 100us}, {@code 10ns}; a bare number is seconds. */
    static java.time.Duration duration(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        int i = 0;
        while (i < t.length() && (Character.isDigit(t.charAt(i)) || t.charAt(i) == '.')) i++;
        if (i == 0) throw new IllegalArgumentException("'" + text + "' is not a duration such as 500ms, 3s, 2m");
        double v;
        try {
            v = Double.parseDouble(t.substring(0, i));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + text + "' is not a duration such as 500ms, 3s, 2m");
        }
        String unit = t.substring(i).trim();
        double nanos = switch (unit) {
            case "", "s", "sec" -> v * 1e9;
            case "ms" -> v * 1e6;
            case "us", "µs" -> v * 1e3;
            case "ns" -> v;
            case "m", "min" -> v * 60e9;
            case "h" -> v * 3600e9;
            default -> throw new IllegalArgumentException("unknown unit '" + unit + "' in '" + text + "' (use ns, us, ms, s, m, h)");
        };
        return java.time.Duration.ofNanos(Math.round(nanos));
    }

    /** {@link CommConfig#parseSize}: parses {@code 4096}, {@code 64K}, {@code 64KiB}, {@code 1M}, {@code 2G} (powers of 1024). */
    static long size(String text) {
        String t = text.trim().toUpperCase(Locale.ROOT);
        if (t.endsWith("IB")) t = t.substring(0, t.length() - 2);
        else if (t.endsWith("B")) t = t.substring(0, t.length() - 1);
        long mult = 1;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'K' -> mult = 1L << 10;
                case 'M' -> mult = 1L << 20;
                case 'G' -> mult = 1L << 30;
                case 'T' -> mult = 1L << 40;
                default -> mult = 1;
            }
            if (mult != 1) t = t.substring(0, t.length() - 1);
        }
        try {
            long v = Long.parseLong(t.trim());
            if (v < 0) throw new IllegalArgumentException("size must be >= 0: '" + text + "'");
            return Math.multiplyExact(v, mult);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("'" + text + "' is not a size such as 4096, 64K, 1M, 2G");
        }
    }
}
