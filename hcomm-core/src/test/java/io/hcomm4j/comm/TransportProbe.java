package io.hcomm4j.comm;

import io.hcomm4j.Communicator;

/** Test access to the transport under a communicator. */
public final class TransportProbe {
    private TransportProbe() {
    }

    /** What went straight through UCX: {large messages sent, received through its tag matching, one-sided ops}. */
    public static long[] ucxTaggedMessages(Communicator c) {
        return ((CommunicatorImpl) c).transport().ucxTaggedMessages();
    }

    /** The transport's match tables now, and the unexpected messages and bytes from peers held in them. */
    public static long[] matchState(Communicator c) {
        return ((CommunicatorImpl) c).transport().matchState();
    }
}
