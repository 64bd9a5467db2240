import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;

/**
 * What plain Java gets moving bytes both ways at once over several links, no library: the floor an HComm4J exchange or
 * all-reduce between two hosts is compared with. Two processes (one per host) open one TCP connection per listed
 * address; every call, each side sends BYTES to the other, split over the links in the given proportions (an oracle
 * split: the links' rates known in advance), one blocking writer and one blocking reader thread per connection, and
 * the call ends when both directions are done on both sides (a one-byte handshake closes each call). Prints the mean
 * GB/s per direction over the calls after WARM calls.
 *
 * <pre>java TcpBothWays.java server|client ADDR[,ADDR...] PORT BYTES WEIGHT[,WEIGHT...] CALLS WARM</pre>
 *
 * The server listens on PORT+i on address i; the client connects to them.
 */
public class TcpBothWays {
    public static void main(String[] a) throws Exception {
        boolean server = a[0].equals("server");
        String[] addrs = a[1].split(",");
        int port = Integer.parseInt(a[2]);
        long bytes = parseSize(a[3]);
        String[] w = a[4].split(",");
        int calls = Integer.parseInt(a[5]);
        int warm = Integer.parseInt(a[6]);
        int n = addrs.length;
        double sum = 0;
        for (String x : w) sum += Double.parseDouble(x);
        long[] share = new long[n];
        long given = 0;
        for (int i = 0; i < n; i++) {
            share[i] = i == n - 1 ? bytes - given : (long) (bytes * Double.parseDouble(w[i]) / sum) & ~4095L;
            given += share[i];
        }
        List<SocketChannel> chs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            SocketChannel ch;
            if (server) {
                try (ServerSocketChannel ss = ServerSocketChannel.open().bind(new InetSocketAddress(addrs[i], port + i))) {
                    ch = ss.accept();
                }
            } else {
                ch = connect(new InetSocketAddress(addrs[i], port + i));
            }
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            chs.add(ch);
        }
        // per link: a writer and a reader; all meet at the barrier at the end of each call
        CyclicBarrier end = new CyclicBarrier(2 * n + 1);
        for (int i = 0; i < n; i++) {
            SocketChannel ch = chs.get(i);
            long mine = share[i];
            Thread.ofPlatform().daemon().start(() -> loop(end, calls + warm, () -> {
                ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
                for (long left = mine; left > 0; ) {
                    b.clear().limit((int) Math.min(b.capacity(), left));
                    while (b.hasRemaining()) left -= ch.write(b);
                }
            }));
            Thread.ofPlatform().daemon().start(() -> loop(end, calls + warm, () -> {
                ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
                for (long left = mine; left > 0; ) {
                    b.clear().limit((int) Math.min(b.capacity(), left));
                    int r = ch.read(b);
                    if (r < 0) throw new java.io.EOFException();
                    left -= r;
                }
            }));
        }
        double total = 0;
        for (int c = 0; c < calls + warm; c++) {
            long t0 = System.nanoTime();
            end.await();
            long ns = System.nanoTime() - t0;
            if (c >= warm) total += ns;
            if (server) System.out.printf("call %d: %.1f ms, %.3f GB/s each way%n", c, ns / 1e6, bytes / (double) ns);
        }
        System.out.printf("%s: %d calls of %d bytes each way over %d links: mean %.3f GB/s each way%n",
                server ? "server" : "client", calls, bytes, n, bytes * calls / total);
    }

    interface Io {
        void run() throws Exception;
    }

    private static void loop(CyclicBarrier end, int calls, Io io) {
        try {
            for (int c = 0; c < calls; c++) {
                io.run();
                end.await();
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }

    private static SocketChannel connect(InetSocketAddress to) throws Exception {
        for (int i = 0; ; i++) {
            try {
                return SocketChannel.open(to);
            } catch (java.io.IOException e) {
                if (i > 100) throw e;
                Thread.sleep(100);
            }
        }
    }

    private static long parseSize(String s) {
        char u = Character.toUpperCase(s.charAt(s.length() - 1));
        long m = u == 'K' ? 1 << 10 : u == 'M' ? 1 << 20 : u == 'G' ? 1 << 30 : 1;
        return Long.parseLong(m == 1 ? s : s.substring(0, s.length() - 1)) * m;
    }
}
