package io.hcomm4j.spark;

import org.apache.spark.sql.SparkSession;

/**
 * The Spark of the module's tests, started once per test JVM (a start costs seconds) and shared by every test class:
 * {@code local[4,2]}, i.e. 4 task slots in this JVM (a 4-partition barrier stage runs 4 ranks as threads here, each
 * with its own session) and 2 attempts per task, so a failed barrier task fails its stage attempt, which Spark retries,
 * rather than the job.
 */
final class TestSpark {
    private static SparkSession session;

    private TestSpark() {
    }

    static synchronized SparkSession session() {
        if (session == null) {
            session = SparkSession.builder()
                    .master("local[4,2]")
                    .appName("hcomm-spark-test")
                    .config("spark.ui.enabled", "false")
                    .config("spark.ui.showConsoleProgress", "false")
                    .config("spark.driver.host", "127.0.0.1")
                    .config("spark.driver.bindAddress", "127.0.0.1")
                    .config("spark.sql.shuffle.partitions", "4")
                    .config("spark.default.parallelism", "4")
                    .getOrCreate();
        }
        return session;
    }
}
