package io.hcomm4j.comm;

import io.hcomm4j.CommConfig;
import io.hcomm4j.Communicator;

/** One process's HComm4J session: store, transport, progress engine and the world communicator. */
public final class Session implements AutoCloseable {
    /** Runs init: rendezvous, transport listener, world communicator. */
    public static Session open(CommConfig config) {
        throw new UnsupportedOperationException("TODO");
    }

    /** The world communicator. */
    public Communicator world() {
        throw new UnsupportedOperationException("TODO");
    }

    /** The settings. */
    public CommConfig config() {
        throw new UnsupportedOperationException("TODO");
    }

    @Override
    public void close() {
    }
}
