package io.hcomm4j.cli;

import io.hcomm4j.TlsConfig;
import io.hcomm4j.security.JobKeys;
import io.hcomm4j.security.TlsContext;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The TLS of a job {@code hcomm launch} starts ({@code --tls} or {@code HCOMM_TLS=1}): none; the stores the
 * {@code HCOMM_TLS_*} variables name; or, on one node without them, a key pair made for the job in
 * {@code <job file folder>/tls-<launcher pid>} (0700; removed when the job ends), where {@code hcomm status} finds it.
 */
final class JobTls implements AutoCloseable {
    private static final String[] TLS_VARIABLES = {"HCOMM_TLS_KEYSTORE", "HCOMM_TLS_KEYSTORE_PASSWORD",
        "HCOMM_TLS_KEYSTORE_PASSWORD_FILE", "HCOMM_TLS_TRUSTSTORE", "HCOMM_TLS_TRUSTSTORE_PASSWORD", "HCOMM_TLS_TRUSTSTORE_PASSWORD_FILE"};

    private final TlsConfig config;
    private final Map<String, String> rankVariables;
    private final Path made;
    private final String description;
    private final Thread removeAtExit;

    private JobTls(TlsConfig config, Map<String, String> rankVariables, Path made, String description) {
        this.config = config;
        this.rankVariables = Map.copyOf(rankVariables);
        this.made = made;
        this.description = description;
        this.removeAtExit = made == null ? null : Thread.ofPlatform().name("hcomm-tls-keys").unstarted(this::remove);
        if (removeAtExit != null) Runtime.getRuntime().addShutdownHook(removeAtExit);
    }

    /**
     * @param flag    {@code --tls}
     * @param env     the launcher's environment
     * @param nnodes  the job's nodes (several need the user's stores: the launcher of each node cannot make shared trust)
     * @param jobDir  the folder of the job files (private to the user)
     * @throws IllegalArgumentException a TLS setting is bad, or several nodes and no key store
     * @throws IOException              the keys could not be made
     */
    static JobTls choose(boolean flag, Map<String, String> env, int nnodes, Path jobDir) throws IOException {
        if (!flag && !TlsConfig.requested(env)) {
            return new JobTls(null, Map.of(), null, "off");
        }
        Map<String, String> vars = new LinkedHashMap<>();
        vars.put("HCOMM_TLS", "1");
        String keyStore = env.get("HCOMM_TLS_KEYSTORE");
        if (keyStore != null && !keyStore.isBlank()) {
            for (String v : TLS_VARIABLES) if (env.get(v) != null) vars.put(v, env.get(v));
            TlsConfig c = TlsConfig.fromVariables(vars).orElseThrow();
            TlsContext.of(c); // a bad store fails here, once, not in every rank
            return new JobTls(c, vars, null, "key store " + c.keyStore() + ", trust store " + c.trustStore());
        }
        if (nnodes > 1) {
            throw new IllegalArgumentException("--tls on several nodes needs the same trust on every node: set HCOMM_TLS_KEYSTORE"
                    + " and HCOMM_TLS_KEYSTORE_PASSWORD_FILE to a PKCS#12 file (e.g. keytool -genkeypair -keyalg EC"
                    + " -storetype PKCS12 -keystore job.p12, copied to every node), and HCOMM_TLS_TRUSTSTORE if the"
                    + " certificates differ per node (docs/configuration.md, \"TLS\")");
        }
        JobFile.ensurePrivateDirectory(jobDir);
        Path dir = keysOf(jobDir, ProcessHandle.current().pid());
        TlsConfig c = JobKeys.create(dir);
        for (String v : TLS_VARIABLES) vars.put(v, ""); // none of this shell's: blank is unset for the ranks
        vars.put("HCOMM_TLS_KEYSTORE", c.keyStore().toString());
        vars.put("HCOMM_TLS_KEYSTORE_PASSWORD_FILE", dir.resolve(JobKeys.PASSWORD_FILE).toString());
        return new JobTls(c, vars, dir, "the job's own key pair in " + dir + ", removed when the job ends");
    }

    /** Where the launcher with pid {@code pid} keeps the keys it made. */
    static Path keysOf(Path jobDir, long pid) {
        return jobDir.resolve("tls-" + pid);
    }

    /** The keys a launcher made for its job ({@code hcomm status} connects with them), if it made any. */
    static Optional<TlsConfig> madeFor(Path jobDir, long pid) {
        Path dir = keysOf(jobDir, pid);
        Path store = dir.resolve(JobKeys.KEY_STORE);
        Path password = dir.resolve(JobKeys.PASSWORD_FILE);
        if (!Files.isRegularFile(store) || !Files.isRegularFile(password)) return Optional.empty();
        try {
            String p = Files.readString(password, StandardCharsets.UTF_8).strip();
            return Optional.of(TlsConfig.of(store, p.toCharArray()));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The TLS config, or null when off. */
    TlsConfig config() {
        return config;
    }

    /** What every rank gets in its environment for it. */
    Map<String, String> rankVariables() {
        return rankVariables;
    }

    String describe() {
        return description;
    }

    @Override
    public void close() {
        if (made == null) return;
        remove();
        try {
            Runtime.getRuntime().removeShutdownHook(removeAtExit);
        } catch (IllegalStateException exiting) {
            // the hook runs (or ran) anyway
        }
    }

    private void remove() {
        try (Stream<Path> files = Files.walk(made)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // gone already, or left for the user: it is in the user's own 0700 folder
        }
    }
}
