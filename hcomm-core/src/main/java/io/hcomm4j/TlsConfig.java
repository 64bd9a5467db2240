package io.hcomm4j;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.NoSuchFileException;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.UnrecoverableKeyException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * TLS for every TCP connection of a job, store and data ({@code HCOMM_TLS=1}): TLS 1.3 with mutual authentication,
 * keys and trusted certificates from PKCS#12 files. The job secret is still proven inside each TLS connection, bound to
 * it: the certificate admits a machine, the secret a job. Shared memory between ranks of one host is not encrypted
 * (its files are the user's own, mode 0600).
 *
 * <pre>{@code
 * CommConfig.builder().secret(secret)
 *     .tls(TlsConfig.of(Path.of("job.p12"), password))   // key store; trusted certificates from the same file
 *     .build();
 * }</pre>
 *
 * From the environment: {@code HCOMM_TLS=1}, {@code HCOMM_TLS_KEYSTORE}, {@code HCOMM_TLS_KEYSTORE_PASSWORD} or
 * {@code HCOMM_TLS_KEYSTORE_PASSWORD_FILE}, and optionally {@code HCOMM_TLS_TRUSTSTORE} with
 * {@code HCOMM_TLS_TRUSTSTORE_PASSWORD(_FILE)} (default: the key store and its password). {@code hcomm launch --tls}
 * makes a job's key store itself. See docs/configuration.md.
 */
public final class TlsConfig {
    private final Path keyStore;
    private final char[] keyStorePassword;
    private final Path trustStore;
    private final char[] trustStorePassword;

    private TlsConfig(Path keyStore, char[] keyStorePassword, Path trustStore, char[] trustStorePassword) {
        this.keyStore = keyStore;
        this.keyStorePassword = keyStorePassword;
        this.trustStore = trustStore;
        this.trustStorePassword = trustStorePassword;
    }

    /** One PKCS#12 file as key store and trust store (its key entry's certificate is trusted): what a job with one key pair needs. */
    public static TlsConfig of(Path keyStore, char[] password) {
        return of(keyStore, password, null, null);
    }

    /**
     * @param keyStore           PKCS#12 file with this process's private key and certificate
     * @param keyStorePassword   its password
     * @param trustStore         PKCS#12 file with the certificates of the peers to accept; {@code null}: {@code keyStore}
     * @param trustStorePassword its password; {@code null}: {@code keyStorePassword}
     */
    public static TlsConfig of(Path keyStore, char[] keyStorePassword, Path trustStore, char[] trustStorePassword) {
        Objects.requireNonNull(keyStore, "keyStore (HCOMM_TLS_KEYSTORE)");
        Objects.requireNonNull(keyStorePassword, "keyStorePassword (HCOMM_TLS_KEYSTORE_PASSWORD)");
        return new TlsConfig(keyStore, keyStorePassword.clone(), trustStore,
                trustStorePassword == null ? null : trustStorePassword.clone());
    }

    /**
     * The TLS config the {@code HCOMM_TLS*} variables of {@code env} describe: empty unless {@code HCOMM_TLS} is on (for
     * tools that read another process's environment, such as the launcher; a rank reads its own with
     * {@link CommConfig#fromEnvironment()}).
     *
     * @throws IllegalArgumentException a setting is missing or bad (the message names it)
     */
    public static java.util.Optional<TlsConfig> fromVariables(java.util.Map<String, String> env) {
        CommConfig.Builder b = CommConfig.builder();
        for (ConfigSetting s : ConfigSetting.values()) {
            String v = env.get(s.env());
            if (!s.name().startsWith("TLS") || v == null || v.isBlank()) continue;
            try {
                s.apply(b, v.trim());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("invalid value for " + s.env() + ": " + e.getMessage(), e);
            }
        }
        return b.tlsParts().on ? java.util.Optional.of(b.tlsParts().build()) : java.util.Optional.empty();
    }

    /**
     * Whether {@code HCOMM_TLS} in {@code env} turns TLS on, read as every setting is (1/0, true/false, yes/no, on/off).
     *
     * @throws IllegalArgumentException another value (the message names the variable)
     */
    public static boolean requested(java.util.Map<String, String> env) {
        String v = env.get(ConfigSetting.TLS.env());
        if (v == null || v.isBlank()) return false;
        try {
            return ConfigSetting.parseBool(v.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid value '" + v + "' for " + ConfigSetting.TLS.env() + ": " + e.getMessage(), e);
        }
    }

    /** The key store. */
    public Path keyStore() {
        return keyStore;
    }

    /** The trust store ({@link #keyStore()} unless another was given). */
    public Path trustStore() {
        return trustStore == null ? keyStore : trustStore;
    }

    /** A copy of the key store's password. */
    public char[] keyStorePassword() {
        return keyStorePassword.clone();
    }

    /** A copy of the trust store's password. */
    public char[] trustStorePassword() {
        return (trustStorePassword == null ? keyStorePassword : trustStorePassword).clone();
    }

    /**
     * Loads the key store: a PKCS#12 file that holds a private key.
     *
     * @throws IllegalArgumentException the file is missing, unreadable, not PKCS#12, has another password or holds no
     *                                  key (the message names the setting and the file)
     */
    public KeyStore loadKeyStore() {
        KeyStore ks = read(keyStore, keyStorePassword, "HCOMM_TLS_KEYSTORE");
        try {
            for (var aliases = ks.aliases(); aliases.hasMoreElements(); ) {
                if (ks.isKeyEntry(aliases.nextElement())) return ks;
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("HCOMM_TLS_KEYSTORE " + keyStore + ": " + e.getMessage(), e);
        }
        throw new IllegalArgumentException("HCOMM_TLS_KEYSTORE " + keyStore + " holds no private key (a PKCS#12 file made by"
                + " e.g. keytool -genkeypair -storetype PKCS12)");
    }

    /**
     * Loads the trust store (the key store itself unless another was given: the certificate of a key entry is trusted).
     *
     * @throws IllegalArgumentException as {@link #loadKeyStore()}, naming HCOMM_TLS_TRUSTSTORE
     */
    public KeyStore loadTrustStore() {
        return trustStore == null ? loadKeyStore() : read(trustStore, trustStorePassword(), "HCOMM_TLS_TRUSTSTORE");
    }

    private static KeyStore read(Path file, char[] password, String setting) {
        try (InputStream in = Files.newInputStream(file)) {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(in, password);
            return ks;
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(setting + ": no file " + file, e);
        } catch (IOException e) {
            // PKCS12 reports a wrong password as an IOException whose cause is UnrecoverableKeyException
            String why = e.getCause() instanceof UnrecoverableKeyException ? "wrong password (" + setting + "_PASSWORD)"
                    : "not a readable PKCS#12 store: " + e.getMessage();
            throw new IllegalArgumentException(setting + " " + file + ": " + why, e);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(setting + " " + file + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "TLS 1.3 (key store " + keyStore + (trustStore == null ? "" : ", trust store " + trustStore) + ")";
    }

    /** The parts {@code HCOMM_TLS_*} name one by one, made whole at {@link CommConfig.Builder#build()}. */
    static final class Parts {
        boolean on;
        Path keyStore;
        Path trustStore;
        char[] keyStorePassword;
        char[] trustStorePassword;

        TlsConfig build() {
            if (keyStore == null) {
                throw new IllegalArgumentException("HCOMM_TLS=1 needs HCOMM_TLS_KEYSTORE (a PKCS#12 file with this process's "
                        + "key and certificate); hcomm launch --tls makes one for a local job");
            }
            if (keyStorePassword == null) {
                throw new IllegalArgumentException("HCOMM_TLS_KEYSTORE " + keyStore + " needs HCOMM_TLS_KEYSTORE_PASSWORD "
                        + "or HCOMM_TLS_KEYSTORE_PASSWORD_FILE");
            }
            return TlsConfig.of(keyStore, keyStorePassword, trustStore, trustStorePassword);
        }

        /** A password from the first line of a file (so it need not sit in the environment of every process). */
        static char[] passwordFile(String file) {
            try {
                String text = Files.readString(Path.of(file), StandardCharsets.UTF_8);
                int end = text.indexOf('\n');
                return (end < 0 ? text : text.substring(0, end)).strip().toCharArray();
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read the password file " + file + ": " + e.getMessage());
            }
        }
    }
}
