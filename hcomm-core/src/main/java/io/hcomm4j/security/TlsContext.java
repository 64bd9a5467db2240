package io.hcomm4j.security;

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
        return LOADED.computeIfAbsent(config, TlsContext::load);
    }

    /**
     * Loads the stores of {@code config}.
     *
     * @throws IllegalArgumentException a store is missing, unreadable, has another password or holds no key (the message
     *                                  names the file and the setting)
     */
    static TlsContext load(io.hcomm4j.TlsConfig config) {
        KeyStore keys = config.loadKeyStore();
        KeyStore trusted = config.trustStore().equals(config.keyStore()) ? keys : config.loadTrustStore();
        try {
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, config.keyStorePassword());
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trusted);
            SSLContext ctx = SSLContext.getInstance("TLSv1.3");
            ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
            return new TlsContext(ctx, config.toString());
        } catch (UnrecoverableKeyException e) {
            throw new IllegalArgumentException("HCOMM_TLS_KEYSTORE " + config.keyStore() + ": the key's password is not the "
                    + "store's (" + e.getMessage() + ")", e);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot set up TLS from " + config.keyStore() + " and " + config.trustStore()
                    + ": " + e.getMessage(), e);
        }
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
