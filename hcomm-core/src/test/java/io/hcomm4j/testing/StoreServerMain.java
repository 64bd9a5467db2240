package io.hcomm4j.testing;

import io.hcomm4j.bootstrap.TcpStoreServer;
import java.net.InetSocketAddress;

/**
 * A job's store in a process of its own: {@code StoreServerMain <address> <port> <secret>} serves a
 * {@link TcpStoreServer} there, prints {@code ready}, and serves until its standard input ends or it is killed. Tests
 * start it where their own JVM cannot listen (inside a network namespace), so the store outlives any one session of
 * the ranks (a rank 0 that hosts the store closes it with its session).
 */
public final class StoreServerMain {
    public static void main(String[] args) throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress(args[0], Integer.parseInt(args[1])), args[2])) {
            System.out.println("ready " + server.address());
            System.out.flush();
            while (System.in.read() >= 0) {
                // serve until stdin ends
            }
        }
    }
}
