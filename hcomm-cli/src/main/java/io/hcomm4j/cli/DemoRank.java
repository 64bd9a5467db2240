package io.hcomm4j.cli;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Stream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Locale;

/**
 * One rank of {@code hcomm demo}: the seed example of HComm4J, step by step, then a short measurement.
 * {@code hcomm demo} starts four of these with {@code hcomm launch}'s environment; each prints what it does.
 *
 * <ol>
 *   <li>init: {@link Hcomm#init()} joins the job (rendezvous through the launcher's store);</li>
 *   <li>communicator: {@link Hcomm#world()}, this rank and the size;</li>
 *   <li>buffers: a send and a receive buffer, off-heap;</li>
 *   <li>stream: {@link Communicator#newStream()};</li>
 *   <li>send to the next rank and receive from the previous one on the stream (a ring);</li>
 *   <li>{@link Stream#synchronize()}, then check every received element;</li>
 *   <li>cleanup: destroy the stream, free the buffers, destroy the communicator, finalize.</li>
 * </ol>
 *
 * Between the last two steps, ranks 0 and 1 measure ping-pong latency (8 B) and bandwidth (4 MiB), all
 * ranks a ring exchange (1 MiB), and rank 0 prints a summary.
 */
public final class DemoRank {
    /** Elements of the seed example's buffers (1 MiB of ints). */
    static final int COUNT = 256 * 1024;
    /** Start of rank 0's summary lines, which {@code hcomm demo} holds back and prints after every rank finished. */
    static final String SUMMARY = "summary| ";
    private static final int TAG = 7;

    private DemoRank() {
    }

    /** Runs one rank; exits with 0 when every step succeeded and every element arrived intact. */
    public static void main(String[] args) {
        int code;
        try {
            code = run();
        } catch (Throwable t) {
            System.err.println("demo rank failed:");
            t.printStackTrace();
            code = 1;
        }
        System.out.flush();
        System.exit(code);
    }

    /** The value rank {@code rank} sends at index {@code i}. */
    static int value(int rank, int i) {
        return rank * 1_000_003 + i;
    }

    private static int run() {
        // 1. init: rendezvous with every rank (RANK, WORLD_SIZE, MASTER_ADDR/PORT come from the launcher)
        Hcomm hcomm = Hcomm.init();
        say("init: Hcomm.init() joined the job");

        // 2. the world communicator
        Communicator comm = hcomm.world();
        int rank = comm.rank();
        int size = comm.size();
        say("communicator: world rank %d of %d", rank, size);

        // 3. send and receive buffers, off-heap, from the session's registered pool through an Arena (usable from the
        // library's threads, and same-host peers can read them in place)
        Arena arena = comm.memory().arena();
        MemorySegment sendBuf = arena.allocate(JAVA_INT, COUNT);
        MemorySegment recvBuf = arena.allocate(JAVA_INT, COUNT);
        for (int i = 0; i < COUNT; i++) sendBuf.setAtIndex(JAVA_INT, i, value(rank, i));
        say("buffers: send and receive buffers of %d ints (%s each, off-heap)", COUNT, P2pBench.human(sendBuf.byteSize()));

        // 4. a stream: an ordered queue of ops on the communicator
        Stream stream = comm.newStream();
        say("stream: created");

        // 5. send to the next rank, receive from the previous one. Ops on a stream run one after the other, so
        //    even ranks send first and odd ranks receive first: every send meets a posted receive in any ring.
        int next = (rank + 1) % size;
        int prev = (rank + size - 1) % size;
        if (rank % 2 == 0) {
            stream.send(sendBuf, next, TAG);
            stream.recv(recvBuf, prev, TAG);
        } else {
            stream.recv(recvBuf, prev, TAG);
            stream.send(sendBuf, next, TAG);
        }
        say("send/recv: enqueued send to rank %d and receive from rank %d on the stream", next, prev);

        // 6. wait for both ops, then check every element
        stream.synchronize();
        say("synchronize: both ops are complete");
        int wrong = 0;
        for (int i = 0; i < COUNT; i++) {
            if (recvBuf.getAtIndex(JAVA_INT, i) != value(prev, i)) wrong++;
        }
        if (wrong != 0) {
            say("check: FAILED: %d of %d ints from rank %d are wrong", wrong, COUNT, prev);
            return 1;
        }
        say("check: all %d ints from rank %d are correct", COUNT, prev);

        // 7. cleanup: stream, buffers
        stream.close();
        say("stream: destroyed");
        arena.close();
        say("buffers: freed");

        Measurements m = measure(comm);
        // every rank reports its own count of wrong bytes to rank 0, so the summary speaks for all of them
        long[] wrongBytes = {m.wrong()};
        if (rank == 0) {
            long[] theirs = new long[1];
            for (int p = 1; p < size; p++) {
                comm.recv(theirs, p, TAG + 1);
                wrongBytes[0] += theirs[0];
            }
        } else {
            comm.send(wrongBytes, 0, TAG + 1);
        }

        // 7. cleanup: communicator, session
        comm.close();
        say("communicator: destroyed");
        hcomm.close();
        say("finalize: done");

        if (rank == 0) m.print(size, wrongBytes[0]);
        return m.wrong() == 0 ? 0 : 1;
    }

