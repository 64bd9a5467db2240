package io.hcomm4j.cli;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Starts a job's rank JVMs from the JDK's ahead-of-time cache {@code file} (JEP 483/514/515: classes loaded and
 * linked, and method profiles, from a training run), or trains it: when the file does not exist yet, local rank 0
 * runs with {@code -XX:AOTCacheOutput} and its JVM writes the cache as it exits; when it exists, every rank runs
 * with {@code -XX:AOTCache}. The option reaches the ranks' {@code java} launchers through
 * {@code JDK_JAVA_OPTIONS} (appended to any the environment has). A cache that does not match the JVM or class
 * path is ignored by the JVM with a warning, and the rank runs as without it.
 */
final class AotCache {
    private final Path file;
    /** Set per run: whether this run trains the cache (it did not exist) rather than starts from it. */
    private boolean training;

    AotCache(Path file) {
        this.file = file;
    }

    /** A run starts: trains the cache if it does not exist yet; returns what the launcher says about it. */
    String startRun() {
        training = !Files.exists(file);
        return training
                ? "training the AOT cache " + file + " on local rank 0 (written as its JVM exits; later runs start from it)"
                : "ranks start from the AOT cache " + file;
    }

    /** The {@code JDK_JAVA_OPTIONS} option for local rank {@code local} of this run, or null. */
    String option(int local) {
        String option = !training ? "-XX:AOTCache=" + file : local == 0 ? "-XX:AOTCacheOutput=" + file : null;
        // JDK_JAVA_OPTIONS splits at white space outside double quotes
        return option != null && option.chars().anyMatch(Character::isWhitespace) ? '"' + option + '"' : option;
    }
}
