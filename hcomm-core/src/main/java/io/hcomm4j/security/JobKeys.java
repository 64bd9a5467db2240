package io.hcomm4j.security;

import io.hcomm4j.TlsConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A job's own TLS credentials for a job on one machine ({@code hcomm launch --tls}, tests): one EC P-256 key pair with a
 * self-signed certificate in a PKCS#12 file that is key store and trust store at once, and its password in a file beside
 * it, both mode 0600 in a folder only the user can open. Every rank presents the same certificate and trusts only it, so
 * only processes that can read the file get in. Made by the JDK's {@code keytool} (the JDK has no public API that signs
 * a certificate).
 */
public final class JobKeys {
    /** The key store's file name in the folder. */
    public static final String KEY_STORE = "job.p12";
    /** The password file's name in the folder. */
    public static final String PASSWORD_FILE = "job.password";

    private JobKeys() {
    }

    /**
     * Makes the key store and password file in {@code dir} (created, 0700) and returns the config that uses them.
     *
     * @throws IOException keytool is missing or failed
     */
    public static TlsConfig create(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        Path store = dir.resolve(KEY_STORE);
        Path passwordFile = dir.resolve(PASSWORD_FILE);
        Files.deleteIfExists(store);
        String password = Auth.newSecret();
        Files.writeString(passwordFile, password + "\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(passwordFile, PosixFilePermissions.fromString("rw-------"));
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        if (!Files.isExecutable(keytool)) throw new IOException("no keytool at " + keytool + " (a full JDK has one)");
        ProcessBuilder pb = new ProcessBuilder(List.of(keytool.toString(), "-genkeypair", "-alias", "hcomm-job",
                "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=hcomm4j-job", "-validity", "30",
                "-storetype", "PKCS12", "-keystore", store.toString(), "-storepass:file", passwordFile.toString()));
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out;
        try {
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("keytool did not finish within 60 s");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while keytool ran", e);
        }
        if (p.exitValue() != 0 || !Files.exists(store)) throw new IOException("keytool failed (exit " + p.exitValue() + "): " + out);
        Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("rw-------"));
        return TlsConfig.of(store, password.toCharArray());
    }
}
