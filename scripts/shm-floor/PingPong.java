import java.lang.foreign.*;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.*;

/** Raw same-host ping-pong floors: mode "two" = tail line + data line per direction; "one" = stamp in the data line. */
public class PingPong {
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    public static void main(String[] a) throws Exception {
        String mode = a[0]; int rank = Integer.parseInt(a[1]); int iters = Integer.parseInt(a[2]);
        Path p = Path.of("/dev/shm/pp-" + mode);
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, 1 << 16, Arena.global());
            // direction d (0: 0->1, 1: 1->0): tail at d*8192, data at d*8192+4096
            long outBase = rank * 8192L, inBase = (1 - rank) * 8192L;
            long seqOut = 0, seqIn = 0;
            for (int round = 0; round < 5; round++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < iters; i++) {
                    if (rank == 0) { seqOut = send(m, mode, outBase, seqOut, i); seqIn = recv(m, mode, inBase, seqIn); }
                    else { seqIn = recv(m, mode, inBase, seqIn); seqOut = send(m, mode, outBase, seqOut, i); }
                }
                long t1 = System.nanoTime();
                if (rank == 0) System.out.printf("%s round %d: %.3f us one-way%n", mode, round, (t1 - t0) / 2.0 / iters / 1000);
            }
        }
    }
    static long send(MemorySegment m, String mode, long base, long seq, int v) {
        long s = seq + 1;
        if (mode.equals("two")) {
            long slot = base + 4096 + (s & 63) * 64;
            m.set(ValueLayout.JAVA_LONG, slot, v);
            m.set(ValueLayout.JAVA_LONG, slot + 8, v);
            LONG.setRelease(m, base, s);
            VarHandle.fullFence();
        } else {
            long slot = base + 4096 + (s & 63) * 64;
            m.set(ValueLayout.JAVA_LONG, slot + 8, v);
            LONG.setRelease(m, slot, s);
            VarHandle.fullFence();
        }
        return s;
    }
    static long recv(MemorySegment m, String mode, long base, long seq) {
        long s = seq + 1;
        long slot = base + 4096 + (s & 63) * 64;
        if (mode.equals("two")) {
            while ((long) LONG.getAcquire(m, base) < s) Thread.onSpinWait();
            m.get(ValueLayout.JAVA_LONG, slot + 8);
        } else {
            while ((long) LONG.getAcquire(m, slot) != s) Thread.onSpinWait();
            m.get(ValueLayout.JAVA_LONG, slot + 8);
        }
        return s;
    }
}
