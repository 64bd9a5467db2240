package io.hcomm4j.spark;

import io.hcomm4j.CommConfig;
import java.io.Serializable;

/**
 * Adjusts the {@link CommConfig} every barrier task builds for its session, on the executor (it starts from
 * {@link CommConfig#builderFromEnvironment()}, so the executors' {@code HCOMM_*} variables apply too). Rank, world size,
 * store, secret and store scope are set after it, by {@link SparkHcomm}.
 */
@FunctionalInterface
public interface TaskConfigurer extends Serializable {
    /**
     * @param builder the task's settings so far
     * @return the builder to use, usually {@code builder} itself, e.g. {@code b -> b.timeout(Duration.ofMinutes(10))}
     */
    CommConfig.Builder configure(CommConfig.Builder builder);
}
