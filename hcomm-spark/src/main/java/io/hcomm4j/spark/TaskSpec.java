package io.hcomm4j.spark;

import java.io.Serializable;

/**
 * What a barrier task needs from the driver to join its stage's session. It travels inside the task closure (which Spark
 * ships as a broadcast block, never in the configuration, local properties, logs or UI), and so does the job secret: hence
 * no record (whose {@code toString} would print it).
 */
final class TaskSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    /** {@code tcp://host:port} of the driver's store, or null: partition 0 serves one per stage attempt. */
    final String storeMethod;
    final String secret;
    /** null: the defaults and the executor's HCOMM_* variables. */
    final TaskConfigurer configurer;

    TaskSpec(String storeMethod, String secret, TaskConfigurer configurer) {
        this.storeMethod = storeMethod;
        this.secret = secret;
        this.configurer = configurer;
    }

    @Override
    public String toString() {
        return "TaskSpec{store=" + (storeMethod != null ? storeMethod : "partition 0") + ", secret=***}";
    }
}
