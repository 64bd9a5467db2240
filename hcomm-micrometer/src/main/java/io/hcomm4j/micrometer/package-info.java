/**
 * Micrometer metrics for HComm4J: {@link io.hcomm4j.micrometer.HcommMetrics} binds a communicator's op counts, bytes,
 * times, latency percentiles and health to a Micrometer {@code MeterRegistry}. An optional module: the core logs
 * through SLF4J only and does not depend on Micrometer.
 */
package io.hcomm4j.micrometer;
