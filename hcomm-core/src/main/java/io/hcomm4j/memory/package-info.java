/**
 * Registered memory: {@link io.hcomm4j.memory.MemoryPool} hands out {@link io.hcomm4j.memory.Buffer}s of off-heap
 * memory that lives in shared-memory files, so that same-host peers can map it and move data without copies.
 *
 * <p>Applications see them through the API: {@link io.hcomm4j.Memory}, {@link io.hcomm4j.RegisteredBuffer},
 * {@link io.hcomm4j.MemoryStats} and {@link io.hcomm4j.MemoryLimitException}; {@link io.hcomm4j.memory.Registration} and
 * {@code MemoryPool.lookup} are the internal contract with same-host transports. Everything else is package-private:
 * the size classes, the files (naming, pre-faulting, removing those of dead processes), mappings, slots and leases.
 * docs/architecture.md ("Registered memory") describes the design.
 */
package io.hcomm4j.memory;
