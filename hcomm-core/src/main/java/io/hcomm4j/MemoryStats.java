package io.hcomm4j;

/**
 * A snapshot of a pool's accounting.
 *
 * @param bytesInUse     bytes held by open buffers, each counted as its whole size class
 * @param buffersInUse   open buffers
 * @param highWaterBytes the most {@code bytesInUse} ever was
 * @param mappedBytes    bytes of shared memory mapped (in use, free for reuse, or kept for buffers still open
 *                       after close)
 * @param mappings       shared-memory files mapped
 * @param allocations    successful allocations so far
 * @param reuses         allocations served with memory that an earlier buffer had used (no new mapping)
 * @param leaks          buffers that became unreachable without {@code close()}
 * @param limitBytes     the limit on {@code mappedBytes}
 * @param adoptedBuffers the caller's own buffers now in shared memory (adopted at their second collective,
 *                       {@code HCOMM_MEM_ADOPT}); not counted in the figures above
 * @param adoptedBytes   their bytes, in whole pages
 */
public record MemoryStats(long bytesInUse, long buffersInUse, long highWaterBytes, long mappedBytes, int mappings,
                          long allocations, long reuses, long leaks, long limitBytes, long adoptedBuffers, long adoptedBytes) {
}
