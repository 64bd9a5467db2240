package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.PeerFailedException;

/**
 * Rank of the peer-failure job: all ranks exchange once (so connections exist), then the victim (last
 * rank) announces READY and sleeps until it is killed; the others wait for a message from it and report
 * how long the failure took to surface.
 */
public final class FailureWorker {
    public static void main(String[] args) throws Exception {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int rank = comm.rank(), n = comm.size(), victim = n - 1;
            byte[] b = new byte[8];
            if (rank == victim) {
                for (int p = 0; p < n - 1; p++) comm.send(b, p, 1);
                for (int p = 0; p < n - 1; p++) comm.recv(b, p, 2);
                System.out.println("READY");
                System.out.flush();
                Thread.sleep(600_000);
                return;
            }
            comm.recv(b, victim, 1);
            comm.send(b, victim, 2);
            Ranks.printTransports(hcomm);
            System.out.println("WAITING");
            System.out.flush();
            long t0 = System.nanoTime();
            try {
                comm.recv(new byte[8], victim, 3);
                System.out.println("NOT DETECTED: recv completed");
                System.exit(3);
            } catch (PeerFailedException e) {
                System.out.printf("DETECTED %d ms ranks=%s msg=%s%n", (System.nanoTime() - t0) / 1_000_000, e.failedRanks(), e.getMessage());
            }
            // the survivors still talk to each other
            if (n > 2) {
                int next = (rank + 1) % (n - 1), prev = (rank - 1 + n - 1) % (n - 1);
                byte[] in = new byte[4];
                var r = comm.recvAsync(in, prev, 9);
                comm.send(new byte[] {(byte) rank, 1, 2, 3}, next, 9);
                r.await();
                if (in[0] != (byte) prev) throw new AssertionError("survivor exchange broken");
                System.out.println("SURVIVORS OK");
            }
        }
    }
}
