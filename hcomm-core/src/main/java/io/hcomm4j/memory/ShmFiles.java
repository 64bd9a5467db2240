package io.hcomm4j.memory;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pool's shared-memory files: their names, creating and pre-faulting one, and removing those whose owner died.
 *
 * <p>A name is {@code hcomm4j-<pid namespace>-<pid>-<start time>-<seq>}: the owner's pid namespace (the inode of
 * {@code /proc/self/ns/pid}), its pid, its start time (field 22 of {@code /proc/<pid>/stat}, clock ticks since boot)
 * and a sequence number unique within the process. A file's owner is alive if {@code /proc/<pid>/stat} exists with
 * the same start time, so a recycled pid does not keep a dead owner's file. Files of another pid namespace are never
 * judged (their pids mean nothing here).
 */
final class ShmFiles {
    private static final Logger LOG = LoggerFactory.getLogger(ShmFiles.class);
    static final String PREFIX = "hcomm4j-";
    /** Sequence numbers of this process's files: unique across every pool of the process. */
    private static final AtomicLong SEQ = new AtomicLong();
    /** This process as an owner. */
    static final Owner SELF = Owner.self();
    private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20);

    /** Who created a file: pid namespace, pid and start time; {@code startTime < 0}: unknown (no /proc). */
    record Owner(long namespace, long pid, long startTime) {
        static Owner self() {
            long pid = ProcessHandle.current().pid();
            return new Owner(pidNamespace(), pid, ShmFiles.startTime(pid));
        }

        /** True if the owner still runs: a process with its pid and start time exists. */
        boolean alive() {
            return ShmFiles.startTime(pid) == startTime;
        }
    }

    private ShmFiles() {
    }

    /** A new, process-unique file name of this process. */
    static String newName() {
        return PREFIX + SELF.namespace() + "-" + SELF.pid() + "-" + SELF.startTime() + "-" + SEQ.incrementAndGet();
    }

    /** The owner named in a pool file name, or null if {@code name} is not one. */
    static Owner parse(String name) {
        if (!name.startsWith(PREFIX)) return null;
        String[] parts = name.substring(PREFIX.length()).split("-", -1);
        if (parts.length != 4) return null;
        try {
            long ns = Long.parseLong(parts[0]);
            long pid = Long.parseLong(parts[1]);
            long start = Long.parseLong(parts[2]);
            Long.parseLong(parts[3]);
            if (pid <= 0 || start < 0) return null;
            return new Owner(ns, pid, start);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Start time of process {@code pid} (field 22 of /proc/pid/stat), or -1 if it does not exist or is unknown. */
    static long startTime(long pid) {
        String stat;
        try {
            stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        // field 2 is "(comm)", which may hold spaces and parentheses: count fields after the last ')'
        int close = stat.lastIndexOf(')');
        if (close < 0) return -1;
        String[] fields = stat.substring(close + 1).trim().split("\\s+");
        if (fields.length < 20) return -1;
        try {
            return Long.parseLong(fields[19]); // fields[0] is field 3 (state), so field 22 is fields[19]
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The inode of this process's pid namespace, or 0 if unknown. */
    static long pidNamespace() {
        try {
            String link = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString(); // pid:[4026531836]
            return Long.parseLong(link.substring(link.indexOf('[') + 1, link.indexOf(']')));
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /** Removes the pool files in {@code dir} whose owner (in this pid namespace) is dead; returns how many. */
    static int removeStale(Path dir) {
        if (SELF.startTime() < 0) {
            LOG.debug("memory pool: no /proc, so files of dead processes in {} are not looked for", dir);
            return 0;
        }
        int removed = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*")) {
            for (Path f : files) {
                Owner o = parse(f.getFileName().toString());
                if (o == null || o.namespace() != SELF.namespace() || o.alive()) continue;
                if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) continue;
                try {
                    if (Files.deleteIfExists(f)) removed++;
                } catch (IOException e) {
                    LOG.warn("memory pool: cannot remove {}, left by dead process {}: {}", f, o.pid(), e.toString());
                }
            }
        } catch (NoSuchFileException e) {
            LOG.debug("memory pool: {} does not exist", dir);
        } catch (IOException e) {
            LOG.warn("memory pool: cannot look for files of dead processes in {}: {}", dir, e.toString());
        }
        if (removed > 0) LOG.info("memory pool: removed {} shared-memory files of dead processes from {}", removed, dir);
        return removed;
    }

    /**
     * Creates {@code file} (owner read/write only) of {@code size} bytes and maps it into {@code arena}, with every
     * page allocated and faulted in: zeros are written through the channel first (so a full file system fails here
     * with an {@link IOException} instead of a SIGBUS on a later store), then every page of the mapping is touched,
     * so no allocation, zeroing or page fault is left for the buffer's first use. The file is removed on failure.
     */
    static MemorySegment create(Path file, long size, Arena arena) throws IOException {
        Set<StandardOpenOption> options = EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        boolean posix = Files.getFileStore(file.getParent()).supportsFileAttributeView("posix");
        FileAttribute<?>[] attrs = posix
                ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE))}
                : new FileAttribute<?>[0];
        try (FileChannel ch = FileChannel.open(file, options, attrs)) {
            long pos = 0;
            while (pos < size) {
                ByteBuffer zeros = ZEROS.duplicate();
                zeros.limit((int) Math.min(zeros.capacity(), size - pos));
                pos += ch.write(zeros, pos);
            }
            MemorySegment segment = SharedFiles.plain(ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena), arena);
            for (long off = 0; off < size; off += SizeClasses.PAGE) segment.set(ValueLayout.JAVA_BYTE, off, (byte) 0);
            return segment;
        } catch (IOException | RuntimeException | Error e) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }
}
