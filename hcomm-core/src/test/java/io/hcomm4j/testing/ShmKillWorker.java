package io.hcomm4j.testing;

import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.PeerFailedException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Rank of the shared-memory kill job. The victim (last rank) sends every other rank a registered 1 MiB buffer (read in
 * place by the receiver), names its file ({@code REGISTERED <name>}), announces READY and sleeps until it is killed.
 * The others receive into registered buffers of their own, list the peer files they have mapped ({@code MAPPED <name>}),
 * wait for a message from the victim that never comes, report the failure, talk among themselves and close.
 */
public final class ShmKillWorker {
    static final int SIZE = 1 << 20;

    static byte pattern(long i) {
        return (byte) (i * 37 + 11);
    }

    public static void main(String[] args) throws Exception {
        try (Hcomm hcomm = Hcomm.init()) {
            Communicator comm = hcomm.world();
            int rank = comm.rank(), n = comm.size(), victim = n - 1;
            byte[] b = new byte[8];
            if (rank == victim) {
                RegisteredBuffer buf = comm.memory().allocate(SIZE);
                for (long i = 0; i < SIZE; i++) buf.segment().set(ValueLayout.JAVA_BYTE, i, pattern(i));
                System.out.println("REGISTERED " + ((MemoryPool) comm.memory()).lookup(buf.segment()).orElseThrow().fileName());
                for (int p = 0; p < n - 1; p++) comm.send(buf.segment(), p, 1);
                for (int p = 0; p < n - 1; p++) comm.recv(b, p, 2);
                System.out.println("READY");
                System.out.flush();
                Thread.sleep(600_000);
                return;
            }
            try (RegisteredBuffer in = comm.memory().allocate(SIZE)) {
                MemorySegment s = in.segment();
                if (comm.recv(s, victim, 1).bytes() != SIZE) throw new AssertionError("wrong size");
                for (long i = 0; i < SIZE; i++) {
                    if (s.get(ValueLayout.JAVA_BYTE, i) != pattern(i)) throw new AssertionError("byte " + i + " is wrong");
                }
            }
            String dir = hcomm.config().shmDir();
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int at = line.indexOf(dir + "/hcomm4j-");
                if (at >= 0 && !line.endsWith("(deleted)")) System.out.println("MAPPED " + Path.of(line.substring(at).trim()).getFileName());
            }
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
                System.out.printf("DETECTED %d ms ranks=%s%n", (System.nanoTime() - t0) / 1_000_000, e.failedRanks());
            }
            if (n > 2) {
                int next = (rank + 1) % (n - 1), prev = (rank - 1 + n - 1) % (n - 1);
                byte[] got = new byte[4];
                var r = comm.recvAsync(got, prev, 9);
                comm.send(new byte[] {(byte) rank, 1, 2, 3}, next, 9);
                r.await();
                if (got[0] != (byte) prev) throw new AssertionError("survivor exchange broken");
                System.out.println("SURVIVORS OK");
            }
        }
        System.out.println("CLOSED");
    }
}
