package io.hcomm4j;

import java.util.ServiceLoader;

/**
 * The {@link SessionProvider} and the {@link TransferProvider}, each loaded once on first use (a lookup scans the class
 * or module path).
 */
final class Providers {
    private Providers() {
    }

    static SessionProvider session() {
        return Holder.SESSION;
    }

    static TransferProvider transfer() {
        return TransferHolder.TRANSFER;
    }

    private static <T> T load(Class<T> type) {
        return ServiceLoader.load(type, type.getClassLoader())
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no " + type.getName() + " found: the "
                        + "META-INF/services entry (class path) or the provides clause (module path) of hcomm-core is missing"));
    }

    private static final class Holder {
        static final SessionProvider SESSION = load(SessionProvider.class);
    }

    private static final class TransferHolder {
        static final TransferProvider TRANSFER = load(TransferProvider.class);
    }
}
