package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.DataType;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Status;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A rank of the striping job in network namespaces ({@code NetnsStripingTest}): two ranks exchange {@code bytes}-byte
 * messages (each sends one and receives one per iteration) until rank 0 sees the stop file, every long of every message
 * checked (a mismatch throws: the rank exits non-zero). Rank 0 prints per iteration
 * {@code ITER <i> at=<epoch ms> us=<time of the exchange> links=<index>:<chunk bytes>,... primary=<route>} (its links to
 * rank 1, what each carried so far, and where the primary link goes; messages under 1 MiB: every 100th iteration only),
 * and at the end {@code OK <iterations>}.
 */
public final class StripeWorker {
    private StripeWorker() {
    }

    public static void main(String[] args) throws Exception {
        Path stop = Path.of(args[0]);
        long bytes = Long.parseLong(args[1]);
        try (Hcomm hcomm = Hcomm.init(); Arena arena = Arena.ofShared()) {
            Communicator comm = hcomm.world();
            int rank = comm.rank();
            int peer = 1 - rank;
            MemorySegment out = arena.allocate(bytes, 64), in = arena.allocate(bytes, 64);
            MemorySegment flag = arena.allocate(8);
            int i = 0;
            while (true) {
                flag.set(ValueLayout.JAVA_LONG, 0, rank == 0 && Files.exists(stop) ? 0 : 1);
                comm.broadcast(flag, 1, DataType.INT64, 0);
                if (flag.get(ValueLayout.JAVA_LONG, 0) == 0) break;
                long seed = (long) i * 2 + rank;
                for (long o = 0; o < bytes; o += 8) out.set(ValueLayout.JAVA_LONG, o, seed * 0x9E3779B97F4A7C15L ^ o);
                long t0 = System.nanoTime();
                var r = comm.recvAsync(in, peer, i & 0xFFFF);
                comm.send(out, peer, i & 0xFFFF);
                Status st = r.await();
                long us = (System.nanoTime() - t0) / 1000;
                if (st.bytes() != bytes) throw new AssertionError("iteration " + i + ": " + st.bytes() + " bytes");
                long theirs = (long) i * 2 + peer;
                for (long o = 0; o < bytes; o += 8) {
                    long v = in.get(ValueLayout.JAVA_LONG, o);
                    if (v != (theirs * 0x9E3779B97F4A7C15L ^ o)) throw new AssertionError("iteration " + i + ": long at " + o + " is " + v);
                }
                if (rank == 0 && (bytes >= 1 << 20 || i % 100 == 0)) {
                    StringBuilder links = new StringBuilder();
                    StringBuilder unsent = new StringBuilder();
                    String primary = "-";
                    for (Hcomm.Link l : hcomm.linksTo(1)) {
                        if (!links.isEmpty()) links.append(',');
                        links.append(l.index()).append(':').append(l.bytes());
                        if (!unsent.isEmpty()) unsent.append(',');
                        unsent.append(l.index()).append(':').append(l.unsentBytes());
                        if (l.index() == 0) primary = l.route().replace(" ", "");
                    }
                    System.out.println("ITER " + i + " at=" + System.currentTimeMillis() + " us=" + us + " links=" + links
                            + " primary=" + primary + " unsent=" + unsent);
                    System.out.flush();
                }
                i++;
            }
            System.out.println("OK " + i);
        }
    }
}
