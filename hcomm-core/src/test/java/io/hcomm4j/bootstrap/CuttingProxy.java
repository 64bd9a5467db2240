package io.hcomm4j.bootstrap;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP forwarder between store clients and a store server that can break a connection at a chosen moment: real
 * sockets on both sides, so the client and the server see exactly what a broken network shows them. {@link #cutNextReply()}
 * drops the next bytes the server sends (the server applied the request, the client never hears of it);
 * {@link #cutNextRequest()} drops the next bytes the client sends (the server never sees the request). Either way both
 * connections are then closed. Later connections pass through untouched.
 */
final class CuttingProxy implements AutoCloseable {
    private enum Cut { NONE, REQUEST, REPLY }

    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private volatile Cut armed = Cut.NONE;
    /** Connections cut so far. */
    final AtomicInteger cuts = new AtomicInteger();
    private final Thread acceptor;

    CuttingProxy(InetSocketAddress target) throws IOException {
        this.target = target;
        this.listener = new ServerSocket(0, 50, TestPorts.LOOPBACK);
        this.acceptor = Thread.ofPlatform().daemon().name("test-proxy-accept").start(this::acceptLoop);
    }

    InetSocketAddress address() {
        return new InetSocketAddress(TestPorts.LOOPBACK, listener.getLocalPort());
    }

    void cutNextReply() {
        armed = Cut.REPLY;
    }

    void cutNextRequest() {
        armed = Cut.REQUEST;
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(target.getAddress(), target.getPort());
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(server);
                threads.add(Thread.ofPlatform().daemon().start(() -> pump(client, server, Cut.REQUEST)));
                threads.add(Thread.ofPlatform().daemon().start(() -> pump(server, client, Cut.REPLY)));
            } catch (IOException e) {
                return;
            }
        }
    }

    /** Copies {@code from} to {@code to}; a chunk read while {@code cut} is armed is dropped and both sockets closed. */
    private void pump(Socket from, Socket to, Cut cut) {
        byte[] buf = new byte[64 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (armed == cut) {
                    armed = Cut.NONE;
                    cuts.incrementAndGet();
                    from.close();
                    to.close();
                    return;
                }
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // the other direction closed the pair
        } finally {
            try {
                from.close();
                to.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    @Override
    public void close() throws Exception {
        listener.close();
        for (Socket s : sockets) s.close();
        acceptor.join(5000);
        for (Thread t : threads) t.join(5000);
    }
}
