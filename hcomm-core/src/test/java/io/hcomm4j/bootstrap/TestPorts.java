package io.hcomm4j.bootstrap;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Loopback ports for tests. */
final class TestPorts {
    /** 127.0.0.1: tests never use another address (not even ::1, which a JVM preferring IPv6 would pick). */
    static final InetAddress LOOPBACK = loopback();

    private TestPorts() {
    }

    private static InetAddress loopback() {
        try {
            return InetAddress.getByAddress("127.0.0.1", new byte[] {127, 0, 0, 1});
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A port free on 127.0.0.1 a moment ago (the kernel may hand it out again, but rarely does so soon). */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, LOOPBACK)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
