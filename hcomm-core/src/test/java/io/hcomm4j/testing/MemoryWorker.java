package io.hcomm4j.testing;

import io.hcomm4j.Communicator;
import io.hcomm4j.Hcomm;
import io.hcomm4j.MemoryStats;
import io.hcomm4j.RegisteredBuffer;
import io.hcomm4j.Status;
import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.memory.Registration;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One rank of the registered-memory test job (2 JVMs, default /dev/shm): rank 0 allocates from {@code comm.memory()},
 * fills the buffer and sends its registration (file, offset, length); rank 1 maps the range by name, checks every
 * byte and writes new ones, which rank 0 then finds in its buffer. Then the buffer travels through the transport into
 * a pooled buffer of rank 1. After {@code Hcomm.close()} rank 0's file is gone. A failed check throws (exit non-zero).
 */
public final class MemoryWorker {
    private MemoryWorker() {
    }

    private static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, MemoryPeer.pattern(i, seed));
    }

    private static void check(MemorySegment s, int seed, String what) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != MemoryPeer.pattern(i, seed)) throw new AssertionError(what + ": byte " + i);
        }
    }

    public static void main(String[] args) throws Exception {
        long n = (1 << 20) + 77;
        Path file = null;
        Hcomm hcomm = Hcomm.init();
        try (hcomm) {
            Communicator comm = hcomm.world();
            MemoryPool pool = (MemoryPool) comm.memory(); // white-box: stats and lookup are not API
            if (pool != hcomm.memory()) throw new AssertionError("the world communicator has another pool than its session");
            int rank = comm.rank();
            if (rank == 0) {
                try (RegisteredBuffer b = pool.allocate(n)) {
                    fill(b.segment(), 21);
                    Registration r = pool.lookup(b.segment()).orElseThrow();
                    file = r.file();
                    comm.send((r.file() + " " + r.offset() + " " + r.length()).getBytes(StandardCharsets.UTF_8), 1, 1);
                    comm.recv(new byte[1], 1, 2); // rank 1 has checked and rewritten it
                    check(b.segment(), 22, "rank 0 reading what rank 1 wrote through its mapping");
                    comm.send(b.segment(), 1, 3);
                }
            } else {
                byte[] msg = new byte[4096];
                Status st = comm.recv(msg, 0, 1);
                String[] f = new String(msg, 0, (int) st.bytes(), StandardCharsets.UTF_8).split(" ");
                Registration r = new Registration(Path.of(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2]));
                if (r.length() != n) throw new AssertionError("registration length " + r.length());
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment peer = r.map(arena);
                    check(peer, 21, "rank 1 reading rank 0's buffer through its own mapping");
                    fill(peer, 22);
                }
                comm.send(new byte[] {1}, 0, 2);
                try (RegisteredBuffer in = pool.allocate(n)) {
                    Status got = comm.recv(in.segment(), 0, 3);
                    if (got.bytes() != n) throw new AssertionError("received " + got.bytes());
                    check(in.segment(), 22, "rank 1's pooled receive buffer");
                }
            }
            MemoryStats s = pool.stats();
            if (s.buffersInUse() != 0 || s.allocations() != 1 || s.mappings() != 1 || s.leaks() != 0) {
                throw new AssertionError("stats " + s);
            }
            comm.barrier();
        }
        if (!hcomm.memory().isClosed()) throw new AssertionError("pool not closed with the session");
        if (file != null && Files.exists(file)) throw new AssertionError(file + " still exists after Hcomm.close()");
        System.out.println("memory ok " + (file != null ? "unlinked " + file.getFileName() : "mapped and received"));
    }
}
