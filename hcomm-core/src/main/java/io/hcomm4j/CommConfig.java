package io.hcomm4j;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Every setting of HComm4J, validated once. Built with {@link #builder()}, or read by
 * {@link #fromEnvironment()} from {@code HCOMM_*} environment variables and {@code hcomm.*} system
 * properties (a system property wins over the environment variable of the same setting; a value
 * set on a builder wins over both). docs/configuration.md lists every setting.
 *
 * <p>Durations read as {@code 500ms}, {@code 3s}, {@code 2m}, {@code 1h} or {@code 100us}; a bare
 * number is seconds. Sizes read as {@code 4096}, {@code 64K}, {@code 1M}, {@code 2G} (powers of 1024).
 */
public final class CommConfig {
    /** Rank or world size not set: discovered from the environment at init. */
    public static final int UNSET = -1;
    /** Shortest job secret accepted, in bytes of its UTF-8 encoding: 128 bits, if they are random. */
    public static final int MIN_SECRET_BYTES = 16;
    /** How a refusal tells the user to make a secret. */
    public static final String HOW_TO_MAKE_A_SECRET = "export HCOMM_SECRET=$(hcomm secret), or $(openssl rand -hex 24)";

    private final String initMethod;
    private final int rank;
    private final int worldSize;
    private final String secret;
    private final TlsConfig tls;
    private final boolean unauthenticated;
    private final Duration timeout;
    private final Duration initTimeout;
    private final String socketIfname;
    private final String socketAddr;
    private final Duration spinTime;
    private final long eagerLimit;
    private final long unexpectedLimit;
    private final long unexpectedTotal;
    private final int unexpectedCount;
    private final int resendLogFrames;
    private final long resendLogBytes;
    private final int acceptPending;
    private final int acceptPendingPerSource;
    private final Duration handshakeTimeout;
    private final boolean storeHosted;
    private final int storePort;
    private final Duration storeReconnect;
    private final String storeScope;
    private final String algo;
    private final String tuningFile;
    private final boolean feedback;
    private final boolean join;
    private final int channels;
    private final String tcpCongestion;
    private final boolean tuneAtInit;
    private final boolean fullCheck;
    private final long memPoolMax;
    private final String shmDir;
    private final boolean memDebug;
    private final boolean memAdopt;
    private final Transport transport;
    private final String hostId;
    private final long shmRingSize;
    private final Duration heartbeatTimeout;
    private final Duration heartbeatInterval;
    private final Duration stuckReport;
    private final MonitorConfig monitor;
    private final Duration warmUp;
    private final boolean zeroCopy;
    private final int retryMax;
    private final Duration retryInterval;

    /**
     * Which transport connects two ranks ({@code HCOMM_TRANSPORT}): {@link #AUTO} (the default) uses shared memory
     * between ranks on one host and TCP between hosts; {@link #TCP} uses TCP everywhere (to measure it on one host);
     * {@link #SHM} requires every pair of ranks to share a host (init fails otherwise); {@link #UCX} carries every pair's
     * messages through UCX (InfiniBand, RoCE, shared memory or TCP, as {@code UCX_TLS} allows; docs/deploy.md).
     */
    public enum Transport {
        /** Shared memory between ranks of one host, TCP between hosts. */
        AUTO,
        /** TCP between every pair of ranks. */
        TCP,
        /** Shared memory between every pair; init fails if two ranks are on different hosts. */
        SHM,
        /**
         * UCX (libucp 1.13 or later) between every pair, over the transports {@code UCX_TLS} allows; init fails, naming
         * the library, if it is missing.
         */
        UCX,
        /**
         * As {@link #AUTO} within a host (shared memory, zero-copy collectives), UCX between hosts: what a cluster with
         * InfiniBand or RoCE wants. Init fails, naming the library, if UCX is missing.
         */
        AUTO_UCX;

        /** True if ranks of one host talk through shared memory (and may use the zero-copy collectives). */
        public boolean sharedMemoryWithinHost() {
            return this == AUTO || this == SHM || this == AUTO_UCX;
        }

        /** True if this mode opens UCX (for every pair, or between hosts). */
        public boolean usesUcx() {
            return this == UCX || this == AUTO_UCX;
        }
    }

    private CommConfig(Builder b) {
        this.initMethod = b.initMethod;
        this.rank = b.rank;
        this.worldSize = b.worldSize;
        this.secret = b.secret;
        this.tls = b.tls;
        this.unauthenticated = b.unauthenticated;
        this.timeout = b.timeout;
        this.initTimeout = b.initTimeout;
        this.socketIfname = b.socketIfname;
        this.socketAddr = b.socketAddr;
        this.spinTime = b.spinTime;
        this.eagerLimit = b.eagerLimit;
        this.unexpectedLimit = b.unexpectedLimit;
        this.unexpectedTotal = b.unexpectedTotal;
        this.unexpectedCount = b.unexpectedCount;
        this.resendLogFrames = b.resendLogFrames;
        this.resendLogBytes = b.resendLogBytes;
        this.acceptPending = b.acceptPending;
        this.acceptPendingPerSource = b.acceptPendingPerSource;
        this.handshakeTimeout = b.handshakeTimeout;
        this.storeHosted = b.storeHosted;
        this.storePort = b.storePort;
        this.storeReconnect = b.storeReconnect;
        this.storeScope = b.storeScope;
        this.algo = b.algo;
        this.tuningFile = b.tuningFile;
        this.feedback = b.feedback;
        this.join = b.join;
        this.channels = b.channels;
        this.tcpCongestion = b.tcpCongestion;
        this.tuneAtInit = b.tuneAtInit;
        this.fullCheck = b.fullCheck;
        this.memPoolMax = b.memPoolMax;
        this.shmDir = b.shmDir;
        this.memDebug = b.memDebug;
        this.memAdopt = b.memAdopt;
        this.transport = b.transport;
        this.hostId = b.hostId;
        this.shmRingSize = b.shmRingSize;
        this.heartbeatTimeout = b.heartbeatTimeout;
        // not Duration.dividedBy: its BigDecimal class initialisation costs each JVM 15 ms at init
        this.heartbeatInterval = b.heartbeatInterval != null ? b.heartbeatInterval : Duration.ofNanos(b.heartbeatTimeout.toNanos() / 4);
        this.stuckReport = b.stuckReport;
        this.monitor = b.monitor;
        this.warmUp = b.warmUp;
        this.zeroCopy = b.zeroCopy;
        this.retryMax = b.retryMax;
        this.retryInterval = b.retryInterval;
    }

    /** A builder with every setting at its default. */
    public static Builder builder() {
        return new Builder();
    }

    /** Settings read from {@code HCOMM_*} environment variables and {@code hcomm.*} system properties. */
    public static CommConfig fromEnvironment() {
        return builderFromEnvironment().build();
    }

    /** A builder preset from the environment and system properties, to override some settings in code. */
    public static Builder builderFromEnvironment() {
        return builderFrom(System.getenv(), System::getProperty);
    }

    static Builder builderFrom(Map<String, String> env, Function<String, String> props) {
        Builder b = new Builder();
        for (ConfigSetting s : ConfigSetting.values()) {
            String prop = props.apply(s.property());
            String value = prop != null ? prop : env.get(s.env());
            if (value != null && !value.isBlank()) {
                try {
                    s.apply(b, value.trim());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("invalid value '" + value + "' for " + s.env()
                            + " (" + s.property() + "): " + e.getMessage(), e);
                }
            }
        }
        return b;
    }

    /** Rendezvous method: {@code env://}, {@code tcp://host:port} or {@code file:///path}. Default {@code env://}. */
    public String initMethod() { return initMethod; }

    /** This process's rank, or {@link #UNSET} to discover it from the environment. */
    public int rank() { return rank; }

    /** Number of ranks, or {@link #UNSET} to discover it from the environment. */
    public int worldSize() { return worldSize; }

    /**
     * The job secret ({@code HCOMM_SECRET}) proven on every store and data connection, if one is set: at least 16 bytes.
     * Without one the job listens and connects on loopback addresses only, unless {@link #unauthenticated()}.
     */
    public Optional<String> secret() { return Optional.ofNullable(secret); }

    /** TLS under every TCP connection ({@code HCOMM_TLS}), if on. */
    public Optional<TlsConfig> tls() { return Optional.ofNullable(tls); }
    /**
     * {@code HCOMM_AUTH=none}: a job without a secret may listen and connect on any address, without authentication
     * (anyone who reaches its ports can join or disturb it); a warning is logged once. Default {@code secret}: without a
     * secret, loopback addresses only. A secret, where one is set, is used either way.
     */
    public boolean unauthenticated() { return unauthenticated; }

    /** Deadline of every blocking call. */
    public Duration timeout() { return timeout; }

    /** Deadline of init: rendezvous with every rank through the store. */
    public Duration initTimeout() { return initTimeout; }

    /**
     * Network interface whose address data connections use, if set: {@code HCOMM_SOCKET_IFNAME}, or the first of its
     * comma-separated list (the others: {@link #socketIfnames()}).
     */
    public Optional<String> socketIfname() {
        return socketIfname == null ? Optional.empty() : Optional.of(socketIfnames().getFirst());
    }

    /**
     * Every interface of {@code HCOMM_SOCKET_IFNAME=a,b,...} (empty if unset): the first carries the primary link to each
     * peer, each further one another link, and large messages are striped over them by their measured throughput.
     */
    public java.util.List<String> socketIfnames() {
        if (socketIfname == null) return java.util.List.of();
        java.util.List<String> out = new java.util.ArrayList<>();
        for (String n : socketIfname.split(",")) out.add(n.trim());
        return java.util.List.copyOf(out);
    }

    /**
     * TCP connections per interface to each peer ({@code HCOMM_CHANNELS}, default 1): more than one stripes large
     * messages over them, as several interfaces do.
     */
    public int channels() { return channels; }

    /**
     * {@code HCOMM_TCP_CONGESTION}: the Linux TCP congestion control algorithm of the TCP links ({@code cubic}, {@code bbr},
     * {@code reno} ...); empty: the system's default. A name the kernel does not have fails init.
     */
    public Optional<String> tcpCongestion() { return tcpCongestion.isEmpty() ? Optional.empty() : Optional.of(tcpCongestion); }

    /** Address data connections bind to, if set (wins over the interface name). */
    public Optional<String> socketAddr() { return Optional.ofNullable(socketAddr); }

    /** How long a waiting thread spins (polling) before it blocks. */
    public Duration spinTime() { return spinTime; }

    /** Messages up to this many bytes are sent eagerly; larger ones wait for the receiver (rendezvous). */
    public long eagerLimit() { return eagerLimit; }

    /** Bytes of unexpected eager messages buffered per peer before reading from it pauses. */
    public long unexpectedLimit() { return unexpectedLimit; }

    /**
     * {@code HCOMM_UNEXPECTED_TOTAL} and {@code HCOMM_UNEXPECTED_COUNT}: bytes (default {@code 1G}) and number (default
     * 1 Mi) of unexpected messages and rendezvous requests this rank holds from all peers and communicators together.
     * The link whose message would go beyond either fails, naming the peer and the setting (see docs/reliability.md).
     */
    public long unexpectedTotal() { return unexpectedTotal; }

    /** See {@link #unexpectedTotal()}. */
    public int unexpectedCount() { return unexpectedCount; }

    /**
     * {@code HCOMM_RESEND_LOG_FRAMES} (default 4 Mi) and {@code HCOMM_RESEND_LOG_BYTES} (default {@code 1G}): frames, and
     * bytes of the ring of headers and copied payloads, a reliable link keeps for a resend until the peer acknowledges
     * them (powers of two); beyond either the link fails, naming what is kept.
     */
    public int resendLogFrames() { return resendLogFrames; }

    /** See {@link #resendLogFrames()}. */
    public long resendLogBytes() { return resendLogBytes; }

    /**
     * {@code HCOMM_ACCEPT_PENDING} (default 256), {@code HCOMM_ACCEPT_PENDING_PER_SOURCE} (default 64) and
     * {@code HCOMM_HANDSHAKE_TIMEOUT} (default {@code 10s}): connections a listener (data, store) holds in their
     * handshake at once, of those from one address, and each handshake step's deadline.
     */
    public int acceptPending() { return acceptPending; }

    /** See {@link #acceptPending()}. */
    public int acceptPendingPerSource() { return acceptPendingPerSource; }

    /** See {@link #acceptPending()}. */
    public Duration handshakeTimeout() { return handshakeTimeout; }

    /** True when the store is served by someone else (the launcher); false: rank 0 serves it. */
    public boolean storeHosted() { return storeHosted; }

    /** Port of the TCP store for {@code env://}, or {@link #UNSET} for MASTER_PORT. */
    public int storePort() { return storePort; }

    /**
     * {@code HCOMM_STORE_RECONNECT}: how long a rank whose connection to the TCP store ended or broke tries to connect
     * again (with backoff, from the moment it noticed) before its store calls fail for good. A store that restarted
     * (and so lost its data) gets back from every rank what that rank wrote; an operation whose reply was lost is not
     * applied twice. Default {@code 30s}; {@link Duration#ZERO}: a lost store connection fails at once.
     */
    public Duration storeReconnect() { return storeReconnect; }

    /**
     * {@code HCOMM_STORE_SCOPE}: a prefix the session puts before every key it uses in the store ({@code scope/key}), so
     * that one long-lived store serves several jobs, or several attempts of one job, without any of them meeting another's
     * keys (a Spark barrier stage scopes each attempt by stage id and attempt number). Empty (the default): no prefix.
     */
    public String storeScope() { return storeScope; }

    /** Forced collective algorithms ({@code HCOMM_ALGO}, e.g. {@code allreduce=ring;broadcast=tree}); empty: the cost model picks. */
    public String algo() { return algo; }

    /** A measured tuning table ({@code HCOMM_TUNING_FILE}, written by {@code hcomm tune}); empty: the cost model alone. */
    public Optional<String> tuningFile() { return Optional.ofNullable(tuningFile); }

    /**
     * Whether collectives time their algorithms and switch a size class away from one that became slow
     * ({@code HCOMM_FEEDBACK}, default false). A switch changes the order of a reduction: results stay identical on
     * every rank but may differ in the last bits from a run that did not switch, so it is off unless asked for: by
     * default the same job gives the same bits every run.
     */
    public boolean feedback() { return feedback; }

    /**
     * Whether {@link Hcomm#init(CommConfig)} joins a running job instead of starting one ({@code HCOMM_JOIN}, default
     * false), as {@link Hcomm#join(CommConfig)} does: {@code hcomm launch --max-restarts N} sets it in the environment
     * of a process it starts in place of a rank that died, so the same program, unchanged, becomes the replacement.
     */
    public boolean join() { return join; }

    /**
     * Whether init measures the links' α and β ({@code HCOMM_TUNE_AT_INIT}, default false) for the cost model when no
     * tuning table covers the job: two probes of 50 ms (between hosts, within a host), about 0.1 s more init.
     */
    public boolean tuneAtInit() { return tuneAtInit; }

    /**
     * {@code HCOMM_CHECK=full}: before each collective the ranks exchange its fingerprint (op, count, type, reduce
     * op, root), so every rank fails together on a mismatch, before any data moves. Default {@code cheap}: the
     * fingerprint travels with the data and is checked where data arrives.
     */
    public boolean fullCheck() { return fullCheck; }

    /**
     * {@code HCOMM_MEM_POOL_MAX}: most bytes of shared memory the registered-memory pool ({@code comm.memory()}) maps;
     * an allocation that would need more throws {@link MemoryLimitException}. Default {@code 4G}.
     */
    public long memPoolMax() { return memPoolMax; }

    /** {@code HCOMM_SHM_DIR}: directory of the memory pool's shared-memory files. Default {@code /dev/shm}. */
    public String shmDir() { return shmDir; }

    /**
     * {@code HCOMM_MEM_DEBUG=1}: pooled buffers remember where they were allocated (shown in leak reports) and their
     * segments become invalid when they are closed, so a use after close throws. Costs a stack trace per allocation
     * and a shared-arena close (tens of microseconds) per close. Default off.
     */
    public boolean memDebug() { return memDebug; }

    /**
     * {@code HCOMM_MEM_ADOPT}: an off-heap buffer (256 KiB or more) of the caller's own (an {@code Arena}'s, not the
     * pool's) that comes to a second collective (all-reduce's buffers, the others' send buffers) is adopted: its pages
     * are moved into a shared-memory file at the same addresses (contents kept), so peers on the host read it in
     * place, at registered-memory speed, with no copy per op. Never
     * for heap arrays, file mappings, global-scope segments ({@code MemorySegment.ofAddress}) or memory other than a
     * private anonymous mapping; turn it off for memory a device or another library has pinned by address (a CUDA
     * host registration), which would keep the old pages. Default on.
     */
    public boolean memAdopt() { return memAdopt; }

    /** {@code HCOMM_TRANSPORT}: {@code auto} (default), {@code tcp}, {@code shm} or {@code ucx}; see {@link Transport}. */
    public Transport transport() { return transport; }

    /**
     * {@code HCOMM_HOST_ID}: overrides the computed host identity (boot id, host name, network namespace, user and
     * the shared-memory directory). Ranks with equal host ids talk through shared memory (unless {@code HCOMM_TRANSPORT=tcp}).
     */
    public Optional<String> hostId() { return Optional.ofNullable(hostId); }

    /** {@code HCOMM_SHM_RING_SIZE}: bytes of each direction's ring between two ranks of a host, a power of two. Default {@code 1M}. */
    public long shmRingSize() { return shmRingSize; }

    /**
     * {@code HCOMM_HEARTBEAT_TIMEOUT}: a connected peer from which nothing (no frame, no heartbeat) arrived for this long
     * is declared failed: every op that depends on it fails with {@link PeerFailedException}, and every other rank is
     * told. Catches peers that hang without closing their connections (SIGSTOP, a frozen host). Default {@code 10s};
     * {@link Duration#ZERO} turns heartbeats off (only a closed connection then reveals a failure).
     */
    public Duration heartbeatTimeout() { return heartbeatTimeout; }

    /**
     * {@code HCOMM_HEARTBEAT_INTERVAL}: how often a connection on which this rank sent nothing carries a heartbeat.
     * Default a quarter of {@link #heartbeatTimeout()}; at most a third of it.
     */
    public Duration heartbeatInterval() { return heartbeatInterval; }

    /**
     * {@code HCOMM_STUCK_REPORT}: an op that has waited this long is logged once at WARN (sequence number, type, size,
     * the ranks it waits for) and this rank's state is published in the store for {@code hcomm status}. A collective
     * over the transport that has waited this long, or 2 s if shorter, compares its fingerprint with the ranks it waits
     * for through the store (a mismatch no message shows). Default {@code 60s}; {@link Duration#ZERO} turns both off.
     */
    public Duration stuckReport() { return stuckReport; }

    /** The flight recorder: ops kept per communicator and where dumps go (HCOMM_TRACE_BUFFER, HCOMM_TRACE_DIR). */
    public MonitorConfig monitor() { return monitor; }

    /**
     * {@code HCOMM_WARMUP}: at init, the world communicator runs {@link Communicator#warmUp} for at most this long, so
     * that the job's first collectives run compiled code (a fresh JVM runs them 100-1000x slower than steady state for
     * its first thousands of calls). Default {@link Duration#ZERO}: no warm-up (init stays short).
     */
    public Duration warmUp() { return warmUp; }

    /**
     * {@code HCOMM_ZERO_COPY}: when every rank of a communicator is on this host with shared memory, allReduce,
     * reduceScatter(V), allGather(V), broadcast, reduce, gather, scatter and allToAll read the other ranks' buffers directly
     * instead of sending messages (registered buffers, {@code comm.memory()}, in place; other memory staged through a
     * registered one). Default on; {@code 0} sends every collective through the transport (must be the same on every
     * rank).
     */
    public boolean zeroCopy() { return zeroCopy; }

    /**
     * {@code HCOMM_RETRY_MAX}: how many times a dropped connection (reset, closed without an orderly BYE, a write error, or
     * silent for half of {@link #heartbeatTimeout()}: such a one must be back before the silence reaches the timeout) is
     * re-established before its peer is declared failed. A re-established
     * connection resumes after the last frame each side received, so ops in flight complete with nothing lost and nothing
     * delivered twice. A reconnect that is refused (nothing listens at the peer's address: its process is gone) fails at
     * once. Default {@code 5}; {@code 0}: no reconnect, a dropped connection means a failed peer.
     */
    public int retryMax() { return retryMax; }

    /**
     * {@code HCOMM_RETRY_INTERVAL}: the first reconnect attempt starts at once and may take this long; each further one
     * may take twice as long as the one before, at most 8 times this. So a peer that cannot be reached again is declared
     * failed after the sum of those windows (about 2.3 s with the defaults). Default {@code 100ms}.
     */
    public Duration retryInterval() { return retryInterval; }

    @Override
    public String toString() {
        return "CommConfig{initMethod=" + initMethod + ", rank=" + rank + ", worldSize=" + worldSize
                + ", secret=" + (secret == null ? "unset" : "***") + (unauthenticated ? ", auth=none" : "") + (tls == null ? "" : ", tls=" + tls) + ", timeout=" + d(timeout)
                + ", initTimeout=" + d(initTimeout) + ", socketIfname=" + socketIfname + ", socketAddr=" + socketAddr
                + ", spinTime=" + d(spinTime) + ", eagerLimit=" + eagerLimit + ", unexpectedLimit=" + unexpectedLimit
                + ", unexpectedTotal=" + unexpectedTotal + ", unexpectedCount=" + unexpectedCount + ", resendLogFrames=" + resendLogFrames
                + ", resendLogBytes=" + resendLogBytes + ", acceptPending=" + acceptPending
                + ", acceptPendingPerSource=" + acceptPendingPerSource + ", handshakeTimeout=" + d(handshakeTimeout)
                + ", storeHosted=" + storeHosted + ", storePort=" + storePort + ", storeReconnect=" + d(storeReconnect) + ", storeScope=" + storeScope + ", algo=" + algo + ", tuningFile=" + tuningFile + ", feedback=" + feedback + ", join=" + join + ", channels=" + channels + (tcpCongestion.isEmpty() ? "" : ", tcpCongestion=" + tcpCongestion) + ", tuneAtInit=" + tuneAtInit + ", check=" + (fullCheck ? "full" : "cheap")
                + ", memPoolMax=" + memPoolMax + ", shmDir=" + shmDir + ", memDebug=" + memDebug + ", memAdopt=" + memAdopt
                + ", transport=" + transport.name().toLowerCase(Locale.ROOT).replace('_', '-') + ", hostId=" + hostId + ", shmRingSize=" + shmRingSize
                + ", heartbeatTimeout=" + d(heartbeatTimeout) + ", heartbeatInterval=" + d(heartbeatInterval) + ", stuckReport=" + d(stuckReport) + ", " + monitor + ", warmUp=" + d(warmUp) + ", zeroCopy=" + zeroCopy
                + ", retryMax=" + retryMax + ", retryInterval=" + d(retryInterval) + "}";
    }

    /** A duration as every message of the library writes it ("3.0 s", "200 ms"). */
    private static String d(Duration x) {
        return io.hcomm4j.Units.duration(x);
    }

    /** Builder of {@link CommConfig}; {@link #build()} validates. */
    public static final class Builder {
        private String initMethod = "env://";
        private int rank = UNSET;
        private int worldSize = UNSET;
        private String secret;
        private TlsConfig tls;
        private final TlsConfig.Parts tlsParts = new TlsConfig.Parts();
        private boolean unauthenticated;
        private Duration timeout = Duration.ofMinutes(5);
        private Duration initTimeout = Duration.ofMinutes(2);
        private String socketIfname;
        private String socketAddr;
        private Duration spinTime = Duration.ofNanos(100_000);
        private long eagerLimit = 64 * 1024;
        private long unexpectedLimit = 64L * 1024 * 1024;
        private long unexpectedTotal = 1L << 30;
        private int unexpectedCount = 1 << 20;
        private int resendLogFrames = 1 << 22;
        private long resendLogBytes = 1L << 30;
        private int acceptPending = 256;
        private int acceptPendingPerSource = 64;
        private Duration handshakeTimeout = Duration.ofSeconds(10);
        private boolean storeHosted;
        private int storePort = UNSET;
        private Duration storeReconnect = Duration.ofSeconds(30);
        private String storeScope = "";
        private String algo = "";
        private String tuningFile;
        private boolean feedback;
        private boolean join;
        private int channels = 1;
        private String tcpCongestion = "";
        private boolean tuneAtInit;
        private boolean fullCheck;
        private long memPoolMax = 4L << 30;
        private String shmDir = "/dev/shm";
        private boolean memDebug;
        private boolean memAdopt = true;
        private Transport transport = Transport.AUTO;
        private String hostId;
        private long shmRingSize = 1L << 20;
        private Duration heartbeatTimeout = Duration.ofSeconds(10);
        /** null: a quarter of the timeout. */
        private Duration heartbeatInterval;
        private Duration stuckReport = Duration.ofSeconds(60);
        private MonitorConfig monitor = MonitorConfig.DEFAULT;
        private Duration warmUp = Duration.ZERO;
        private boolean zeroCopy = true;
        private int retryMax = 5;
        private Duration retryInterval = Duration.ofMillis(100);

        private Builder() {
        }

        /** @param initMethod {@code env://}, {@code tcp://host:port} or {@code file:///path} */
        public Builder initMethod(String initMethod) { this.initMethod = Objects.requireNonNull(initMethod, "initMethod"); return this; }

        /** @param rank this process's rank (0-based) */
        public Builder rank(int rank) { this.rank = rank; return this; }

        /** @param worldSize number of ranks */
        public Builder worldSize(int worldSize) { this.worldSize = worldSize; return this; }

        /**
         * @param secret the job secret, at least 16 bytes (UTF-8), the same on every rank (HCOMM_SECRET); {@code null} for
         *               none: the job then listens and connects on loopback addresses only, unless {@link #unauthenticated()}
         */
        public Builder secret(String secret) { this.secret = secret; return this; }

        /** @param tls TLS under every TCP connection, or {@code null} for plain TCP (the default; HCOMM_TLS) */
        public Builder tls(TlsConfig tls) { this.tls = tls; return this; }

        /** HCOMM_TLS_*: the parts of a TLS config set one by one from the environment. */
        TlsConfig.Parts tlsParts() { return tlsParts; }
        /**
         * Lets a job without a secret listen and connect on any address, unauthenticated (HCOMM_AUTH=none): for a network
         * where every host that can reach the job's ports is trusted. A secret, if one is set, is still used.
         */
        public Builder unauthenticated() { this.unauthenticated = true; return this; }

        /** HCOMM_AUTH: {@code none} ({@link #unauthenticated()}) or {@code secret} (the default). */
        Builder unauthenticated(boolean on) { this.unauthenticated = on; return this; }

        /** @param timeout deadline of every blocking call */
        public Builder timeout(Duration timeout) { this.timeout = Objects.requireNonNull(timeout, "timeout"); return this; }

        /** @param initTimeout deadline of init */
        public Builder initTimeout(Duration initTimeout) { this.initTimeout = Objects.requireNonNull(initTimeout, "initTimeout"); return this; }

        /** @param ifname network interface (e.g. {@code eth0}) whose first IPv4 address data connections use */
        public Builder socketIfname(String ifname) { this.socketIfname = ifname; return this; }

        /** @param addr address data connections bind to */
        public Builder socketAddr(String addr) { this.socketAddr = addr; return this; }

        /** @param spinTime how long a waiting thread polls before it blocks */
        public Builder spinTime(Duration spinTime) { this.spinTime = Objects.requireNonNull(spinTime, "spinTime"); return this; }

        /** @param bytes largest message sent eagerly */
        public Builder eagerLimit(long bytes) { this.eagerLimit = bytes; return this; }

        /** @param bytes unexpected-message bytes buffered per peer */
        public Builder unexpectedLimit(long bytes) { this.unexpectedLimit = bytes; return this; }

        /** @param bytes unexpected-message bytes held from all peers together, at least unexpectedLimit (HCOMM_UNEXPECTED_TOTAL) */
        public Builder unexpectedTotal(long bytes) { this.unexpectedTotal = bytes; return this; }

        /** @param n unexpected messages and rendezvous requests held from all peers together, 1024 to 2^31-1 (HCOMM_UNEXPECTED_COUNT) */
        public Builder unexpectedCount(int n) { this.unexpectedCount = n; return this; }

        /** @param n frames a reliable link keeps until acknowledged, a power of two, at least unexpectedLimit / 64 (HCOMM_RESEND_LOG_FRAMES) */
        public Builder resendLogFrames(int n) { this.resendLogFrames = n; return this; }

        /** @param bytes their ring of headers and copied payloads, a power of two, 2 x unexpectedLimit to 1G (HCOMM_RESEND_LOG_BYTES) */
        public Builder resendLogBytes(long bytes) { this.resendLogBytes = bytes; return this; }

        /** @param n connections a listener holds in their handshake at once, 1 to 65536 (HCOMM_ACCEPT_PENDING) */
        public Builder acceptPending(int n) { this.acceptPending = n; return this; }

        /** @param n of those, from one source address, 1 to acceptPending (HCOMM_ACCEPT_PENDING_PER_SOURCE) */
        public Builder acceptPendingPerSource(int n) { this.acceptPendingPerSource = n; return this; }

        /** @param deadline each handshake step of an accepted connection, 100ms to 10min (HCOMM_HANDSHAKE_TIMEOUT) */
        public Builder handshakeTimeout(Duration deadline) { this.handshakeTimeout = Objects.requireNonNull(deadline, "handshakeTimeout"); return this; }

        /** @param hosted true when an outside process (the launcher) serves the store */
        public Builder storeHosted(boolean hosted) { this.storeHosted = hosted; return this; }

        /** @param port TCP store port for {@code env://} */
        public Builder storePort(int port) { this.storePort = port; return this; }

        /** @param budget how long a lost store connection is re-established, 0 to 10m; 0: never (HCOMM_STORE_RECONNECT) */
        public Builder storeReconnect(Duration budget) { this.storeReconnect = Objects.requireNonNull(budget, "storeReconnect"); return this; }

        /** @param scope prefix of every store key, e.g. {@code spark/stage-3.1}; empty for none (HCOMM_STORE_SCOPE) */
        public Builder storeScope(String scope) { this.storeScope = scope == null ? "" : scope; return this; }

        /** @param algo forced algorithms, {@code op=algo;...} (see docs/configuration.md); empty for the cost model */
        public Builder algo(String algo) { this.algo = algo == null ? "" : algo; return this; }

        /** @param file a tuning table written by {@code hcomm tune} (HCOMM_TUNING_FILE); null or empty for none */
        public Builder tuningFile(String file) { this.tuningFile = file == null || file.isBlank() ? null : file; return this; }

        /** @param on time the algorithms and replace one that became slow (HCOMM_FEEDBACK, default false) */
        public Builder feedback(boolean on) { this.feedback = on; return this; }
        /** @param on init joins a running job in a dead rank's place (HCOMM_JOIN, default false) */
        public Builder join(boolean on) { this.join = on; return this; }

        /** @param n TCP connections per interface to each peer, 1..16 (HCOMM_CHANNELS, default 1) */
        public Builder channels(int n) { this.channels = n; return this; }

        /** @param name TCP congestion control of the TCP links, e.g. {@code cubic}; empty: the system's (HCOMM_TCP_CONGESTION) */
        public Builder tcpCongestion(String name) { this.tcpCongestion = Objects.requireNonNull(name, "tcpCongestion"); return this; }

        /** @param on measure the links at init for the cost model when no tuning table covers the job (HCOMM_TUNE_AT_INIT) */
        public Builder tuneAtInit(boolean on) { this.tuneAtInit = on; return this; }

        /** @param full true: exchange each collective's fingerprint before it runs (HCOMM_CHECK=full) */
        public Builder fullCheck(boolean full) { this.fullCheck = full; return this; }

        /** @param bytes most bytes of shared memory the memory pool maps (HCOMM_MEM_POOL_MAX) */
        public Builder memPoolMax(long bytes) { this.memPoolMax = bytes; return this; }

        /** @param dir directory of the memory pool's shared-memory files (HCOMM_SHM_DIR) */
        public Builder shmDir(String dir) { this.shmDir = Objects.requireNonNull(dir, "shmDir"); return this; }

        /** @param debug true: record allocation sites and invalidate closed buffers (HCOMM_MEM_DEBUG) */
        public Builder memDebug(boolean debug) { this.memDebug = debug; return this; }

        /** @param adopt true: share the caller's reused large off-heap buffers with peers in place (HCOMM_MEM_ADOPT) */
        public Builder memAdopt(boolean adopt) { this.memAdopt = adopt; return this; }

        /** @param transport {@code AUTO}, {@code TCP}, {@code SHM} or {@code UCX} (HCOMM_TRANSPORT) */
        public Builder transport(Transport transport) { this.transport = Objects.requireNonNull(transport, "transport"); return this; }

        /** @param id host identity to use instead of the computed one, or {@code null} to compute it (HCOMM_HOST_ID) */
        public Builder hostId(String id) { this.hostId = id; return this; }

        /** @param bytes bytes of each direction's shared-memory ring, a power of two in [64K, 1G] (HCOMM_SHM_RING_SIZE) */
        public Builder shmRingSize(long bytes) { this.shmRingSize = bytes; return this; }

        /** @param timeout silence after which a peer is declared failed, at least 500ms, or zero: no heartbeats (HCOMM_HEARTBEAT_TIMEOUT) */
        public Builder heartbeatTimeout(Duration timeout) { this.heartbeatTimeout = Objects.requireNonNull(timeout, "heartbeatTimeout"); return this; }

        /** @param interval heartbeat period of an idle connection, or {@code null}: a quarter of the timeout (HCOMM_HEARTBEAT_INTERVAL) */
        public Builder heartbeatInterval(Duration interval) { this.heartbeatInterval = interval; return this; }

        /** @param after how long an op waits before it is reported as stuck, or zero: never (HCOMM_STUCK_REPORT) */
        public Builder stuckReport(Duration after) { this.stuckReport = Objects.requireNonNull(after, "stuckReport"); return this; }
        /** @param budget how long init may warm the collectives up, or zero: no warm-up (HCOMM_WARMUP) */
        public Builder warmUp(Duration budget) { this.warmUp = Objects.requireNonNull(budget, "warmUp"); return this; }
        /** @param on false: no zero-copy collectives on shared memory, everything through the transport (HCOMM_ZERO_COPY) */
        public Builder zeroCopy(boolean on) { this.zeroCopy = on; return this; }

        /** @param attempts reconnect attempts for a dropped connection before its peer is declared failed, 0 to 1000; 0: none (HCOMM_RETRY_MAX) */
        public Builder retryMax(int attempts) { this.retryMax = attempts; return this; }

        /** @param interval window of the first reconnect attempt, each next one twice the last, at most 8 times this; 1ms to 1min (HCOMM_RETRY_INTERVAL) */
        public Builder retryInterval(Duration interval) { this.retryInterval = Objects.requireNonNull(interval, "retryInterval"); return this; }

        /** @param monitor the flight recorder's settings (HCOMM_TRACE_BUFFER, HCOMM_TRACE_DIR) */
        public Builder monitor(MonitorConfig monitor) { this.monitor = Objects.requireNonNull(monitor, "monitor"); return this; }

        /** The monitor settings so far (the environment sets them one by one). */
        MonitorConfig monitor() { return monitor; }

        /** Validates and builds; throws {@link IllegalArgumentException} naming the bad setting. */
        public CommConfig build() {
            String m = initMethod.toLowerCase(Locale.ROOT);
            if (!(m.startsWith("env://") || m.startsWith("tcp://") || m.startsWith("file://"))) {
                throw new IllegalArgumentException("initMethod '" + initMethod + "' is not one of env://, tcp://host:port, file:///path");
            }
            if (rank < UNSET) throw new IllegalArgumentException("rank must be >= 0, was " + rank);
            if (worldSize < UNSET || worldSize == 0) throw new IllegalArgumentException("worldSize must be >= 1, was " + worldSize);
            if (rank != UNSET && worldSize != UNSET && rank >= worldSize) {
                throw new IllegalArgumentException("rank " + rank + " is not below worldSize " + worldSize);
            }
            if (secret != null) checkSecret(secret, "secret (HCOMM_SECRET)");
            ConfigChecks.links(socketIfname, channels, tcpCongestion);
            positive("timeout", timeout);
            positive("initTimeout", initTimeout);
            if (spinTime.isNegative()) throw new IllegalArgumentException("spinTime must be >= 0, was " + d(spinTime));
            ConfigChecks.limits(eagerLimit, unexpectedLimit, unexpectedTotal, unexpectedCount);
            ConfigChecks.resendLog(resendLogFrames, resendLogBytes, unexpectedLimit, retryMax);
            ConfigChecks.accept(acceptPending, acceptPendingPerSource, handshakeTimeout);
            ConfigChecks.memory(memPoolMax, shmDir, shmRingSize);
            ConfigChecks.hostId(hostId);
            ConfigChecks.heartbeats(heartbeatTimeout, heartbeatInterval);
            if (stuckReport.isNegative()) throw new IllegalArgumentException("stuckReport (HCOMM_STUCK_REPORT) must be >= 0, was " + d(stuckReport));
            ConfigChecks.ranges(warmUp, retryMax, retryInterval, storePort, storeReconnect);
            ConfigChecks.storeScope(storeScope);
            if (tls == null && tlsParts.on) tls = tlsParts.build();
            if (tls != null) {
                // fails here, naming the setting and the file, if a store is unusable
                tls.loadKeyStore();
                tls.loadTrustStore();
            }
            try {
                Providers.session().checkAlgorithms(algo);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("algo (HCOMM_ALGO) '" + algo + "': " + e.getMessage(), e);
            }
            return new CommConfig(this);
        }

        private static void positive(String name, Duration d) {
            if (d.isNegative() || d.isZero()) throw new IllegalArgumentException(name + " must be > 0, was " + d(d));
        }
    }

    /**
     * Refuses a job secret that is missing or shorter than {@value #MIN_SECRET_BYTES} bytes, without showing it.
     *
     * @param setting names where it came from in the message ({@code "secret (HCOMM_SECRET)"}, {@code "--secret"})
     * @throws IllegalArgumentException it is
     */
    public static void checkSecret(String secret, String setting) {
        if (secret == null) throw new IllegalArgumentException(setting + " is missing (null)");
        int n = secret.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        if (n < MIN_SECRET_BYTES) {
            throw new IllegalArgumentException(setting + " is " + n + " bytes long, shorter than the " + MIN_SECRET_BYTES
                    + " bytes required; use a random one: " + HOW_TO_MAKE_A_SECRET);
        }
    }

    /** Parses {@code 500ms}, {@code 3s}, {@code 2m}, {@code 1h}, {@code 100us}, {@code 10ns}; a bare number is seconds. */
    public static Duration parseDuration(String text) {
        return ConfigSetting.duration(text);
    }

    /** Parses {@code 4096}, {@code 64K}, {@code 64KiB}, {@code 1M}, {@code 2G} (powers of 1024). */
    public static long parseSize(String text) {
        return ConfigSetting.size(text);
    }
}
