package io.hcomm4j.cli;

import java.io.File;

/** Finding executables on the PATH, as a shell would. */
final class Executables {
    private Executables() {
    }

    /** The {@code taskset} binary on the PATH, or null. */
    static String taskset() {
        return executable("taskset") ? onPath("taskset") : null;
    }

    /** Whether {@code command} names an executable file: a path, or a name found on the PATH. */
    static boolean executable(String command) {
        if (command.contains(File.separator)) return new File(command).canExecute();
        return onPath(command) != null;
    }

    static String onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) return null;
        for (String dir : path.split(File.pathSeparator)) {
            File f = new File(dir.isEmpty() ? "." : dir, name);
            if (f.isFile() && f.canExecute()) return f.getPath();
        }
        return null;
    }
}
