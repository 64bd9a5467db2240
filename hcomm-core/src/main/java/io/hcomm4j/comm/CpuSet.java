package io.hcomm4j.comm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;

/**
 * The CPUs a process may run on, as the kernel's list syntax ({@code 0-3,8,10-11}): what a rank publishes at init so
 * that the ranks of a host can tell whether together they have a CPU each. {@code availableProcessors()} alone cannot:
 * a rank bound to one CPU of its own (taskset, {@code hcomm launch --cpu-bind auto}, mpirun) sees 1, which says
 * nothing of whether its peers run on other CPUs.
 */
final class CpuSet {
    private CpuSet() {
    }

    /** This process's allowed CPUs ({@code Cpus_allowed_list} of /proc/self/status), or null where that is not readable. */
    static String own() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Cpus_allowed_list:")) {
                    String list = line.substring("Cpus_allowed_list:".length()).strip();
                    return parse(list) == null ? null : list;
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or /proc hidden: callers fall back to availableProcessors()
        }
        return null;
    }

    /** The CPUs of a list like {@code 0-3,8}, or null if it is not one. */
    static BitSet parse(String list) {
        if (list == null || list.isEmpty()) return null;
        BitSet cpus = new BitSet();
        try {
            for (String part : list.split(",")) {
                int dash = part.indexOf('-');
                int lo = Integer.parseInt(dash < 0 ? part : part.substring(0, dash));
                int hi = dash < 0 ? lo : Integer.parseInt(part.substring(dash + 1));
                if (lo < 0 || hi < lo || hi > 65_535) return null;
                cpus.set(lo, hi + 1);
            }
        } catch (NumberFormatException e) {
            return null;
        }
        return cpus.isEmpty() ? null : cpus;
    }

    /**
     * Whether {@code local} ranks of one host outnumber the CPUs they may use together: the union of their published
     * CPU lists ({@code null} entries: unknown). With any list unknown, this process's own
     * {@code availableProcessors()} is the count (what it was before ranks published their lists).
     */
    static boolean oversubscribed(int local, Iterable<String> lists, int availableHere) {
        BitSet union = new BitSet();
        for (String l : lists) {
            BitSet s = parse(l);
            if (s == null) return local > availableHere;
            union.or(s);
        }
        return local > union.cardinality();
    }
}
