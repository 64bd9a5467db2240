package io.hcomm4j.testing;

import io.hcomm4j.memory.Buffer;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.memory.Registration;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

/**
 * A second process for the memory pool's tests.
 * <ul>
 * <li>{@code map <file> <offset> <length> <seed> <newSeed>}: maps the range by file name, checks every byte against
 * the pattern of {@code seed}, then writes the pattern of {@code newSeed} over it; prints {@code mapped ok}.</li>
 * <li>{@code hold <dir>}: opens a pool in {@code dir}, allocates two buffers, prints {@code holding <files>} and waits
 * to be killed.</li>
 * </ul>
 */
public final class MemoryPeer {
    private MemoryPeer() {
    }

    /** The test pattern: byte {@code i} of a buffer filled with {@code seed}. */
    public static byte pattern(long i, int seed) {
        return (byte) (i * 31 + seed + (i >>> 13));
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "map" -> {
                Registration r = new Registration(Path.of(args[1]), Long.parseLong(args[2]), Long.parseLong(args[3]));
                int seed = Integer.parseInt(args[4]);
                int newSeed = Integer.parseInt(args[5]);
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment s = r.map(arena);
                    for (long i = 0; i < s.byteSize(); i++) {
                        if (s.get(ValueLayout.JAVA_BYTE, i) != pattern(i, seed)) {
                            System.out.println("mismatch at byte " + i);
                            System.exit(3);
                        }
                    }
                    for (long i = 0; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, pattern(i, newSeed));
                }
                System.out.println("mapped ok " + r.length());
            }
            case "hold" -> {
                MemoryPool pool = MemoryPool.open(new MemoryPool.Options(Path.of(args[1]), 1L << 30, false));
                Buffer small = pool.allocate(100);
                Buffer large = pool.allocate(1 << 20);
                System.out.println("holding " + pool.lookup(small.segment()).orElseThrow().fileName() + " "
                        + pool.lookup(large.segment()).orElseThrow().fileName());
                System.out.flush();
                Thread.sleep(600_000);
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
    }
}
