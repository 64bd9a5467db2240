import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;

/**
 * The raw loopback TCP round trip of Java on this machine, no library: two processes ping-pong 56 bytes (an HComm4J
 * frame header's size) over one connection with TCP_NODELAY, either spinning on a non-blocking channel ("spin") or
 * blocked in read ("block"). The client prints each round's mean round trip and its p50, p90 and p99.
 *
 * <pre>java TcpPing.java server|client spin|block PORT ITERS</pre>
 */
public class TcpPing {
    public static void main(String[] a) throws Exception {
        boolean server = a[0].equals("server");
        boolean spin = a[1].equals("spin");
        int port = Integer.parseInt(a[2]);
        int iters = Integer.parseInt(a[3]);
        SocketChannel ch;
        if (server) {
            try (ServerSocketChannel ss = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", port))) {
                ch = ss.accept();
            }
        } else {
            ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
        }
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        if (spin) ch.configureBlocking(false);
        ByteBuffer b = ByteBuffer.allocateDirect(64);
        long[] lat = new long[iters];
        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < iters; i++) {
                long start = System.nanoTime();
                if (!server) write(ch, b);
                b.clear().limit(56);
                while (b.hasRemaining()) if (ch.read(b) < 0) return;
                if (server) write(ch, b);
                lat[i] = System.nanoTime() - start;
            }
            long t = System.nanoTime() - t0;
            Arrays.sort(lat);
            if (!server) {
                System.out.printf("%s: round trip mean %.2f us, p50 %.1f, p90 %.1f, p99 %.1f%n", spin ? "spin" : "block",
                        t / 1e3 / iters, lat[iters / 2] / 1e3, lat[iters * 9 / 10] / 1e3, lat[iters * 99 / 100] / 1e3);
            }
        }
        ch.close();
    }

    private static void write(SocketChannel ch, ByteBuffer b) throws java.io.IOException {
        b.clear().limit(56);
        while (b.hasRemaining()) ch.write(b);
    }
}
