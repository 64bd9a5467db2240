package io.hcomm4j.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Process checks for launcher tests. */
final class Processes {
    private static final Pattern PID = Pattern.compile("pid=(\\d+)");

    private Processes() {
    }

    /** Every {@code pid=N} that appears in {@code text}. */
    static List<Long> pidsIn(String text) {
        List<Long> pids = new ArrayList<>();
        Matcher m = PID.matcher(text);
        while (m.find()) pids.add(Long.parseLong(m.group(1)));
        return pids;
    }

    /** True while the process {@code pid} runs (a zombie does not count). */
    static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** Waits up to {@code millis} for {@code text} to name {@code count} pids. */
    static List<Long> awaitPids(java.util.function.Supplier<String> text, int count, long millis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + millis;
        List<Long> pids = pidsIn(text.get());
        while (pids.size() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
            pids = pidsIn(text.get());
        }
        return pids;
    }
}
