package io.hcomm4j.memory;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

/**
 * Shared-memory files of this process for same-host transports: the same names, pre-faulting and dead-owner cleanup as
 * the {@link MemoryPool}'s files, so one sweep at init removes whatever a killed process left, rings included.
 *
 * <p><b>Internal:</b> the contract between this package and the shared-memory transport; applications need not use it.
 */
public final class SharedFiles {
    private static final Set<PosixFilePermission> OWNER_ONLY = EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);

    private SharedFiles() {
    }

    /**
     * The part every file name of this process starts with: {@code hcomm4j-<pid namespace>-<pid>-<start time>-}; a
     * file's name is this prefix followed by its sequence number.
     */
    public static String ownPrefix() {
        ShmFiles.Owner o = ShmFiles.SELF;
        return ShmFiles.PREFIX + o.namespace() + "-" + o.pid() + "-" + o.startTime() + "-";
    }

    /** A new file name of this process, never used before (unique across every pool and transport of the process). */
    public static String newName() {
        return ShmFiles.newName();
    }

    /** The prefix of {@code name} up to its sequence number (see {@link #ownPrefix()}), or null if it is not a file name of ours. */
    public static String ownerPrefix(String name) {
        if (ShmFiles.parse(name) == null) return null;
        return name.substring(0, name.lastIndexOf('-') + 1);
    }

    /** The sequence number of a file name (the part after {@link #ownerPrefix}), or -1 if it is not a file name of ours. */
    public static long sequence(String name) {
        if (ShmFiles.parse(name) == null) return -1;
        return Long.parseLong(name.substring(name.lastIndexOf('-') + 1));
    }

    /**
     * Creates {@code dir/name} (owner read/write only) of {@code size} bytes, every page allocated and faulted in, and maps
     * it into {@code arena}; removes the file on failure.
     */
    public static MemorySegment create(Path dir, String name, long size, Arena arena) throws IOException {
        return ShmFiles.create(dir.resolve(name), size, arena);
    }

    /**
     * Maps the whole of {@code dir/name}, a file another process of this user created for us: it must be a regular file
     * (not a link) with one of our names, owned by this process's user, readable and writable by that user only.
     *
     * @throws IOException naming what is wrong with the file, or why it cannot be mapped
     */
    public static MemorySegment mapPeerFile(Path dir, String name, Arena arena) throws IOException {
        if (name.indexOf('/') >= 0 || ShmFiles.parse(name) == null) throw new IOException("'" + name + "' is not a shared-memory file name");
        Path file = dir.resolve(name);
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) throw new IOException(file + " is not a regular file");
        Object owner = Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        Object me = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        if (!owner.equals(me)) throw new IOException(file + " belongs to user " + owner + ", not to this process's user " + me);
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS);
        if (!perms.equals(OWNER_ONLY)) throw new IOException(file + " has mode " + perms + ", not owner read/write only");
        try (FileChannel ch = FileChannel.open(file, Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS))) {
            long size = ch.size();
            if (size == 0) throw new IOException(file + " is empty");
            return plain(ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena), arena);
        }
    }

    /**
     * The memory of {@code mapped} as a plain native segment of the same {@code arena} (so it is as valid as the
     * mapping: closing the arena unmaps it and invalidates both). Every buffer the kernels and copies see is then of
     * one segment class: a vector kernel compiled while it saw only one class (a user's {@code Arena} memory, say) and
     * then given the other ran its Java fallback until recompiled, 0.5-1.4 s of calls a hundred times slower in a
     * micro-benchmark here (native to mapped at 1 KiB float sums, with deoptimization logged).
     */
    static MemorySegment plain(MemorySegment mapped, Arena arena) {
        return MemorySegment.ofAddress(mapped.address()).reinterpret(mapped.byteSize(), arena, null);
    }

    /**
     * Touches every page of a fresh mapping of a peer's file so that no op pays its page faults later (tens of µs a page
     * on these VMs: a first 64 MiB copy into an untouched mapping ran at 0.06 GB/s, later ones at 10). An atomic add of 0
     * makes each page present and writable here without racing the peer's own stores (a plain read-then-write could
     * undo one of them).
     */
    public static void prefault(MemorySegment seg) {
        long start = -seg.address() & 4095; // the first page boundary in the segment (atomics need alignment)
        for (long o = start; o + 4 <= seg.byteSize(); o += 4096) PREFAULT.getAndAdd(seg, o, 0);
    }

    private static final java.lang.invoke.VarHandle PREFAULT = java.lang.foreign.ValueLayout.JAVA_INT.varHandle();

    /** Removes the files in {@code dir} whose owner process is dead (killed before it could unlink them); returns how many. */
    public static int removeStale(Path dir) {
        return ShmFiles.removeStale(dir);
    }
}
