package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.Status;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Rank of the beyond-2-GiB job: rank 0 sends one message of 2 GiB + 5 bytes, rank 1 checks every byte. */
public final class LargeWorker {
    static final long SIZE = (2L << 30) + 5;

    static long word(long i) {
        return i * 0x9E3779B97F4A7C15L + 12345;
    }

    public static void main(String[] args) throws Exception {
        try (Hcomm hcomm = Hcomm.init(); Arena arena = Arena.ofShared()) {
            Communicator comm = hcomm.world();
            MemorySegment buf = arena.allocate(SIZE, 8);
            long words = SIZE / 8;
            long t0 = System.nanoTime();
            if (comm.rank() == 0) {
                for (long i = 0; i < words; i++) buf.setAtIndex(ValueLayout.JAVA_LONG, i, word(i));
                for (long i = words * 8; i < SIZE; i++) buf.set(ValueLayout.JAVA_BYTE, i, (byte) i);
                t0 = System.nanoTime();
                comm.send(buf, 1, 1);
                System.out.printf("rank 0 sent %d bytes in %.2f s%n", SIZE, (System.nanoTime() - t0) / 1e9);
            } else {
                Status st = comm.recv(buf, 0, 1);
                double secs = (System.nanoTime() - t0) / 1e9;
                if (st.bytes() != SIZE) throw new AssertionError("received " + st.bytes() + " bytes, expected " + SIZE);
                for (long i = 0; i < words; i++) {
                    long v = buf.getAtIndex(ValueLayout.JAVA_LONG, i);
                    if (v != word(i)) throw new AssertionError("word " + i + " is " + v + ", expected " + word(i));
                }
                for (long i = words * 8; i < SIZE; i++) {
                    if (buf.get(ValueLayout.JAVA_BYTE, i) != (byte) i) throw new AssertionError("tail byte " + i);
                }
                System.out.printf("rank 1 received and checked %d bytes (%.2f s transfer)%n", SIZE, secs);
            }
            comm.send(new byte[1], 1 - comm.rank(), 2);
            comm.recv(new byte[1], 1 - comm.rank(), 2);
        }
    }
}
