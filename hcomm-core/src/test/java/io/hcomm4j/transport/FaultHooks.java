package io.hcomm4j.transport;

import io.hcomm4j.Hcomm;
import java.lang.reflect.Field;
import java.util.Locale;

/**
 * Test access to a session's transport and its package-private fault hooks, for rank processes and threads: break the
 * connection to a peer now or after some bytes, and read the recovery counters. Ranks are world ranks.
 */
public final class FaultHooks {
    private FaultHooks() {
    }

    /** The transport of {@code h} (through the session's private fields: tests only). */
    public static PeerTransport transport(Hcomm h) {
        try {
            Field sf = Hcomm.class.getDeclaredField("session");
            sf.setAccessible(true);
            Object session = sf.get(h);
            Field tf = session.getClass().getDeclaredField("transport");
            tf.setAccessible(true);
            return (PeerTransport) tf.get(session);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot reach the transport of a session", e);
        }
    }

    private static Conduit.Drop how(String how) {
        return Conduit.Drop.valueOf(how.toUpperCase(Locale.ROOT));
    }

    /** Breaks the connection to {@code peer} now ({@code reset}, {@code close} or {@code shutdown}); false if not connected. */
    public static boolean drop(Hcomm h, int peer, String how) {
        return transport(h).drop(peer, how(how));
    }

    /** Breaks the connection to {@code peer} once {@code bytes} more bytes were read from it. */
    public static void dropAfter(Hcomm h, int peer, long bytes, String how) {
        transport(h).dropAfter(peer, bytes, how(how));
    }

    /** Disarms every {@link #dropAfter} not triggered yet. */
    public static void disarm(Hcomm h) {
        for (PeerLink l : transport(h).links()) l.reader.disarmDrop();
    }

    /** Test hook: cuts (or restores) this rank's network for reconnects (attempts find no route, incoming ones are turned down). */
    public static void unreachable(Hcomm h, boolean cut) {
        transport(h).unreachable = cut;
    }

    /** "reconnects=R resent=F duplicates=D": this rank's recovery counters. */
    public static String counters(Hcomm h) {
        PeerTransport t = transport(h);
        return "reconnects=" + t.reconnects() + " resent=" + t.host.framesResent.get() + " resentBytes=" + t.host.bytesResent.get()
                + " duplicates=" + t.host.duplicatesDropped.get();
    }
}
