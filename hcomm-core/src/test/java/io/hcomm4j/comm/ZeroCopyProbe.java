package io.hcomm4j.comm;

import io.hcomm4j.Communicator;

/** Test access to a communicator's zero-copy engine counters. */
public final class ZeroCopyProbe {
    private ZeroCopyProbe() {
    }

    /** Collectives that ran in shared memory so far, or -1 if the communicator has no zero-copy engine. */
    public static long zeroCopyOps(Communicator c) {
        ZeroCopyEngine z = ((CommunicatorImpl) c).zeroCopy();
        return z == null ? -1 : z.zeroCopyOps;
    }

    /** Collectives of the engine that went through the transport instead, or -1 without an engine. */
    public static long fallbackOps(Communicator c) {
        ZeroCopyEngine z = ((CommunicatorImpl) c).zeroCopy();
        return z == null ? -1 : z.fallbackOps;
    }

    /** All-reduces that went chunk by chunk through staging rings (some rank's memory unregistered), or -1 without an engine. */
    public static long pipelinedOps(Communicator c) {
        ZeroCopyEngine z = ((CommunicatorImpl) c).zeroCopy();
        return z == null ? -1 : z.pipelinedOps;
    }

    /** Test hook: all-reduces of up to {@code bytes} go in one step on this rank (at most 16 KiB; -1: the host's default). */
    public static void oneStepMax(Communicator c, long bytes) {
        ((CommunicatorImpl) c).zeroCopy().oneStepMaxOverride = bytes;
    }

    /** Test hook: this rank's one-step all-reduces wait {@code millis} after arriving before they read the peers' inputs. */
    public static void oneStepReadDelay(Communicator c, long millis) {
        ((CommunicatorImpl) c).zeroCopy().reductions.readDelayMillisForTest = millis;
    }
}
