package io.hcomm4j.transport;

import io.hcomm4j.memory.MemoryPool;
import java.nio.file.Path;
import java.util.function.IntPredicate;

/**
 * Shared memory between ranks of one host.
 *
 * @param dir       directory of the shared-memory files (the same for every rank of a host)
 * @param ringBytes bytes of each direction's ring, a power of two
 * @param sameHost  which world ranks share this host (and want shared memory)
 * @param pool      this session's registered memory: sends from it are read in place by the peer (one copy); may be null
 */
public record ShmOptions(Path dir, int ringBytes, IntPredicate sameHost, MemoryPool pool) {
}
