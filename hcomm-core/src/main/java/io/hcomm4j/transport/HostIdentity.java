package io.hcomm4j.transport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Who can share memory with whom: two ranks with the same host identity talk through shared-memory rings.
 *
 * <p>The identity is a hash of what two processes must have in common for that to work: the kernel (its boot id, so
 * two machines, or one machine before and after a reboot, differ even with equal host names), the host name, the
 * network namespace (containers with their own network are not "this host" for the data address either), the user (the
 * files are owner-only) and the shared-memory directory itself (its device and inode: two containers with their own
 * {@code /dev/shm} cannot open each other's files). {@code HCOMM_HOST_ID} overrides it. Even with equal identities a
 * pair falls back to TCP if one cannot map the other's file.
 *
 * <p><b>Internal:</b> used by the session at init; applications need not call it.
 */
public final class HostIdentity {
    private HostIdentity() {
    }

    /** This process's identity for files in {@code shmDir}: 16 hex digits. */
    public static String of(Path shmDir) {
        StringBuilder sb = new StringBuilder();
        sb.append("boot=").append(read("/proc/sys/kernel/random/boot_id"));
        String host = read("/proc/sys/kernel/hostname");
        if (host.isEmpty()) host = System.getenv().getOrDefault("HOSTNAME", "");
        sb.append(";host=").append(host);
        sb.append(";netns=").append(link("/proc/self/ns/net"));
        sb.append(";uid=").append(attr(Path.of("/proc/self"), "unix:uid"));
        sb.append(";shm=").append(attr(shmDir, "unix:dev")).append(':').append(attr(shmDir, "unix:ino"));
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(sb.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(d, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String read(String path) {
        try {
            return Files.readString(Path.of(path)).trim();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    private static String link(String path) {
        try {
            return Files.readSymbolicLink(Path.of(path)).toString();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    private static String attr(Path p, String name) {
        try {
            return String.valueOf(Files.getAttribute(p, name));
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
