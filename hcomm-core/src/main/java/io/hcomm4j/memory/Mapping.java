package io.hcomm4j.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/** One shared-memory file of the pool, mapped in its own arena; its buffers all belong to one size class. */
final class Mapping {
    final Path file;
    final long size;
    final int sizeClass;
    final Arena arena;
    final MemorySegment base;
    final long address;
    /** The file's sequence number (the last part of its name, see {@link SharedFiles#sequence}). */
    final long sequence;
    /** Buffers of this mapping that are leased out. Guarded by the size class's lock. */
    int open;
    /** Guarded by the pool's lock. */
    boolean unmapped;
    /** Chosen to be unmapped by a trim in progress. Guarded by the pool's lock. */
    boolean victim;

    Mapping(Path file, long size, int sizeClass, Arena arena, MemorySegment base) {
        this.file = file;
        this.size = size;
        this.sizeClass = sizeClass;
        this.arena = arena;
        this.base = base;
        this.address = base.address();
        this.sequence = SharedFiles.sequence(file.getFileName().toString());
    }

    boolean contains(long addr, long bytes) {
        return addr >= address && bytes >= 0 && addr - address <= size - bytes;
    }

    @Override
    public String toString() {
        return file.getFileName() + "[" + size + " bytes]";
    }
}
