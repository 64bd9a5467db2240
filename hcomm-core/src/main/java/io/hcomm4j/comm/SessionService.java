package io.hcomm4j.comm;

import io.hcomm4j.CommConfig;
import io.hcomm4j.SessionProvider;
import io.hcomm4j.algo.Tuner;
import io.hcomm4j.bootstrap.TcpStoreServer;
import java.net.InetSocketAddress;

/**
 * The {@link SessionProvider} that {@link io.hcomm4j.Hcomm} loads (META-INF/services and module-info register it):
 * sessions are {@link Session}s.
 */
public final class SessionService implements SessionProvider {
    /** For {@link java.util.ServiceLoader}. */
    public SessionService() {
    }

    @Override
    public SessionProvider.SessionHandle open(CommConfig config) {
        Session s = SessionStart.open(config);
        if (!config.warmUp().isZero()) {
            try {
                s.world().warmUp(config.warmUp());
            } catch (RuntimeException e) {
                s.close();
                throw e;
            }
        }
        return s;
    }

    @Override
    public SessionProvider.SessionHandle join(CommConfig config) {
        return SessionStart.join(config);
    }

    @Override
    public void checkAlgorithms(String spec) {
        Tuner.parse(spec);
    }

    @Override
    public java.util.Optional<io.hcomm4j.Hcomm.LaunchedAs> launchedAs() {
        return io.hcomm4j.bootstrap.JobEnvironment.detect(System.getenv())
                .map(p -> new io.hcomm4j.Hcomm.LaunchedAs(p.rank(), p.worldSize(), p.choice()));
    }

    @Override
    public boolean vectorReductions() {
        return io.hcomm4j.kernel.ReduceKernel.vectorAvailable();
    }

    @Override
    public SessionProvider.ServedStore serveStore(InetSocketAddress bind, String secret, boolean unauthenticated) {
        TcpStoreServer server = TcpStoreServer.start(bind, io.hcomm4j.security.Auth.forJob(secret, unauthenticated));
        return new SessionProvider.ServedStore() {
            @Override
            public InetSocketAddress address() {
                return server.address();
            }

            @Override
            public void close() {
                server.close();
            }
        };
    }
}
