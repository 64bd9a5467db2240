package io.hcomm4j.memory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/** A fresh directory in the real /dev/shm for one test (its name does not start with the pool's prefix). */
final class ShmDir implements AutoCloseable {
    private static final AtomicInteger COUNT = new AtomicInteger();
    final Path path;

    ShmDir() {
        try {
            path = Files.createDirectory(Path.of("/dev/shm", "hcomm-mempool-test-" + ProcessHandle.current().pid() + "-"
                    + COUNT.incrementAndGet() + "-" + System.nanoTime()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Names of the files in the directory, sorted. */
    List<String> list() {
        try (Stream<Path> s = Files.list(path)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    MemoryPool.Options options(long max, boolean debug) {
        return new MemoryPool.Options(path, max, debug);
    }

    @Override
    public void close() throws IOException {
        try (Stream<Path> s = Files.list(path)) {
            for (Path p : s.toList()) Files.deleteIfExists(p);
        }
        Files.deleteIfExists(path);
    }
}
