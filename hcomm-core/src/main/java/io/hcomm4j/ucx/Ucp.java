package io.hcomm4j.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * UCX's UCP library (libucp, with libucs for status texts), bound by hand through FFM: no jextract reaches these
 * machines. Loaded once, on first use, and checked: a missing library, or one older than {@value #MIN_MINOR} minor
 * version of API 1, is a {@link UcxException} naming the library and how to install it, so that a job asking for the
 * UCX transport fails at init. The parameter structs are written as API 1.13 lays them out; later 1.x minors only
 * append fields, which a {@code field_mask} without their bits leaves unread.
 */
public final class Ucp {
    /** The oldest UCP API minor version (of major 1) these bindings are written for. */
    public static final int MIN_MINOR = 13;
    static final String LIBRARY = "libucp.so.0";
    private static final String INSTALL = "install UCX 1." + MIN_MINOR + " or later (Debian/Ubuntu: apt-get install libucx0)";

    /** {@code ucs_status_t}: a packed enum, one signed byte (0 OK, 1 in progress, negative an error). */
    static final java.lang.foreign.ValueLayout.OfByte STATUS = java.lang.foreign.ValueLayout.JAVA_BYTE;
    // ucs_status_t values used by name
    static final int UCS_OK = 0;
    static final int UCS_INPROGRESS = 1;
    static final int UCS_ERR_BUSY = -15;

    private static volatile Ucp loaded;
    private static volatile UcxException failed;

    final int major, minor, release;
    final MethodHandle initVersion, cleanup, configRead, configModify, configRelease;
    final MethodHandle workerCreate, workerDestroy, workerGetAddress, workerReleaseAddress, workerProgress;
    final MethodHandle workerGetEfd, workerArm, workerSignal, poll;
    final MethodHandle epCreate, epCloseNbx, epFlushNbx, tagSendNbx, tagRecvNbx, requestCheckStatus, tagRecvRequestTest, requestFree;
    // the raw calls take and return pointers as longs: the conduit's hot path makes no MemorySegment per call
    final MethodHandle requestCheckStatusRaw, requestFreeRaw;
    final MethodHandle tagSendNbxRaw, tagRecvNbxRaw, requestCancel, tagRecvRequestTestRaw;
    final MethodHandle memMap, memUnmap, rkeyPack, rkeyBufferRelease, epRkeyUnpack, rkeyDestroy, putNbx, getNbx, atomicOpNbx;
    /** ucp_ep_print_info, and libc's open_memstream, fclose and free to read what it prints. */
    final MethodHandle epPrintInfo, openMemstream, fclose, free;
    private final MethodHandle statusString, globalOptsGet, globalOptsSet;

    private Ucp(SymbolLookup ucp, SymbolLookup ucs) {
        Linker l = Linker.nativeLinker();
        MethodHandle getVersion = l.downcallHandle(find(ucp, "ucp_get_version"), FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(JAVA_INT, 3);
            getVersion.invokeExact(v, v.asSlice(4), v.asSlice(8));
            major = v.getAtIndex(JAVA_INT, 0);
            minor = v.getAtIndex(JAVA_INT, 1);
            release = v.getAtIndex(JAVA_INT, 2);
        } catch (Throwable e) {
            throw Ucp.failed("ucp_get_version", e);
        }
        if (major != 1 || minor < MIN_MINOR) {
            throw new UcxException("UCX " + version() + " found (" + LIBRARY + "), the UCX transport needs 1." + MIN_MINOR
                    + " or later 1.x: " + INSTALL);
        }
        initVersion = l.downcallHandle(find(ucp, "ucp_init_version"), FunctionDescriptor.of(STATUS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        cleanup = l.downcallHandle(find(ucp, "ucp_cleanup"), FunctionDescriptor.ofVoid(ADDRESS));
        configRead = l.downcallHandle(find(ucp, "ucp_config_read"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, ADDRESS));
        configModify = l.downcallHandle(find(ucp, "ucp_config_modify"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, ADDRESS));
        configRelease = l.downcallHandle(find(ucp, "ucp_config_release"), FunctionDescriptor.ofVoid(ADDRESS));
        workerCreate = l.downcallHandle(find(ucp, "ucp_worker_create"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, ADDRESS));
        workerDestroy = l.downcallHandle(find(ucp, "ucp_worker_destroy"), FunctionDescriptor.ofVoid(ADDRESS));
        workerGetAddress = l.downcallHandle(find(ucp, "ucp_worker_get_address"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, ADDRESS));
        workerReleaseAddress = l.downcallHandle(find(ucp, "ucp_worker_release_address"), FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
        workerProgress = l.downcallHandle(find(ucp, "ucp_worker_progress"), FunctionDescriptor.of(JAVA_INT, ADDRESS));
        workerGetEfd = l.downcallHandle(find(ucp, "ucp_worker_get_efd"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS));
        workerArm = l.downcallHandle(find(ucp, "ucp_worker_arm"), FunctionDescriptor.of(STATUS, ADDRESS));
        workerSignal = l.downcallHandle(find(ucp, "ucp_worker_signal"), FunctionDescriptor.of(STATUS, ADDRESS));
        poll = l.downcallHandle(l.defaultLookup().find("poll").orElseThrow(() -> new UcxException("libc lacks poll")),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        epCreate = l.downcallHandle(find(ucp, "ucp_ep_create"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, ADDRESS));
        epCloseNbx = l.downcallHandle(find(ucp, "ucp_ep_close_nbx"), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        epFlushNbx = l.downcallHandle(find(ucp, "ucp_ep_flush_nbx"), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        requestCheckStatusRaw = l.downcallHandle(find(ucp, "ucp_request_check_status"), FunctionDescriptor.of(STATUS, JAVA_LONG));
        requestFreeRaw = l.downcallHandle(find(ucp, "ucp_request_free"), FunctionDescriptor.ofVoid(JAVA_LONG));
        tagSendNbxRaw = l.downcallHandle(find(ucp, "ucp_tag_send_nbx"),
                FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
        tagRecvNbxRaw = l.downcallHandle(find(ucp, "ucp_tag_recv_nbx"),
                FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
        memMap = l.downcallHandle(find(ucp, "ucp_mem_map"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, ADDRESS));
        memUnmap = l.downcallHandle(find(ucp, "ucp_mem_unmap"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS));
        rkeyPack = l.downcallHandle(find(ucp, "ucp_rkey_pack"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        rkeyBufferRelease = l.downcallHandle(find(ucp, "ucp_rkey_buffer_release"), FunctionDescriptor.ofVoid(ADDRESS));
        epRkeyUnpack = l.downcallHandle(find(ucp, "ucp_ep_rkey_unpack"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, ADDRESS));
        rkeyDestroy = l.downcallHandle(find(ucp, "ucp_rkey_destroy"), FunctionDescriptor.ofVoid(ADDRESS));
        putNbx = l.downcallHandle(find(ucp, "ucp_put_nbx"),
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        getNbx = l.downcallHandle(find(ucp, "ucp_get_nbx"),
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        atomicOpNbx = l.downcallHandle(find(ucp, "ucp_atomic_op_nbx"),
                FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        tagRecvRequestTestRaw = l.downcallHandle(find(ucp, "ucp_tag_recv_request_test"), FunctionDescriptor.of(STATUS, JAVA_LONG, ADDRESS));
        requestCancel = l.downcallHandle(find(ucp, "ucp_request_cancel"), FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
        tagSendNbx = l.downcallHandle(find(ucp, "ucp_tag_send_nbx"), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
        tagRecvNbx = l.downcallHandle(find(ucp, "ucp_tag_recv_nbx"),
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
        requestCheckStatus = l.downcallHandle(find(ucp, "ucp_request_check_status"), FunctionDescriptor.of(STATUS, ADDRESS));
        tagRecvRequestTest = l.downcallHandle(find(ucp, "ucp_tag_recv_request_test"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS));
        requestFree = l.downcallHandle(find(ucp, "ucp_request_free"), FunctionDescriptor.ofVoid(ADDRESS));
        epPrintInfo = l.downcallHandle(find(ucp, "ucp_ep_print_info"), FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
        openMemstream = l.downcallHandle(libc(l, "open_memstream"), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        fclose = l.downcallHandle(libc(l, "fclose"), FunctionDescriptor.of(JAVA_INT, ADDRESS));
        free = l.downcallHandle(libc(l, "free"), FunctionDescriptor.ofVoid(ADDRESS));
        statusString = l.downcallHandle(find(ucs, "ucs_status_string"), FunctionDescriptor.of(ADDRESS, STATUS));
        globalOptsGet = l.downcallHandle(find(ucs, "ucs_global_opts_get_value"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS, JAVA_LONG));
        globalOptsSet = l.downcallHandle(find(ucs, "ucs_global_opts_set_value"), FunctionDescriptor.of(STATUS, ADDRESS, ADDRESS));
    }

    /**
     * The library, loaded and checked on the first call.
     *
     * @throws UcxException if libucp cannot be loaded, is older than 1.{@value #MIN_MINOR}, or lacks a function
     */
    public static Ucp get() {
        Ucp u = loaded;
        if (u != null) return u;
        synchronized (Ucp.class) {
            if (loaded != null) return loaded;
            if (failed != null) throw failed;
            try {
                Arena forever = Arena.global();
                keepJvmSignals();
                SymbolLookup ucp, ucs;
                try {
                    ucp = SymbolLookup.libraryLookup(LIBRARY, forever);
                    ucs = SymbolLookup.libraryLookup("libucs.so.0", forever);
                } catch (IllegalArgumentException | IllegalCallerException e) {
                    throw new UcxException("the UCX transport needs UCX's " + LIBRARY + ", which could not be loaded (" + e.getMessage()
                            + "): " + INSTALL, e);
                }
                loaded = new Ucp(ucp, ucs);
                return loaded;
            } catch (UcxException e) {
                failed = e;
                throw e;
            }
        }
    }

    /**
     * UCX's error handler would take the SIGSEGV and SIGBUS a JVM raises on purpose (null checks, safepoint polls) and
     * abort the process; libucs reads {@code UCX_ERROR_SIGNALS} once, when it is loaded, so this empties it first (as
     * Java users of UCX do), whatever the environment said: any signal listed there kills the JVM.
     */
    private static void keepJvmSignals() {
        String was = System.getenv("UCX_ERROR_SIGNALS");
        if (was != null && !was.isBlank()) {
            org.slf4j.LoggerFactory.getLogger(Ucp.class).warn("UCX_ERROR_SIGNALS={} ignored: UCX's handler would take the "
                    + "JVM's own SIGSEGV and abort the process", was);
        }
        try (Arena a = Arena.ofConfined()) {
            Linker l = Linker.nativeLinker();
            MethodHandle setenv = l.downcallHandle(l.defaultLookup().find("setenv").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
            int rc = (int) setenv.invokeExact(a.allocateFrom("UCX_ERROR_SIGNALS"), a.allocateFrom(""), 1);
            if (rc != 0) throw new UcxException("setenv(UCX_ERROR_SIGNALS) failed: set UCX_ERROR_SIGNALS= (empty) before starting the JVM");
        } catch (UcxException e) {
            throw e;
        } catch (Throwable e) {
            throw new UcxException("could not clear UCX_ERROR_SIGNALS (" + e + "): set UCX_ERROR_SIGNALS= (empty) before starting the JVM", e);
        }
    }

    /** Whether libucp loads and is recent enough (without throwing). */
    public static boolean available() {
        try {
            get();
            return true;
        } catch (UcxException e) {
            return false;
        }
    }

    /** The loaded library's version, "major.minor.release". */
    public String version() {
        return major + "." + minor + "." + release;
    }

    private static MemorySegment find(SymbolLookup lib, String name) {
        return lib.find(name).orElseThrow(() -> new UcxException("UCX's library lacks " + name + ": " + INSTALL));
    }

    /** {@code e} as the failure of {@code call}: itself if it is a {@link UcxException} already (a status {@link #check} refused). */
    private static MemorySegment libc(Linker l, String name) {
        return l.defaultLookup().find(name).orElseThrow(() -> new UcxException("libc lacks " + name));
    }

    static UcxException failed(String call, Throwable e) {
        return e instanceof UcxException u ? u : new UcxException(call + " failed: " + e, e);
    }

    /** Throws a {@link UcxException} naming {@code call} and UCX's text for {@code status} unless it is UCS_OK. */
    void check(int status, String call) {
        if (status != UCS_OK) throw new UcxException(call + " failed: " + statusText(status) + " (ucs_status_t " + status + ")");
    }

    /**
     * Runs {@code attempt} with UCX's log level at "fatal" (a process-wide setting, put back after): for an attempt
     * whose failure is expected and handled, which UCX would log as an ERROR (an endpoint asking for peer error
     * handling where only shared memory is allowed).
     */
    <T> T quietly(java.util.function.Supplier<T> attempt) {
        String was = null;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment name = a.allocateFrom("LOG_LEVEL");
            MemorySegment value = a.allocate(64);
            if ((byte) globalOptsGet.invokeExact(name, value, 64L) == UCS_OK) was = value.getString(0);
            if (was != null) {
                int st = (byte) globalOptsSet.invokeExact(name, a.allocateFrom("fatal"));
                if (st != UCS_OK) was = null;
            }
        } catch (Throwable e) {
            was = null;
        }
        try {
            return attempt.get();
        } finally {
            if (was != null) {
                try (Arena a = Arena.ofConfined()) {
                    int st = (byte) globalOptsSet.invokeExact(a.allocateFrom("LOG_LEVEL"), a.allocateFrom(was));
                    if (st != UCS_OK) org.slf4j.LoggerFactory.getLogger(Ucp.class).warn("UCX's log level stays fatal (was {})", was);
                } catch (Throwable e) {
                    org.slf4j.LoggerFactory.getLogger(Ucp.class).warn("UCX's log level stays fatal (was {}): {}", was, e.toString());
                }
            }
        }
    }

    /** UCX's own text for a {@code ucs_status_t}. */
    String statusText(int status) {
        try {
            MemorySegment s = (MemorySegment) statusString.invokeExact((byte) status);
            return s.reinterpret(256).getString(0);
        } catch (Throwable e) {
            return "status " + status;
        }
    }

    /**
     * A {@code ucs_status_ptr_t} as UCX's macros read it: 0 is UCS_OK (done at once), an address in the last 100 below
     * 2^64 is an error status, anything else a request still in progress.
     */
    static boolean isError(MemorySegment statusPtr) {
        return isError(statusPtr.address());
    }

    static boolean isError(long statusPtr) {
        return Long.compareUnsigned(statusPtr, -100L) >= 0;
    }

    /** The error status a {@link #isError} pointer carries. */
    static int errorOf(MemorySegment statusPtr) {
        return (byte) statusPtr.address();
    }

    /** Reads a pointer-sized out parameter. */
    static MemorySegment out(MemorySegment p) {
        return p.get(ADDRESS, 0);
    }

    static long outLong(MemorySegment p) {
        return p.get(JAVA_LONG, 0);
    }
}
