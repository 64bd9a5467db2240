package io.hcomm4j.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link FileStore} in a temporary directory: the store contract plus file-level behaviour. */
class FileStoreTest extends StoreContractTest {
    @TempDir
    Path dir;

    @Override
    protected Store connect() {
        return new FileStore(dir);
    }

    @Test
    void createsAMissingDirectory() {
        Path nested = dir.resolve("a/b/c");
        try (FileStore s = new FileStore(nested)) {
            s.set("k", new byte[] {1});
            assertThat(Files.isDirectory(nested)).isTrue();
            assertThat(s.directory()).isEqualTo(nested);
        }
    }

    /** A directory it creates, missing parents too, is rwx------. */
    @Test
    void createsItsDirectoryForItsUserOnly() throws IOException {
        Path nested = dir.resolve("p/q");
        try (FileStore s = new FileStore(nested)) {
            s.set("k", new byte[] {1});
        }
        for (Path p : List.of(dir.resolve("p"), nested)) {
            assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(p))).as(p.toString())
                    .isEqualTo("rwx------");
        }
    }

    /** A directory of another user is refused, naming both users (needs root to give it away; skipped otherwise). */
    @Test
    void refusesADirectoryOfAnotherUser() throws IOException {
        Path theirs = Files.createDirectory(dir.resolve("theirs"));
        var lookup = theirs.getFileSystem().getUserPrincipalLookupService();
        java.nio.file.attribute.UserPrincipal nobody;
        try {
            nobody = lookup.lookupPrincipalByName("nobody");
            Files.setOwner(theirs, nobody);
        } catch (IOException e) {
            org.junit.jupiter.api.Assumptions.abort("cannot give a directory to user nobody here: " + e);
            return;
        }
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new FileStore(theirs))
                .isInstanceOf(io.hcomm4j.HcommException.class)
                .hasMessageContaining("belongs to user nobody, not to " + System.getProperty("user.name"))
                .hasMessageContaining("use a directory of your own");
        try (Stream<Path> files = Files.list(theirs)) {
            assertThat(files).as("nothing written into it").isEmpty();
        }
    }

    @Test
    void fileNamesStaySafeAndLeaveNoTemporaries() throws IOException {
        FileStore s = (FileStore) store();
        assertThat(s.file("rank0.addr").getFileName().toString()).isEqualTo("k-rank0.addr");
        assertThat(s.file("A/..").getFileName().toString()).isEqualTo("k-%41%2F..");
        assertThat(s.file("x".repeat(4096)).getFileName().toString()).startsWith("h-").hasSize(66);
        for (String k : List.of("../escape", "/abs", "a\\b", "nul\0byte")) {
            s.set(k, new byte[] {1});
            assertThat(s.file(k).getParent()).isEqualTo(s.directory());
        }
        s.add("n", 1);
        s.compareAndSet("n", "1".getBytes(UTF_8), "2".getBytes(UTF_8));
        try (Stream<Path> files = Files.list(s.directory())) {
            assertThat(files.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith(".tmp-"));
        }
        assertThat(Files.exists(dir.getParent().resolve("escape"))).isFalse();
    }

    /** Two JVMs adding to one counter through the file lock: the lock must hold across processes, not just threads. */
    @Test
    void addIsAtomicAcrossProcesses() throws Exception {
        int procs = 2;
        int adds = 150;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> ps = new ArrayList<>();
        try {
            for (int i = 0; i < procs; i++) {
                ps.add(new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "-Xshare:auto",
                        "-XX:TieredStopAtLevel=1", FileStoreAdder.class.getName(), dir.toString(), "procs",
                        Integer.toString(adds))
                        .redirectErrorStream(true)
                        .redirectOutput(dir.resolve("adder-" + i + ".log").toFile())
                        .start());
            }
            // Meanwhile this JVM adds too, through its own lock queue.
            Store s = store();
            for (int j = 0; j < adds; j++) s.add("procs", 1);
            for (int i = 0; i < procs; i++) {
                Process p = ps.get(i);
                assertThat(p.waitFor(40, TimeUnit.SECONDS)).as("adder %d finished", i).isTrue();
                assertThat(p.exitValue()).as("adder %d exit; log: %s", i,
                        Files.readString(dir.resolve("adder-" + i + ".log"))).isZero();
            }
            assertThat(s.tryGet("procs")).isEqualTo(Integer.toString((procs + 1) * adds).getBytes(UTF_8));
        } finally {
            for (Process p : ps) p.destroyForcibly();
        }
    }

    /** Child process of {@link #addIsAtomicAcrossProcesses()}. */
    static final class FileStoreAdder {
        public static void main(String[] args) {
            try (FileStore s = new FileStore(new File(args[0]).toPath())) {
                int n = Integer.parseInt(args[2]);
                for (int i = 0; i < n; i++) s.add(args[1], 1);
            }
        }
    }
}
