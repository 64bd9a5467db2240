package io.hcomm4j;

/**
 * Service-provider interface between the API and the layer that implements transfer engines:
 * {@link TransferEngine#start} finds its one implementation (in this library's {@code io.hcomm4j.rma} package) with
 * {@link java.util.ServiceLoader}, so that the API package depends on no package below it at compile time.
 * Applications neither implement nor call it.
 */
public interface TransferProvider {
    /** Starts an engine (see {@link TransferEngine#start(TransferConfig)}). */
    TransferEngine start(TransferConfig config);
}
