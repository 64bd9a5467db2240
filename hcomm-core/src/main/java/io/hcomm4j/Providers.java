package io.hcomm4j;

import java.util.ServiceLoader;

/** The {@link SessionProvider}, loaded once on first use (a lookup scans the class or module path). */
final class Providers {
    private Providers() {
    }

    static SessionProvider session() {
        return Holder.SESSION;
    }

    private static final class Holder {
        static final SessionProvider SESSION = ServiceLoader.load(SessionProvider.class, SessionProvider.class.getClassLoader())
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no " + SessionProvider.class.getName() + " found: the "
                        + "META-INF/services entry (class path) or the provides clause (module path) of hcomm-core is missing"));
    }
}
