package io.hcomm4j.security;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.UnrecoverableKeyException;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

/**
 * The job's TLS credentials: a PKCS#12 key store (this process's key and certificate) and a PKCS#12 trust store (the
 * certificates of whoever may join), made into TLS 1.3 engines that both present and require a certificate.
 *
 * <p>Peers are named by address, not host name, so no host name is checked: the trust store alone decides who is in.
 * A job whose ranks share one key pair (what {@code hcomm launch --tls} makes) uses its key store as its trust store:
 * the certificate of a key entry is trusted like a certificate entry.
 */
public final class TlsContext {
    private static final String[] PROTOCOLS = {"TLSv1.3"};

    private final SSLContext context;
    private final String description;

    private TlsContext(SSLContext context, String description) {
        this.context = context;
        this.description = description;
    }

    private static final java.util.Map<io.hcomm4j.TlsConfig, TlsContext> LOADED =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

    /** The context of {@code config}, loaded once per config object (a job's sessions share it). */
    public static TlsContext of(io.hcomm4j.TlsConfig config) {
        return LOADED.computeIfAbsent(config, c -> load(c.keyStore(), c.keyStorePassword(),
                c.trustStore().equals(c.keyStore()) ? null : c.trustStore(), c.trustStorePassword()));
    }

    /**
     * Loads the stores.
     *
     * @param keyStore           PKCS#12 file with this process's private key and certificate chain
     * @param keyStorePassword   its password
     * @param trustStore         PKCS#12 file with the trusted certificates; {@code null}: {@code keyStore}
     * @param trustStorePassword its password; {@code null}: {@code keyStorePassword}
     * @throws IllegalArgumentException a store is missing, unreadable, has another password or holds no key (the message
     *                                  names the file and the setting)
     */
    public static TlsContext load(Path keyStore, char[] keyStorePassword, Path trustStore, char[] trustStorePassword) {
        Path ts = trustStore == null ? keyStore : trustStore;
        char[] tsPassword = trustStorePassword == null ? keyStorePassword : trustStorePassword;
        KeyStore keys = read(keyStore, keyStorePassword, "HCOMM_TLS_KEYSTORE");
        KeyStore trusted = ts.equals(keyStore) && java.util.Arrays.equals(tsPassword, keyStorePassword) ? keys : read(ts, tsPassword, "HCOMM_TLS_TRUSTSTORE");
        try {
            if (!hasKey(keys)) {
                throw new IllegalArgumentException("HCOMM_TLS_KEYSTORE " + keyStore + " holds no private key (a PKCS#12 file "
                        + "made by e.g. keytool -genkeypair -storetype PKCS12)");
            }
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, keyStorePassword);
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trusted);
            SSLContext ctx = SSLContext.getInstance("TLSv1.3");
            ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
            return new TlsContext(ctx, "TLS 1.3, key store " + keyStore + ", trust store " + ts);
        } catch (UnrecoverableKeyException e) {
            throw new IllegalArgumentException("HCOMM_TLS_KEYSTORE " + keyStore + ": the key's password is not the store's ("
                    + e.getMessage() + ")", e);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot set up TLS from " + keyStore + " and " + ts + ": " + e.getMessage(), e);
        }
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

    private static boolean hasKey(KeyStore ks) throws GeneralSecurityException {
        for (var aliases = ks.aliases(); aliases.hasMoreElements(); ) {
            if (ks.isKeyEntry(aliases.nextElement())) return true;
        }
        return false;
    }

    /** A new engine for one connection: the client side ({@code client}) or the server side, TLS 1.3 only, mutual. */
    SSLEngine engine(boolean client) {
        SSLEngine e = context.createSSLEngine();
        e.setUseClientMode(client);
        SSLParameters p = e.getSSLParameters();
        p.setProtocols(PROTOCOLS);
        if (!client) p.setNeedClientAuth(true);
        e.setSSLParameters(p);
        return e;
    }

    @Override
    public String toString() {
        return description;
    }
}
