package io.hcomm4j.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A private directory under /dev/shm for each test ({@code HCOMM_SHM_DIR} of its ranks), removed after it, so that a
 * test can check that its job left no shared-memory file behind. Use as
 * {@code @RegisterExtension final ShmDir shm = new ShmDir("hcomm-grow-test-");}.
 */
public final class ShmDir implements BeforeEachCallback, AfterEachCallback {
    private final String prefix;
    private Path path;

    public ShmDir(String prefix) {
        this.prefix = prefix;
    }

    /** The directory of the running test. */
    public Path path() {
        return path;
    }

    /** Asserts that no file is left in it. */
    public void assertEmpty() {
        try (Stream<Path> s = Files.list(path)) {
            assertThat(s.toList()).as("files left in %s", path).isEmpty();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) throws IOException {
        path = Files.createTempDirectory(Path.of("/dev/shm"), prefix);
    }

    @Override
    public void afterEach(ExtensionContext context) throws IOException {
        try (Stream<Path> s = Files.walk(path)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
