package io.hcomm4j.cli;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.PeerFailedException;

/**
 * A rank of an elastic job that {@code hcomm launch --max-restarts} runs in {@link ElasticLaunchTest}: every rank
 * all-reduces and checks every element; then the last rank kills its own JVM (SIGKILL); the others see
 * {@link PeerFailedException} in the next all-reduce, shrink, and grow back with the replacement that the launcher
 * started (the same program, {@code HCOMM_JOIN=1}, so {@link Hcomm#init()} joins); all then all-reduce again and check
 * every element. One line per rank says what it saw; exit code 1 when anything was wrong.
 */
public final class ElasticRank {
    static final int COUNT = 50_000;

    private ElasticRank() {
    }

    public static void main(String[] args) {
        int code;
        try {
            code = run();
        } catch (Throwable t) {
            System.err.println("elastic rank failed:");
            t.printStackTrace();
            code = 1;
        }
        System.out.flush();
        System.exit(code);
    }

    /** Element {@code i} of a rank's input in round {@code round}. */
    static long value(int rank, int round, int i) {
        return rank * 1_000_003L + round * 7_919L + i;
    }

    /** Every element of the sum over {@code size} ranks right? */
    private static boolean check(long[] got, int size, int round) {
        for (int i = 0; i < COUNT; i++) {
            long want = 0;
            for (int r = 0; r < size; r++) want += value(r, round, i);
            if (got[i] != want) return false;
        }
        return true;
    }

    private static boolean allReduce(Communicator comm, int round) {
        long[] a = new long[COUNT];
        for (int i = 0; i < COUNT; i++) a[i] = value(comm.rank(), round, i);
        comm.allReduce(a, io.hcomm4j.ReduceOp.SUM);
        return check(a, comm.size(), round);
    }

    private static int run() throws Exception {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            String restart = System.getenv("HCOMM_RESTART_COUNT");
            if (hcomm.joined()) {
                boolean ok = allReduce(comm, 2);
                System.out.println("replacement " + restart + ": rank " + comm.rank() + " of " + comm.size() + ", round 2 "
                        + (ok ? "all correct" : "WRONG"));
                return ok ? 0 : 1;
            }
            int size = comm.size();
            boolean first = allReduce(comm, 0);
            // the last rank dies only when every other rank has its round-0 result (a message from each says so), so that
            // the others see the failure in round 1, not in the middle of round 0
            int last = size - 1;
            if (comm.rank() != last) comm.send(new int[] {comm.rank()}, last, 9);
            if (comm.rank() == last) {
                for (int r = 0; r < last; r++) comm.recv(new int[1], r, 9);
                System.out.println("rank " + comm.rank() + ": round 0 " + (first ? "all correct" : "WRONG") + "; killing this JVM");
                System.out.flush();
                new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).start().waitFor();
                Thread.sleep(10_000);
                Runtime.getRuntime().halt(137);
            }
            String lost;
            try {
                allReduce(comm, 1);
                return 1; // the dead rank's part cannot have come
            } catch (PeerFailedException e) {
                lost = e.failedRanks().toString();
            }
            Communicator shrunk = comm.shrink();
            Communicator grown = shrunk.grow(size - shrunk.size());
            boolean second = allReduce(grown, 2);
            System.out.println("rank " + comm.rank() + ": round 0 " + (first ? "all correct" : "WRONG") + ", lost " + lost
                    + ", shrunk to " + shrunk.size() + ", grown to " + grown.size() + " as rank " + grown.rank()
                    + ", round 2 " + (second ? "all correct" : "WRONG"));
            grown.close();
            shrunk.close();
            return first && second ? 0 : 1;
        }
    }
}
