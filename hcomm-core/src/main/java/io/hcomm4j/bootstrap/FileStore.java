package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link Store} in a directory of a shared file system ({@code file:///path}), for clusters where ranks share a
 * file system but cannot open a port to each other before init.
 *
 * <p>Each key is one file. A write goes to a temporary file first and is then renamed over the key's file, so a
 * reader sees the old value or the new one, never a torn one. Mutations ({@code set}, {@code add},
 * {@code compareAndSet}, {@code delete}) take an exclusive lock on {@code .lock} in the directory, which makes
 * read-modify-write atomic across processes (the file system must support {@code fcntl} locks; NFSv4 does).
 * Waiting calls poll with backoff (1 ms doubling to 50 ms), so a set is seen within about 50 ms.
 *
 * <p>File names: keys made of {@code [a-z0-9._-]} keep their name, other characters are percent-encoded (upper
 * case letters too, so case-insensitive file systems cannot merge two keys), and names that would be long are
 * replaced by a SHA-256 hash. Nothing is removed on {@link #close()}: the directory belongs to the job.
 */
public final class FileStore implements Store {
    private static final String LOCK_FILE = ".lock";
    private static final String TEMP_PREFIX = ".tmp-";
    private static final int MAX_NAME = 150;
    private static final long POLL_START_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long POLL_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /**
     * {@link FileChannel#lock()} is per process, and a second lock attempt on the same file from this JVM throws
     * instead of waiting; so stores of one directory in one JVM first queue on this in-process lock.
     */
    private static final Map<Path, ReentrantLock> JVM_LOCKS = new ConcurrentHashMap<>();

    private final Path dir;
    private final Path lockFile;
    private final ReentrantLock jvmLock;
    private volatile boolean closed;

    /**
     * Opens (and creates, if missing) the store directory {@code dir}. A directory it creates is {@code rwx------}
     * (its missing parents too); an existing one must belong to this process's user, since whoever can write there
     * can join the job or change what the ranks read.
     *
     * @throws HcommException the directory cannot be created, is not a directory, or belongs to another user
     */
    public FileStore(Path dir) {
        try {
            if (!Files.isDirectory(dir)) createPrivate(dir);
            this.dir = dir.toRealPath();
            checkOwner(this.dir);
        } catch (IOException e) {
            throw new HcommException("cannot open the file store directory " + dir + ": " + e, e);
        }
        this.lockFile = this.dir.resolve(LOCK_FILE);
        this.jvmLock = JVM_LOCKS.computeIfAbsent(this.dir, d -> new ReentrantLock());
    }

    /** Creates {@code dir} and its missing parents {@code rwx------} where the file system has POSIX permissions. */
    private static void createPrivate(Path dir) throws IOException {
        if (!dir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            Files.createDirectories(dir);
            return;
        }
        Files.createDirectories(dir, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
    }

    /** Refuses a directory of another user (a file system without owners, or an unknown user name, passes). */
    private static void checkOwner(Path dir) throws IOException {
        String me = System.getProperty("user.name");
        java.nio.file.attribute.UserPrincipal mine;
        try {
            mine = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(me);
        } catch (UnsupportedOperationException | java.nio.file.attribute.UserPrincipalNotFoundException e) {
            return;
        }
        java.nio.file.attribute.UserPrincipal owner = Files.getOwner(dir);
        if (!owner.equals(mine)) {
            throw new HcommException("the file store directory " + dir + " belongs to user " + owner.getName() + ", not to " + me
                    + " (this process's user): whoever can write there can join the job or change what the ranks read; use a"
                    + " directory of your own (HCOMM_INIT_METHOD=file:///path; a missing one is created rwx------)");
        }
    }

    /** The store directory. */
    public Path directory() {
        return dir;
    }

    @Override
    public void set(String key, byte[] value) {
        Path f = file(key);
        checkValue(key, value);
        locked("set '" + key + "'", () -> {
            write(f, value);
            return null;
        });
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        Path f = file(key);
        long waitNanos = TimeUnit.MILLISECONDS.toNanos(waitMillis(timeout));
        long deadline = System.nanoTime() + waitNanos;
        long pause = POLL_START_NANOS;
        while (true) {
            byte[] v = read(f, key);
            if (v != null) return v;
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new CommTimeoutException("store get of key '" + key + "' timed out after " + human(timeout)
                        + ": no rank set it (file store " + dir + ")");
            }
            sleep(Math.min(pause, left), "get '" + key + "'");
            pause = Math.min(pause * 2, POLL_MAX_NANOS);
        }
    }

    @Override
    public byte[] tryGet(String key) {
        return read(file(key), key);
    }

    @Override
    public void await(Collection<String> keys, Duration timeout) {
        List<String> pending = new ArrayList<>(keys);
        List<Path> files = new ArrayList<>(pending.size());
        for (String k : pending) files.add(file(k));
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis(timeout));
        long pause = POLL_START_NANOS;
        while (true) {
            // A key once seen stays counted: keys are not expected to be deleted while others wait for them.
            for (int i = pending.size() - 1; i >= 0; i--) {
                checkOpen();
                if (Files.exists(files.get(i))) {
                    pending.remove(i);
                    files.remove(i);
                }
            }
            if (pending.isEmpty()) return;
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new CommTimeoutException("store await timed out after " + human(timeout) + " waiting for keys "
                        + describe(new ArrayList<>(keys)) + "; still missing: " + describe(pending)
                        + " (file store " + dir + ")");
            }
            sleep(Math.min(pause, left), "await");
            pause = Math.min(pause * 2, POLL_MAX_NANOS);
        }
    }

    @Override
    public long add(String key, long delta) {
        Path f = file(key);
        return locked("add '" + key + "'", () -> {
            long v;
            try {
                v = Math.addExact(decodeCounter(key, readRaw(f)), delta);
            } catch (ArithmeticException e) {
                throw new HcommException("add " + delta + " to store key '" + key + "' overflows a long");
            } catch (IllegalArgumentException e) {
                throw new HcommException(e.getMessage());
            }
            write(f, encodeCounter(v));
            return v;
        });
    }

    @Override
    public byte[] compareAndSet(String key, byte[] expected, byte[] desired) {
        Path f = file(key);
        if (expected != null) checkValue(key, expected);
        checkValue(key, desired);
        return locked("compareAndSet '" + key + "'", () -> {
            byte[] cur = readRaw(f);
            boolean match = expected == null ? cur == null : cur != null && Arrays.equals(cur, expected);
            if (!match) return cur;
            write(f, desired.clone());
            return desired.clone();
        });
    }

    @Override
    public boolean delete(String key) {
        Path f = file(key);
        return locked("delete '" + key + "'", () -> Files.deleteIfExists(f));
    }

    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return "FileStore[" + dir + "]";
    }

    /** The file of {@code key} (validating the key like every store does). */
    Path file(String key) {
        byte[] utf8 = encodeKey(key);
        StringBuilder sb = new StringBuilder("k-");
        for (byte b : utf8) {
            int c = b & 0xff;
            if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-') {
                sb.append((char) c);
            } else {
                sb.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
            }
            if (sb.length() > MAX_NAME) break;
        }
        String name = sb.length() <= MAX_NAME ? sb.toString() : "h-" + sha256(utf8);
        return dir.resolve(name);
    }

    @FunctionalInterface
    private interface Action<T> {
        T run() throws IOException;
    }

    private <T> T locked(String what, Action<T> action) {
        checkOpen();
        try {
            jvmLock.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("interrupted before store " + what + " (file store " + dir + ")");
        }
        // A fresh channel per call: on POSIX closing any descriptor of the lock file drops the process's lock on
        // it, so no other descriptor of it may be open in this JVM while the lock is held (the JVM lock ensures that).
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            FileLock fileLock = ch.lock();
            try {
                return action.run();
            } finally {
                fileLock.release();
            }
        } catch (IOException e) {
            throw new HcommException("file store " + dir + " failed during " + what + ": " + e, e);
        } finally {
            jvmLock.unlock();
        }
    }

    private void write(Path f, byte[] value) throws IOException {
        Path tmp = dir.resolve(TEMP_PREFIX + UUID.randomUUID());
        try {
            Files.write(tmp, value);
            try {
                Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private byte[] read(Path f, String key) {
        checkOpen();
        try {
            return readRaw(f);
        } catch (IOException e) {
            throw new HcommException("file store " + dir + " failed reading key '" + key + "': " + e, e);
        }
    }

    private static byte[] readRaw(Path f) throws IOException {
        try {
            return Files.readAllBytes(f);
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    private void checkOpen() {
        if (closed) throw new HcommException("file store " + dir + " is closed");
    }

    private void sleep(long nanos, String what) {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HcommException("interrupted during store " + what + " (file store " + dir + ")");
        }
    }

    private static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 unavailable", e);
        }
    }

    private static String describe(List<String> keys) {
        if (keys.size() <= 16) return keys.toString();
        return keys.subList(0, 16) + " and " + (keys.size() - 16) + " more";
    }
}
