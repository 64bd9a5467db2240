package io.hcomm4j.rma;

import io.hcomm4j.TransferConfig;
import io.hcomm4j.TransferEngine;
import io.hcomm4j.TransferProvider;

/**
 * The {@link TransferProvider} that {@link TransferEngine#start} loads (META-INF/services and module-info register it):
 * engines are {@link EngineImpl}s.
 */
public final class TransferService implements TransferProvider {
    /** For {@link java.util.ServiceLoader}. */
    public TransferService() {
    }

    @Override
    public TransferEngine start(TransferConfig config) {
        return EngineImpl.start(config);
    }
}
