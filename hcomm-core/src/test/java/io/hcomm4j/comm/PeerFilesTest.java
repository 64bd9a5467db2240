package io.hcomm4j.comm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.memory.SharedFiles;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * {@link PeerFiles}: a peer's file is mapped once and kept; one its owner has unlinked since (a dropped adopted buffer)
 * is unmapped when the next new file is mapped, and one still linked stays mapped, with the bytes its owner wrote.
 */
class PeerFilesTest {
    @Test
    void filesTheOwnerUnlinkedAreUnmappedAtTheNextNewOne() throws IOException {
        Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "hcomm-peerfiles-test-");
        String prefix = SharedFiles.ownPrefix();
        try (Arena owner = Arena.ofShared()) {
            long[] seqs = new long[3];
            MemorySegment[] mine = new MemorySegment[3];
            for (int i = 0; i < 3; i++) {
                String name = SharedFiles.newName();
                seqs[i] = SharedFiles.sequence(name);
                mine[i] = SharedFiles.create(dir, name, 1 << 16, owner);
                mine[i].set(ValueLayout.JAVA_LONG, 8, 1000 + i);
            }
            PeerFiles files = new PeerFiles(dir, 0, 2);
            files.prefix[1] = prefix;
            files.nextOp();
            MemorySegment a = files.map(1, seqs[0]);
            MemorySegment b = files.map(1, seqs[1]);
            assertThat(a.get(ValueLayout.JAVA_LONG, 8)).isEqualTo(1000);
            assertThat(files.map(1, seqs[0])).as("mapped once, kept").isSameAs(a);
            files.nextOp();
            Files.delete(dir.resolve(prefix + seqs[0])); // the owner dropped it
            assertThat(a.get(ValueLayout.JAVA_LONG, 8)).as("still mapped until a new file comes").isEqualTo(1000);
            MemorySegment c = files.map(1, seqs[2]);
            assertThat(c.get(ValueLayout.JAVA_LONG, 8)).isEqualTo(1002);
            assertThatThrownBy(() -> a.get(ValueLayout.JAVA_LONG, 8)).as("the unlinked file is unmapped")
                    .isInstanceOf(IllegalStateException.class);
            mine[1].set(ValueLayout.JAVA_LONG, 8, 77);
            assertThat(b.get(ValueLayout.JAVA_LONG, 8)).as("a linked file stays mapped, shared").isEqualTo(77);
            files.close();
        } finally {
            try (Stream<Path> s = Files.walk(dir)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
            }
        }
    }
}
