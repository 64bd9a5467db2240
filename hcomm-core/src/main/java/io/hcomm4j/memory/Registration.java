package io.hcomm4j.memory;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;

/**
 * Where a segment of pooled memory lives: a range of a shared-memory file that another process on the host can map
 * ({@link #map}). Returned by {@link MemoryPool#lookup}.
 *
 * <p><b>Internal:</b> this is the contract between the pool and same-host transports, which send the file name,
 * offset and length to a peer so it can read or write the bytes in place. Applications need not use it. A file name
 * is never reused, so a peer may cache its mapping by name; the file lives until its pool closes.
 *
 * @param file   the shared-memory file
 * @param offset byte offset of the segment in the file
 * @param length bytes of the segment
 */
public record Registration(Path file, long offset, long length) {
    /** Checks the arguments. */
    public Registration {
        Objects.requireNonNull(file, "file");
        if (offset < 0) throw new IllegalArgumentException("offset must be >= 0, was " + offset);
        if (length < 0) throw new IllegalArgumentException("length must be >= 0, was " + length);
    }

    /** The file's name, which with the pool's directory is all a peer needs to find it. */
    public String fileName() {
        return file.getFileName().toString();
    }

    /**
     * Maps this range read-write into {@code arena} (in this or another process on the host): stores through the
     * returned segment are seen through every other mapping of the range, and the other way round.
     *
     * @throws IOException if the file cannot be opened (its pool closed) or mapped
     */
    public MemorySegment map(Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long size = ch.size();
            if (offset > size || length > size - offset) { // mapping past the end would grow the file
                throw new IOException(file + " holds " + size + " bytes, not [" + offset + ", " + offset + " + " + length + ")");
            }
            return SharedFiles.plain(ch.map(FileChannel.MapMode.READ_WRITE, offset, length, arena), arena);
        }
    }
}
