package io.hcomm4j;

import java.util.Objects;
import java.util.Optional;

/**
 * How a {@link TransferEngine} starts: its name, and the {@link CommConfig} it shares with communicators (the store it
 * finds the other engines through: {@code HCOMM_INIT_METHOD} or {@code MASTER_ADDR}/{@code MASTER_PORT}; the job
 * secret {@code HCOMM_SECRET}; the data address {@code HCOMM_SOCKET_ADDR}/{@code HCOMM_SOCKET_IFNAME};
 * {@code HCOMM_TRANSPORT}, {@code HCOMM_SHM_DIR}, {@code HCOMM_MEM_POOL_MAX}, {@code HCOMM_TIMEOUT},
 * {@code HCOMM_INIT_TIMEOUT}, heartbeats and reconnects). An engine never serves the store: a launcher,
 * {@code hcomm store} or another process does, since engines come and go. Its own settings:
 *
 * <ul>
 *   <li>{@code HCOMM_ENGINE_NAME} ({@code hcomm.engine.name}): the name other engines connect to; default
 *       {@code engine-<id>}. At most 200 characters, no whitespace or control characters. A name names the engine
 *       that started with it last.</li>
 *   <li>{@code HCOMM_ENGINE_SLOTS} ({@code hcomm.engine.slots}): how many engines the job may start over its whole life
 *       (each takes a slot that is never given again); default {@value #DEFAULT_SLOTS}, in [2, 65536]. The first engine of
 *       a store fixes it for the job; an engine started with another value uses the job's (logged). Each slot costs an
 *       engine about 1 KiB until it talks to the engine in that slot.</li>
 * </ul>
 */
public final class TransferConfig {
    /** Default of {@code HCOMM_ENGINE_SLOTS}. */
    public static final int DEFAULT_SLOTS = 4096;
    /** Largest {@code HCOMM_ENGINE_SLOTS}. */
    public static final int MAX_SLOTS = 65536;

    private final String name;
    private final CommConfig comm;
    private final int slots;

    private TransferConfig(Builder b) {
        this.name = b.name;
        this.comm = b.comm;
        this.slots = b.slots;
    }

    /** A builder with every setting at its default (the CommConfig's from the environment, unless given). */
    public static Builder builder() {
        return new Builder();
    }

    /** Settings from {@code HCOMM_*} environment variables and {@code hcomm.*} system properties. */
    public static TransferConfig fromEnvironment() {
        return builderFromEnvironment().build();
    }

    /** A builder preset from the environment and system properties (CommConfig's and the engine's own). */
    public static Builder builderFromEnvironment() {
        Builder b = new Builder();
        String n = setting("hcomm.engine.name", "HCOMM_ENGINE_NAME");
        if (n != null) b.name(n);
        String s = setting("hcomm.engine.slots", "HCOMM_ENGINE_SLOTS");
        if (s != null) {
            try {
                b.slots(Integer.parseInt(s));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("invalid value '" + s + "' for HCOMM_ENGINE_SLOTS (hcomm.engine.slots): not an integer", e);
            }
        }
        return b;
    }

    private static String setting(String property, String env) {
        String v = System.getProperty(property);
        if (v == null) v = System.getenv(env);
        return v == null || v.isBlank() ? null : v.trim();
    }

    /** The engine's name, if one was given (else the engine takes {@code engine-<id>}). */
    public Optional<String> name() {
        return Optional.ofNullable(name);
    }

    /** The store, secret, transport, memory and timeout settings. */
    public CommConfig comm() {
        return comm;
    }

    /** Engine slots of the job ({@code HCOMM_ENGINE_SLOTS}). */
    public int slots() {
        return slots;
    }

    @Override
    public String toString() {
        return "TransferConfig[name=" + name + ", slots=" + slots + ", comm=" + comm + "]";
    }

    /**
     * Throws {@link IllegalArgumentException} naming {@code what} unless {@code name} is a valid engine or segment name:
     * 1 to 200 characters, none of them whitespace or a control character.
     */
    public static String checkName(String name, String what) {
        Objects.requireNonNull(name, what);
        if (name.isEmpty() || name.length() > 200
                || !name.codePoints().allMatch(c -> !Character.isWhitespace(c) && !Character.isISOControl(c) && !Character.isSpaceChar(c))) {
            throw new IllegalArgumentException(what + " '" + name + "' must be 1 to 200 characters without whitespace or control characters");
        }
        return name;
    }

    /** Builds a {@link TransferConfig}. */
    public static final class Builder {
        private String name;
        private CommConfig comm;
        private int slots = DEFAULT_SLOTS;

        private Builder() {
        }

        /** The engine's name (see {@link TransferConfig}); null: {@code engine-<id>}. */
        public Builder name(String name) {
            this.name = name == null ? null : checkName(name, "name");
            return this;
        }

        /** Store, secret, transport, memory and timeout settings; default {@link CommConfig#fromEnvironment()}. */
        public Builder comm(CommConfig comm) {
            this.comm = Objects.requireNonNull(comm, "comm");
            return this;
        }

        /** Engine slots of the job, in [2, 65536] (see {@link TransferConfig}). */
        public Builder slots(int slots) {
            if (slots < 2 || slots > MAX_SLOTS) {
                throw new IllegalArgumentException("slots (HCOMM_ENGINE_SLOTS) must be in [2, " + MAX_SLOTS + "], was " + slots);
            }
            this.slots = slots;
            return this;
        }

        /** The config. */
        public TransferConfig build() {
            if (comm == null) comm = CommConfig.fromEnvironment();
            return new TransferConfig(this);
        }
    }
}
