package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Many threads of each rank call blocking and async ops at once, each on its own tag, with sizes across
 * the eager/rendezvous boundary, plus streams: the poll token passes between them and every message lands
 * intact in the right place.
 */
class ConcurrentCallersTest {
    @Test
    void threadsOfEachRankTalkAtOnce() throws Exception {
        int threads = 6, rounds = 60;
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        Ranks.runThreads(2, Duration.ofMinutes(2), h -> {
            Communicator c = h.world();
            int peer = 1 - c.rank();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int tag = t;
                workers.add(Thread.ofPlatform().start(() -> {
                    try (Arena arena = Arena.ofShared(); Stream stream = c.newStream()) {
                        Random rnd = new Random(1000 + tag); // both ranks draw the same sizes per tag
                        for (int round = 0; round < rounds; round++) {
                            int size = rnd.nextInt(5) == 0 ? 100_000 + rnd.nextInt(100_000) : rnd.nextInt(5000);
                            MemorySegment out = arena.allocate(Math.max(1, size)).asSlice(0, size);
                            MemorySegment in = arena.allocate(size + 8);
                            for (int i = 0; i < size; i++) out.set(ValueLayout.JAVA_BYTE, i, (byte) (c.rank() * 7 + tag * 13 + round + i));
                            Status st;
                            if (round % 3 == 2) {
                                // one stream runs its ops in order: rank 0 sends first, rank 1 receives first
                                CommFuture<Status> r;
                                if (c.rank() == 0) {
                                    stream.send(out, peer, tag);
                                    r = stream.recv(in, peer, tag);
                                } else {
                                    r = stream.recv(in, peer, tag);
                                    stream.send(out, peer, tag);
                                }
                                stream.synchronize();
                                st = r.join();
                            } else {
                                CommFuture<Status> r = c.recvAsync(in, peer, tag);
                                if (round % 3 == 0) c.send(out, peer, tag);
                                else c.sendAsync(out, peer, tag).await();
                                st = r.await();
                            }
                            assertThat(st.bytes()).isEqualTo(size);
                            assertThat(st.tag()).isEqualTo(tag);
                            for (int i = 0; i < size; i++) {
                                byte want = (byte) (peer * 7 + tag * 13 + round + i);
                                if (in.get(ValueLayout.JAVA_BYTE, i) != want) {
                                    throw new AssertionError("tag " + tag + " round " + round + " byte " + i);
                                }
                            }
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }));
            }
            for (Thread w : workers) {
                try {
                    w.join();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }
        });
        assertThat(errors).isEmpty();
    }
}
