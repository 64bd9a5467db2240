package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.memory.MemoryPool;
import io.hcomm4j.testing.MemoryWorker;
import io.hcomm4j.testing.Ranks;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** {@code comm.memory()}: one pool per session, shared by its communicators, closed with it. */
class RegisteredMemoryTest {
    private static List<String> list(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void everyCommunicatorOfASessionSharesItsPoolAndClosingTheSessionUnlinksTheFiles() throws Exception {
        Path dir = Files.createDirectory(Path.of("/dev/shm", "hcomm-mempool-test-session-" + ProcessHandle.current().pid()
                + "-" + System.nanoTime()));
        try {
            Hcomm hcomm = Hcomm.init(Ranks.threadConfig(0, 1, Ranks.freePort()).shmDir(dir.toString()).memPoolMax(64L << 20).build());
            MemoryPool pool;
            try (hcomm) {
                Communicator world = hcomm.world();
                pool = (MemoryPool) world.memory();
                assertThat(pool).isSameAs(hcomm.memory());
                assertThat(pool.options().directory()).isEqualTo(dir);
                assertThat(pool.options().maxBytes()).isEqualTo(64L << 20);
                try (Communicator half = world.split(0, 0); Communicator copy = world.dup()) {
                    assertThat(half.memory()).isSameAs(pool);
                    assertThat(copy.memory()).isSameAs(pool);
                }
                RegisteredBuffer send = pool.allocate(DataType.FLOAT32, 1000);
                RegisteredBuffer recv = world.memory().allocate(DataType.FLOAT32, 1000);
                for (int i = 0; i < 1000; i++) send.segment().setAtIndex(ValueLayout.JAVA_FLOAT, i, i * 0.5f);
                // pooled segments go through the communicator like any other off-heap segment
                world.allReduce(send.segment(), recv.segment(), 1000, DataType.FLOAT32, ReduceOp.SUM);
                for (int i = 0; i < 1000; i++) assertThat(recv.segment().getAtIndex(ValueLayout.JAVA_FLOAT, i)).isEqualTo(i * 0.5f);
                world.send(send.segment(), 0, 7);
                MemorySegment in = recv.segment();
                in.fill((byte) 0);
                assertThat(world.recv(in, 0, 7).bytes()).isEqualTo(4000);
                assertThat(in.getAtIndex(ValueLayout.JAVA_FLOAT, 999)).isEqualTo(499.5f);
                assertThat(list(dir)).hasSize(1).allMatch(n -> n.startsWith("hcomm4j-")); // both in one chunk of the 4 KiB class
                assertThat(pool.stats().buffersInUse()).isEqualTo(2);
                send.close();
                recv.close();
            }
            assertThat(pool.isClosed()).isTrue();
            assertThat(list(dir)).isEmpty();
            assertThat(pool.stats().mappings()).isZero();
            assertThat(pool.stats().mappedBytes()).isZero();
            assertThatThrownBy(() -> hcomm.world().memory().allocate(1)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("the memory pool is closed");
        } finally {
            try (Stream<Path> s = Files.list(dir)) {
                for (Path p : s.toList()) Files.deleteIfExists(p);
            }
            Files.deleteIfExists(dir);
        }
    }

    @Test
    void aPeerProcessMapsARanksPooledBufferByNameAndPooledBuffersTravelThroughTheTransport() throws Exception {
        List<Ranks.Outcome> out = Ranks.run(2, MemoryWorker.class, Duration.ofMinutes(2));
        assertThat(out.get(0).output()).containsPattern("memory ok unlinked hcomm4j-\\d+-\\d+-\\d+-\\d+");
        assertThat(out.get(1).output()).contains("memory ok mapped and received");
    }
}
