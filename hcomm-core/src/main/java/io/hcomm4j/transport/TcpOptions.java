package io.hcomm4j.transport;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The Linux TCP options the JDK does not offer, set with {@code setsockopt} on the channel's descriptor, which is found
 * once among {@code /proc/self/fd} by the channel's two addresses: the bound on bytes a socket holds written but not yet
 * sent ({@code TCP_NOTSENT_LOWAT}), and the congestion control algorithm ({@code TCP_CONGESTION}, see
 * {@link CongestionControl}).
 *
 * <p>Why the bound: a frame written to a socket waits behind everything the socket holds, and the kernel takes as much as its send
 * buffer allows (up to 4 MiB by default: 17 ms of a 2 Gbit/s link). A CTS, an acknowledgement or a high-priority chunk
 * then waits that long behind a bulk transfer going the same way, and a pipelined collective, whose next piece waits for
 * the CTS, stalls. With the unsent bytes held to about a millisecond of the link's rate, the rest of the transfer waits in
 * the {@link DataPump} instead, where control frames and high-priority chunks go first. The socket reports writable
 * again once its unsent bytes drop below the bound, so the link still never runs dry.
 *
 * <p>{@link #AVAILABLE} is false off Linux or without native access; sockets keep the kernel's behaviour then.
 */
final class TcpOptions {
    /** The C library calls; null off Linux or without native access. */
    private static final Calls CALLS = Calls.find();
    /** Where a call leaves {@code errno} ({@link Calls#setCapturing}). */
    private static final java.lang.foreign.StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final java.lang.invoke.VarHandle ERRNO = CALL_STATE.varHandle(
            java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));
    /** Whether the calls are there (Linux, native access granted). */
    static final boolean AVAILABLE = CALLS != null;

    private static final int IPPROTO_TCP = 6;
    private static final int TCP_NOTSENT_LOWAT = 25;
    private static final int TCP_CONGESTION = 13;
    /** {@code TCP_CA_NAME_MAX}: the longest name of a congestion control algorithm, with its terminating zero. */
    private static final int CONGESTION_NAME_MAX = 16;
    private static final short AF_INET = 2;
    private static final short AF_INET6 = 10;
    /** {@code sizeof(struct sockaddr_storage)}. */
    private static final int SOCKADDR_MAX = 128;

    /** getsockname, getpeername, setsockopt, getsockopt, and setsockopt that captures errno. */
    private record Calls(MethodHandle name, MethodHandle peer, MethodHandle set, MethodHandle get, MethodHandle setCapturing) {
        static Calls find() {
            if (!System.getProperty("os.name", "").startsWith("Linux")) return null;
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup c = linker.defaultLookup();
                FunctionDescriptor addressOf = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                        ValueLayout.ADDRESS, ValueLayout.ADDRESS);
                FunctionDescriptor setsockopt = FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
                MemorySegment set = c.find("setsockopt").orElseThrow();
                return new Calls(linker.downcallHandle(c.find("getsockname").orElseThrow(), addressOf),
                        linker.downcallHandle(c.find("getpeername").orElseThrow(), addressOf),
                        linker.downcallHandle(set, setsockopt),
                        linker.downcallHandle(c.find("getsockopt").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS)),
                        linker.downcallHandle(set, setsockopt, Linker.Option.captureCallState("errno")));
            } catch (Throwable e) {
                return null; // no native access, or not this C library: sockets keep the kernel's behaviour
            }
        }
    }

    private TcpOptions() {
    }

    /** The descriptor of connected channel {@code ch}, or -1 if it cannot be found (or the calls are not available). */
    static int descriptor(SocketChannel ch) {
        if (!AVAILABLE) return -1;
        try (Arena arena = Arena.ofConfined();
             DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            if (!(ch.getLocalAddress() instanceof InetSocketAddress local)
                    || !(ch.getRemoteAddress() instanceof InetSocketAddress remote)) {
                return -1;
            }
            MemorySegment addr = arena.allocate(SOCKADDR_MAX);
            MemorySegment len = arena.allocate(ValueLayout.JAVA_INT);
            for (Path p : fds) {
                int fd;
                try {
                    fd = Integer.parseInt(p.getFileName().toString());
                    if (!Files.readSymbolicLink(p).toString().startsWith("socket:")) continue;
                } catch (IOException | NumberFormatException e) {
                    continue; // closed meanwhile, or the directory's own descriptor
                }
                if (is(CALLS.name(), fd, local, addr, len) && is(CALLS.peer(), fd, remote, addr, len)) return fd;
            }
        } catch (Throwable e) {
            // no /proc, or a call failed: not found
        }
        return -1;
    }

    /** Whether {@code call} (getsockname or getpeername) of {@code fd} gives {@code expected}. */
    private static boolean is(MethodHandle call, int fd, InetSocketAddress expected, MemorySegment addr, MemorySegment len)
            throws Throwable {
        len.set(ValueLayout.JAVA_INT, 0, SOCKADDR_MAX);
        if ((int) call.invokeExact(fd, addr, len) != 0) return false;
        short family = addr.get(ValueLayout.JAVA_SHORT, 0);
        int port = Short.toUnsignedInt(addr.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 2));
        byte[] ip;
        if (family == AF_INET) {
            ip = addr.asSlice(4, 4).toArray(ValueLayout.JAVA_BYTE);
        } else if (family == AF_INET6) {
            ip = addr.asSlice(8, 16).toArray(ValueLayout.JAVA_BYTE);
        } else {
            return false;
        }
        // an IPv4-mapped IPv6 address comes back as the IPv4 address, as the JDK reports it
        return port == expected.getPort() && InetAddress.getByAddress(ip).equals(expected.getAddress());
    }

    /** Sets {@code fd}'s bound on unsent bytes; false if the call failed. */
    static boolean setUnsentLimit(int fd, int bytes) {
        if (!AVAILABLE || fd < 0) return false;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(ValueLayout.JAVA_INT);
            v.set(ValueLayout.JAVA_INT, 0, bytes);
            return (int) CALLS.set().invokeExact(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, v, 4) == 0;
        } catch (Throwable e) {
            return false;
        }
    }

    /** {@code fd}'s bound on unsent bytes (-1: the call failed). */
    static long unsentLimit(int fd) {
        if (!AVAILABLE || fd < 0) return -1;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment len = arena.allocate(ValueLayout.JAVA_INT);
            len.set(ValueLayout.JAVA_INT, 0, 4);
            if ((int) CALLS.get().invokeExact(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, v, len) != 0) return -1;
            return Integer.toUnsignedLong(v.get(ValueLayout.JAVA_INT, 0));
        } catch (Throwable e) {
            return -1;
        }
    }

    /**
     * Makes socket {@code fd} use congestion control algorithm {@code name} ({@code cubic}, {@code bbr} ...).
     *
     * @return null if it does; else why not, in the kernel's words ({@code errno}: ENOENT, the kernel has no such
     *         algorithm; EPERM, it is not in {@code net.ipv4.tcp_allowed_congestion_control} and this process may not
     *         choose others)
     */
    static String setCongestion(int fd, String name) {
        if (!AVAILABLE) return "TCP options are set through Linux's setsockopt (native access): not available here";
        if (fd < 0) return "the socket's descriptor was not found";
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment v = arena.allocateFrom(name);
            if ((int) CALLS.setCapturing().invokeExact(state, fd, IPPROTO_TCP, TCP_CONGESTION, v, name.length()) == 0) return null;
            int errno = (int) ERRNO.get(state, 0L);
            return switch (errno) {
                case 2 -> "the kernel has no congestion control '" + name + "' (ENOENT; see "
                        + "/proc/sys/net/ipv4/tcp_available_congestion_control, or load its module)";
                case 1 -> "'" + name + "' is not in net.ipv4.tcp_allowed_congestion_control and this process lacks "
                        + "CAP_NET_ADMIN (EPERM)";
                default -> "setsockopt(TCP_CONGESTION) failed with errno " + errno;
            };
        } catch (Throwable e) {
            return "setsockopt(TCP_CONGESTION) failed: " + e;
        }
    }

    /** The congestion control algorithm socket {@code fd} uses ("" if the call failed). */
    static String congestion(int fd) {
        if (!AVAILABLE || fd < 0) return "";
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(CONGESTION_NAME_MAX);
            MemorySegment len = arena.allocate(ValueLayout.JAVA_INT);
            len.set(ValueLayout.JAVA_INT, 0, CONGESTION_NAME_MAX);
            if ((int) CALLS.get().invokeExact(fd, IPPROTO_TCP, TCP_CONGESTION, v, len) != 0) return "";
            return v.getString(0);
        } catch (Throwable e) {
            return "";
        }
    }
}
