package io.hcomm4j.testing;

import io.hcomm4j.CommConfig;
import io.hcomm4j.TransferConfig;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/** Helpers of the transfer engine tests: configs, and byte patterns that every check compares byte for byte. */
public final class Engines {
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    private Engines() {
    }

    /** An engine named {@code name} on the store at 127.0.0.1:{@code port} (secret test-job-secret-0001), over {@code transport}. */
    public static TransferConfig config(String name, int port, String transport, String shmDir) {
        CommConfig.Builder c = CommConfig.builder().initMethod("tcp://127.0.0.1:" + port).secret("test-job-secret-0001")
                .timeout(Duration.ofSeconds(60)).initTimeout(Duration.ofSeconds(60))
                .transport(transport.equals("tcp") ? CommConfig.Transport.TCP : CommConfig.Transport.AUTO);
        if (shmDir != null) c.shmDir(shmDir);
        return TransferConfig.builder().name(name).comm(c.build()).build();
    }

    /**
     * Starts a {@link TransferWorker} JVM as engine {@code name} on the store at 127.0.0.1:{@code port}, its output in
     * {@code dir/<name>.log}; its standard input is a pipe (closing it ends a {@code serve}).
     */
    public static Process startWorker(Path dir, String name, int port, String transport, String shmDir, String... args)
            throws IOException {
        ProcessBuilder pb = new ProcessBuilder(Ranks.rankCommand(TransferWorker.class, args));
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("HCOMM_") || k.equals("RANK") || k.equals("WORLD_SIZE") || k.startsWith("MASTER_"));
        env.put("HCOMM_INIT_METHOD", "tcp://127.0.0.1:" + port);
        env.put("HCOMM_SECRET", "test-job-secret-0001");
        env.put("HCOMM_TIMEOUT", "60s");
        env.put("HCOMM_TRANSPORT", transport);
        env.put("HCOMM_SHM_DIR", shmDir);
        env.put("HCOMM_ENGINE_NAME", name);
        pb.redirectErrorStream(true).redirectOutput(dir.resolve(name + ".log").toFile());
        return pb.start();
    }

    /** The 8 bytes at word {@code w} of pattern {@code seed}. */
    public static long word(long seed, long w) {
        long x = (w + 1) * 0x9E3779B97F4A7C15L ^ (seed + 1) * 0xBF58476D1CE4E5B9L;
        x ^= x >>> 31;
        x *= 0x94D049BB133111EBL;
        return x ^ (x >>> 29);
    }

    /** Byte {@code i} of pattern {@code seed} (byte i of the little-endian word i / 8). */
    public static byte at(long seed, long i) {
        return (byte) (word(seed, i >>> 3) >>> ((i & 7) * 8));
    }

    /** Fills {@code s[off, off + len)} with pattern {@code seed} at pattern positions {@code from, from + len}. */
    public static void fill(MemorySegment s, long off, long len, long seed, long from) {
        long i = 0;
        while (i < len && ((from + i) & 7) != 0) {
            s.set(ValueLayout.JAVA_BYTE, off + i, at(seed, from + i));
            i++;
        }
        for (; i + 8 <= len; i += 8) s.set(LONG, off + i, word(seed, (from + i) >>> 3));
        for (; i < len; i++) s.set(ValueLayout.JAVA_BYTE, off + i, at(seed, from + i));
    }

    /**
     * The first index in {@code [0, len)} where {@code s[off + i]} differs from pattern {@code seed} at {@code from + i},
     * or -1: every byte is checked.
     */
    public static long mismatch(MemorySegment s, long off, long len, long seed, long from) {
        long i = 0;
        while (i < len && ((from + i) & 7) != 0) {
            if (s.get(ValueLayout.JAVA_BYTE, off + i) != at(seed, from + i)) return i;
            i++;
        }
        for (; i + 8 <= len; i += 8) {
            if (s.get(LONG, off + i) != word(seed, (from + i) >>> 3)) {
                for (long j = i; j < i + 8; j++) if (s.get(ValueLayout.JAVA_BYTE, off + j) != at(seed, from + j)) return j;
            }
        }
        for (; i < len; i++) if (s.get(ValueLayout.JAVA_BYTE, off + i) != at(seed, from + i)) return i;
        return -1;
    }
}
