package io.hcomm4j.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.MemoryPeer;
import io.hcomm4j.testing.Ranks;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The pool against a second, real JVM process on the host. */
class MemoryPoolProcessTest {
    private static Process start(String... args) throws Exception {
        return new ProcessBuilder(Ranks.javaCommand(MemoryPeer.class, args)).redirectErrorStream(true).start();
    }

    @Test
    void anotherProcessMapsABufferByFileNameAndBothSeeEachOthersBytes() throws Exception {
        try (ShmDir dir = new ShmDir(); MemoryPool pool = MemoryPool.open(dir.options(1L << 30, false))) {
            Buffer buf = pool.allocate((1 << 20) + 123); // a large class: its own file
            Buffer small = pool.allocate(3000);
            pool.allocate(3000).close();
            Buffer small2 = pool.allocate(3000); // offset 4096 in the 4 KiB chunk
            MemorySegment s = buf.segment();
            for (long i = 0; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, MemoryPeer.pattern(i, 5));
            MemorySegment s2 = small2.segment();
            for (long i = 0; i < s2.byteSize(); i++) s2.set(ValueLayout.JAVA_BYTE, i, MemoryPeer.pattern(i, 9));
            Registration r = pool.lookup(s).orElseThrow();
            Registration r2 = pool.lookup(s2).orElseThrow();
            assertThat(r2.offset()).isEqualTo(4096);

            Process p = start("map", r.file().toString(), String.valueOf(r.offset()), String.valueOf(r.length()), "5", "6");
            Process p2 = start("map", r2.file().toString(), String.valueOf(r2.offset()), String.valueOf(r2.length()), "9", "10");
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
            assertThat(p2.waitFor(120, TimeUnit.SECONDS)).isTrue();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            String out2 = new String(p2.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.exitValue()).as(out).isZero();
            assertThat(p2.exitValue()).as(out2).isZero();
            assertThat(out).contains("mapped ok " + ((1 << 20) + 123));
            assertThat(out2).contains("mapped ok 3000");
            // what the other process wrote is in our buffers, every byte
            for (long i = 0; i < s.byteSize(); i++) {
                if (s.get(ValueLayout.JAVA_BYTE, i) != MemoryPeer.pattern(i, 6)) throw new AssertionError("byte " + i);
            }
            for (long i = 0; i < s2.byteSize(); i++) {
                if (s2.get(ValueLayout.JAVA_BYTE, i) != MemoryPeer.pattern(i, 10)) throw new AssertionError("small byte " + i);
            }
            assertThat(small.segment().get(ValueLayout.JAVA_BYTE, 0)).isZero(); // the neighbour in the chunk untouched
            for (Buffer b : List.of(buf, small, small2)) b.close();
        }
    }

    @Test
    void filesOfAKilledProcessAreRemovedWhenTheNextPoolOpens() throws Exception {
        try (ShmDir dir = new ShmDir()) {
            MemoryPool mine = MemoryPool.open(dir.options(1L << 30, false));
            Buffer kept = mine.allocate(100);
            String myFile = mine.lookup(kept.segment()).orElseThrow().fileName();
            Process p = start("hold", dir.path.toString());
            String line;
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                while ((line = r.readLine()) != null && !line.startsWith("holding ")) {
                    // JVM warnings
                }
                assertThat(line).as("the peer's output").isNotNull();
                String[] files = line.substring("holding ".length()).split(" ");
                assertThat(files).hasSize(2).allMatch(f -> f.contains("-" + p.pid() + "-"));
                assertThat(dir.list()).containsExactlyInAnyOrder(myFile, files[0], files[1]);

                p.destroyForcibly(); // SIGKILL: no chance to unlink
                assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
                assertThat(dir.list()).containsExactlyInAnyOrder(myFile, files[0], files[1]);
            } finally {
                p.destroyForcibly();
            }
            MemoryPool next = MemoryPool.open(dir.options(1L << 30, false));
            assertThat(dir.list()).containsExactly(myFile); // ours is alive: kept
            kept.close();
            mine.close();
            next.close();
            assertThat(dir.list()).isEmpty();
        }
    }
}