    /**
     * What the short measurement found (on rank 0; other ranks hold what they saw).
     *
     * @param latency   8 B ping-pong between ranks 0 and 1 (null on other ranks)
     * @param bandwidth 4 MiB stream from rank 0 to rank 1 (null on other ranks)
     * @param ring      1 MiB ring exchange, as this rank saw it
     */
    private record Measurements(P2pBench.Result latency, P2pBench.Result bandwidth, P2pBench.Result ring) {
        long wrong() {
            long w = Math.max(0, ring.wrong());
            if (latency != null) w += Math.max(0, latency.wrong()) + Math.max(0, bandwidth.wrong());
            return w;
        }

        void print(int size, long wrongOnAllRanks) {
            List<String> lines = List.of(
                    String.format(Locale.ROOT, "HComm4J demo: %d ranks on this host", size),
                    String.format(Locale.ROOT, "  %-28s %7s %11s  %s", "measurement", "size", "iterations", "result (median)"),
                    String.format(Locale.ROOT, "  %-28s %7s %11d  %.2f us one-way latency", "ping-pong, rank 0 <-> 1",
                            P2pBench.human(latency.bytes()), latency.iterations(), latency.timeUs()),
                    String.format(Locale.ROOT, "  %-28s %7s %11s  %.2f GB/s", "stream, rank 0 -> 1",
                            P2pBench.human(bandwidth.bytes()), bandwidth.iterations() + " x " + BANDWIDTH_WINDOW,
                            bandwidth.algbwGBs()),
                    String.format(Locale.ROOT, "  %-28s %7s %11d  %.2f GB/s per rank (%.0f us per step)",
                            "ring exchange, all " + size + " ranks", P2pBench.human(ring.bytes()), ring.iterations(),
                            ring.algbwGBs(), ring.timeUs()),
                    "  every received byte checked on all " + size + " ranks: "
                            + (wrongOnAllRanks == 0 ? "all correct" : wrongOnAllRanks + " wrong"));
            StringBuilder sb = new StringBuilder();
            for (String line : lines) sb.append(SUMMARY).append(line).append(System.lineSeparator());
            System.out.print(sb);
        }
    }

    private static final int BANDWIDTH_WINDOW = 8;

    private static Measurements measure(Communicator comm) {
        int rank = comm.rank();
        P2pBench.Result latency = null;
        P2pBench.Result bandwidth = null;
        if (rank <= 1) {
            latency = P2pBench.pingpong(comm, 8, 2000, 200, true);
            bandwidth = P2pBench.stream(comm, 4 << 20, BANDWIDTH_WINDOW, 10, 2, true);
            if (rank == 0) {
                say("measure: ping-pong with rank 1: %.2f us one-way at 8 B, %.2f GB/s streaming 4 MiB messages",
                        latency.timeUs(), bandwidth.algbwGBs());
            }
        }
        P2pBench.Result ring = P2pBench.ring(comm, 1 << 20, 20, 3, true);
        say("measure: ring exchange of 1 MiB: %.0f us per step, data from the previous rank %s", ring.timeUs(),
                ring.wrong() == 0 ? "correct" : "WRONG (" + ring.wrong() + " bytes)");
        return new Measurements(latency, bandwidth, ring);
    }

    private static void say(String format, Object... args) {
        System.out.println(String.format(Locale.ROOT, format, args));
    }
}
