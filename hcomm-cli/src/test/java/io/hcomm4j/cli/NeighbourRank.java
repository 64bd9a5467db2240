package io.hcomm4j.cli;

import io.hcomm4j.CommFuture;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Status;

/**
 * A rank of a job that {@code hcomm launch} starts in {@link CoreJobTest}: joins the job with {@link Hcomm#init()}
 * (from the launcher's environment, through the store the launcher serves), sends an array to the next rank,
 * receives one from the previous rank, checks every element and prints one line saying so. Exits with 1 when
 * anything is wrong.
 */
public final class NeighbourRank {
    /** Elements exchanged: 400 KB, above the eager limit, so the message goes rendezvous. */
    static final int COUNT = 100_000;
    private static final int TAG = 3;

    private NeighbourRank() {
    }

    public static void main(String[] args) {
        int code;
        try {
            code = run();
        } catch (Throwable t) {
            System.err.println("neighbour rank failed:");
            t.printStackTrace();
            code = 1;
        }
        System.out.flush();
        System.exit(code);
    }

    static int value(int rank, int i) {
        return rank * 7_919 + i * 31;
    }

    private static int run() {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int rank = comm.rank();
            int size = comm.size();
            int next = (rank + 1) % size;
            int prev = (rank + size - 1) % size;
            int[] out = new int[COUNT];
            for (int i = 0; i < COUNT; i++) out[i] = value(rank, i);
            int[] in = new int[COUNT];
            CommFuture<Status> received = comm.recvAsync(in, prev, TAG);
            comm.send(out, next, TAG);
            Status status = received.await();
            int wrong = 0;
            for (int i = 0; i < COUNT; i++) {
                if (in[i] != value(prev, i)) wrong++;
            }
            boolean ok = wrong == 0 && status.source() == prev && status.bytes() == 4L * COUNT;
            System.out.println("rank " + rank + " of " + size + " (store hosted by the launcher: " + hcomm.config().storeHosted()
                    + ", port " + System.getenv("MASTER_PORT") + "): " + status.bytes() + " bytes from rank " + status.source()
                    + ", " + (wrong == 0 ? "all correct" : wrong + " ints wrong"));
            return ok ? 0 : 1;
        }
    }
}
