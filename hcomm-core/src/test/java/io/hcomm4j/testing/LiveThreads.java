package io.hcomm4j.testing;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The names of this JVM's live threads, virtual ones included, read from the JDK's thread containers (the tree a thread
 * dump walks) without taking a snapshot of any thread's stack. {@link Thread#getAllStackTraces()} lists platform threads
 * only, and a JSON thread dump ({@code HotSpotDiagnosticMXBean.dumpThreads}) can crash JDK 25.0.3 when a virtual thread
 * exits while it is being snapshotted (JDK-8392031, seen here under load). Needs
 * {@code --add-exports=java.base/jdk.internal.vm=ALL-UNNAMED}, which the build's test flags carry.
 */
public final class LiveThreads {
    private LiveThreads() {}

    /** Names of the live threads whose names start with {@code prefix}. */
    public static List<String> named(String prefix) {
        List<String> out = new ArrayList<>();
        try {
            Class<?> container = Class.forName("jdk.internal.vm.ThreadContainer");
            Method children = container.getMethod("children");
            Method threads = container.getMethod("threads");
            Object root = Class.forName("jdk.internal.vm.ThreadContainers").getMethod("root").invoke(null);
            collect(root, children, threads, prefix, out);
        } catch (ReflectiveOperationException | IllegalAccessError e) {
            throw new IllegalStateException("cannot list threads: run with --add-exports=java.base/jdk.internal.vm=ALL-UNNAMED", e);
        }
        return out;
    }

    private static void collect(Object container, Method children, Method threads, String prefix, List<String> out)
            throws ReflectiveOperationException {
        try (Stream<?> s = (Stream<?>) threads.invoke(container)) {
            s.map(t -> ((Thread) t).getName()).filter(n -> n.startsWith(prefix)).forEach(out::add);
        }
        List<?> kids;
        try (Stream<?> s = (Stream<?>) children.invoke(container)) {
            kids = s.toList();
        }
        for (Object child : kids) collect(child, children, threads, prefix, out);
    }
}
