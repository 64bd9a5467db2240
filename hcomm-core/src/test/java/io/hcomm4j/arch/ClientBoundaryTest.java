package io.hcomm4j.arch;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The modules built on hcomm-core use its public API ({@code io.hcomm4j}) and, where a tool needs more, only the
 * internal packages listed here. The modules run on the class path (the shaded {@code hcomm} jar, the examples
 * started by scripts), where hcomm-core's module-info exports nothing, so this test is what holds the line: it reads
 * their main sources and fails on any other {@code io.hcomm4j.<package>} named in an import or a fully-qualified name.
 */
class ClientBoundaryTest {
    /** Internal packages each module may use, and why (the lead reviews additions). */
    private static final Map<String, Set<String>> ALLOWED = Map.of(
            // `hcomm store` serves a TcpStoreServer, `hcomm status` reads the store and the job's state, launches sign,
            // `hcomm tune` switches the tuner's algorithm while it measures and writes its table
            "hcomm-cli", Set.of("bootstrap", "monitor", "security", "algo"),
            // benchmarks of the reduction kernels themselves
            "hcomm-bench", Set.of("kernel"),
            // the data-parallel layer is an application of the API, as PyTorch DDP is of torch.distributed
            "hcomm-ddp", Set.of(),
            // Spark's barrier stages as communicators: the API only (the driver's store is the API's StoreServer)
            "hcomm-spark", Set.of(),
            // Micrometer meters read from Communicator.metrics() and health(): the API only
            "hcomm-micrometer", Set.of(),
            // the examples show what an application writes: the API only, and the data-parallel layer (module
            // hcomm-ddp, a library of its own and not a package of hcomm-core)
            "hcomm-examples", Set.of("ddp"));
    /** {@code io.hcomm4j.<lower-case package>.} in code; the module's own package is excluded below. */
    private static final Pattern REFERENCE = Pattern.compile("\\bio\\.hcomm4j\\.([a-z][a-z0-9_]*)\\.");
    private static final Pattern OWN = Pattern.compile("^package io\\.hcomm4j\\.([a-z0-9_]+)", Pattern.MULTILINE);

    @Test
    void modulesUseOnlyTheApiAndTheirAllowedPackages() {
        List<String> violations = new ArrayList<>();
        for (Map.Entry<String, Set<String>> e : ALLOWED.entrySet()) {
            Path sources = Path.of("..", e.getKey(), "src", "main", "java");
            assertThat(sources).as("sources of %s (the test runs in hcomm-core)", e.getKey()).isDirectory();
            for (Path file : javaFiles(sources)) violations.addAll(violations(file, e.getValue()));
        }
        assertThat(violations).as("references to hcomm-core packages outside the API and the allow-list").isEmpty();
    }

    /** A rule that cannot fail proves nothing: it must catch an internal import. */
    @Test
    void catchesAnInternalReference() throws IOException {
        Path file = Files.createTempFile("Sample", ".java");
        try {
            Files.writeString(file, "package io.hcomm4j.examples;\nimport io.hcomm4j.comm.Session;\nclass Sample {}\n");
            assertThat(violations(file, Set.of())).hasSize(1).first().asString().contains("io.hcomm4j.comm");
        } finally {
            Files.delete(file);
        }
    }

    private static List<String> violations(Path file, Set<String> allowed) {
        String text = read(file);
        Matcher own = OWN.matcher(text);
        String self = own.find() ? own.group(1) : "";
        List<String> out = new ArrayList<>();
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.startsWith("*") || line.startsWith("/*") || line.startsWith("//")) continue; // prose, not code
            Matcher m = REFERENCE.matcher(line);
            while (m.find()) {
                String pkg = m.group(1);
                if (!pkg.equals(self) && !allowed.contains(pkg)) out.add(file + ":" + (i + 1) + ": io.hcomm4j." + pkg);
            }
        }
        return out;
    }

    private static List<Path> javaFiles(Path root) {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(p -> p.toString().endsWith(".java")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
