package io.hcomm4j.cli;

import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicInteger;

/** A store host that serves nothing: records that it was started and closed, and reports a port. */
final class FakeStoreHost implements LocalLauncher.StoreHost {
    static final int PORT = 45678;

    final AtomicInteger starts = new AtomicInteger();
    final AtomicInteger closes = new AtomicInteger();
    volatile InetSocketAddress bind;
    volatile String secret;

    @Override
    public LocalLauncher.HostedStore start(InetSocketAddress bind, String secret) {
        starts.incrementAndGet();
        this.bind = bind;
        this.secret = secret;
        int port = bind.getPort() == 0 ? PORT : bind.getPort();
        return new LocalLauncher.HostedStore(new InetSocketAddress(bind.getHostString(), port), closes::incrementAndGet);
    }
}
