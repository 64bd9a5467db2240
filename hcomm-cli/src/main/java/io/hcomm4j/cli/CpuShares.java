package io.hcomm4j.cli;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Which CPUs the launcher's ranks run on ({@link LocalLauncher.CpuBind#AUTO}): the CPUs this process may use, and each rank's share. */
final class CpuShares {
    private CpuShares() {
    }

    /**
     * The CPUs (a {@code taskset -c} list) local rank {@code local} of {@code ranks} gets out of {@code cpus}, or
     * null for no binding: an equal contiguous share when the CPUs suffice, else CPU {@code local mod cpus}.
     */
    static String cpuShare(List<Integer> cpus, int local, int ranks) {
        if (ranks < 1 || cpus.isEmpty()) return null;
        if (cpus.size() < ranks) return String.valueOf(cpus.get(local % cpus.size()));
        int per = cpus.size() / ranks;
        StringBuilder b = new StringBuilder();
        for (int i = local * per; i < (local + 1) * per; i++) {
            if (b.length() > 0) b.append(',');
            b.append(cpus.get(i));
        }
        return b.toString();
    }

    /** The CPUs this process may run on (Cpus_allowed_list of /proc/self/status), or 0..n-1 if unreadable. */
    static List<Integer> allowedCpus() {
        try {
            for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Cpus_allowed_list:")) return parseCpuList(line.substring(line.indexOf(':') + 1).trim());
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or an unexpected format: fall back to the count the JVM sees
        }
        List<Integer> all = new ArrayList<>();
        for (int i = 0; i < Runtime.getRuntime().availableProcessors(); i++) all.add(i);
        return all;
    }

    /** Parses a CPU list like {@code 0-3,8,10-11}. */
    static List<Integer> parseCpuList(String list) {
        List<Integer> cpus = new ArrayList<>();
        for (String part : list.split(",")) {
            if (part.isBlank()) continue;
            String[] range = part.trim().split("-");
            int from = Integer.parseInt(range[0]);
            int to = range.length > 1 ? Integer.parseInt(range[1]) : from;
            for (int c = from; c <= to; c++) cpus.add(c);
        }
        return cpus;
    }
}
