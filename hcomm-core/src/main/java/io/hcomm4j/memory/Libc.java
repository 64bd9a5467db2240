package io.hcomm4j.memory;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

/**
 * The few C library calls that {@link Adoptions} needs and the JDK does not offer: opening a file for a descriptor,
 * reserving its pages, and mapping it at a chosen address ({@code MAP_FIXED}), which {@code FileChannel.map} cannot.
 * Linux only (x86-64 and AArch64 share these flag values); {@link #AVAILABLE} is false elsewhere or without native
 * access, and nothing is adopted then.
 */
final class Libc {
    static final boolean AVAILABLE;
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle FALLOCATE;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final StructLayout STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = STATE.varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));

    private static final int O_RDWR = 2;
    private static final int O_CREAT = 0x40;
    private static final int O_EXCL = 0x80;
    private static final int O_CLOEXEC = 0x80000;
    private static final int PROT_RW = 3;
    private static final int MAP_SHARED = 1;
    private static final int MAP_FIXED = 0x10;
    private static final int MAP_POPULATE = 0x8000;
    private static final long MAP_FAILED = -1;

    static {
        MethodHandle open = null, close = null, fallocate = null, mmap = null, munmap = null;
        boolean ok = false;
        if (System.getProperty("os.name", "").startsWith("Linux")) {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup c = linker.defaultLookup();
                Linker.Option errno = Linker.Option.captureCallState("errno");
                open = linker.downcallHandle(c.find("open").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), errno, Linker.Option.firstVariadicArg(2));
                close = linker.downcallHandle(c.find("close").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
                fallocate = linker.downcallHandle(c.find("posix_fallocate").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
                mmap = linker.downcallHandle(c.find("mmap").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_LONG), errno);
                munmap = linker.downcallHandle(c.find("munmap").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
                ok = true;
            } catch (Throwable e) {
                // no native access, or not this C library: nothing is adopted
            }
        }
        AVAILABLE = ok;
        OPEN = open;
        CLOSE = close;
        FALLOCATE = fallocate;
        MMAP = mmap;
        MUNMAP = munmap;
    }

    private Libc() {
    }

    /**
     * Creates {@code file} (owner read/write only, failing if it exists) with {@code size} bytes reserved
     * ({@code posix_fallocate}: a full file system fails here, not with a SIGBUS at a later store); returns its
     * descriptor.
     */
    static int create(Path file, long size) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(STATE);
            int fd = (int) OPEN.invokeExact(state, a.allocateFrom(file.toString()), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd < 0) throw new IOException("cannot create " + file + ": errno " + errno(state));
            int err = (int) FALLOCATE.invokeExact(fd, 0L, size);
            if (err != 0) {
                close(fd);
                throw new IOException("cannot reserve " + size + " bytes for " + file + ": errno " + err);
            }
            return fd;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IOException(e);
        }
    }

    /**
     * Maps {@code length} bytes of {@code fd} from {@code offset} shared, read-write, every page present; at
     * {@code address} in place of whatever was mapped there if {@code address != 0}, else wherever the kernel
     * chooses. Returns the address.
     */
    static long map(int fd, long offset, long length, long address) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(STATE);
            int flags = MAP_SHARED | MAP_POPULATE | (address != 0 ? MAP_FIXED : 0);
            long at = (long) MMAP.invokeExact(state, address, length, PROT_RW, flags, fd, offset);
            if (at == MAP_FAILED) throw new IOException("mmap of " + length + " bytes failed: errno " + errno(state));
            if (address != 0 && at != address) {
                throw new IOException("mmap placed " + length + " bytes at 0x" + Long.toHexString(at) + ", not at 0x" + Long.toHexString(address));
            }
            return at;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IOException(e);
        }
    }

    static void unmap(long address, long length) {
        try {
            int ignored = (int) MUNMAP.invokeExact(address, length);
        } catch (Throwable e) {
            // nothing more to do: the mapping stays until the process exits
        }
    }

    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable e) {
            // a descriptor left open until exit
        }
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }
}
