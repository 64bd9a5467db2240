package io.hcomm4j.cli;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Makes this process adopt the orphans of its descendants (Linux {@code prctl(PR_SET_CHILD_SUBREAPER)}): a
 * process whose parent exits is re-parented to this process instead of init, so it stays in this process's
 * tree, where the launcher finds and stops it. Adopted processes that exit are reaped with {@link #reap}
 * (nobody else waits for them). Where this is not available (not Linux, no native access) nothing is adopted.
 */
final class Subreaper {
    private static final int PR_SET_CHILD_SUBREAPER = 36;
    private static final int WNOHANG = 1;

    private static final boolean ACTIVE;
    private static final MethodHandle WAITPID;

    static {
        boolean active = false;
        MethodHandle waitpid = null;
        if (System.getProperty("os.name", "").startsWith("Linux")) {
            try {
                Linker linker = Linker.nativeLinker();
                MethodHandle prctl = linker.downcallHandle(linker.defaultLookup().find("prctl").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG),
                        Linker.Option.firstVariadicArg(1));
                waitpid = linker.downcallHandle(linker.defaultLookup().find("waitpid").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
                active = (int) prctl.invokeExact(PR_SET_CHILD_SUBREAPER, 1L) == 0;
            } catch (Throwable e) {
                // no native access or no prctl: orphans go to init as usual
            }
        }
        ACTIVE = active;
        WAITPID = active ? waitpid : null;
    }

    private Subreaper() {
    }

    /** Turns adoption on (once per process); true if this process now adopts orphans. */
    static boolean activate() {
        return ACTIVE;
    }

    /**
     * Collects the exit status of {@code pid} if it is an adopted child that has exited, so it disappears.
     * Never call it for a child started with {@link ProcessBuilder}: the JDK waits for those itself.
     */
    static void reap(long pid) {
        if (WAITPID == null) return;
        try {
            int ignored = (int) WAITPID.invokeExact((int) pid, MemorySegment.NULL, WNOHANG);
        } catch (Throwable e) {
            // nothing to reap
        }
    }
}
