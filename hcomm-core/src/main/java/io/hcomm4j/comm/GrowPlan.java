package io.hcomm4j.comm;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * What the leader of a grow decided, as published in the store ({@code hcomm/<gen>/grow/<round>/plan}): the new
 * communicator's id and members (world ranks, in rank order: the old members, then the joiners), and for each joiner
 * (by its ticket, the order in which it registered) the world rank slot it takes over and its incarnation; or why the
 * grow cannot be done.
 */
record GrowPlan(long id, long[] tickets, int[] slots, long[] incarnations, int[] members, String error) {
    static GrowPlan failed(String error) {
        return new GrowPlan(0, new long[0], new int[0], new long[0], new int[0], error);
    }

    byte[] encode() {
        String s = error != null ? "error=" + error
                : "id=" + id + "\ntickets=" + join(Arrays.stream(tickets).mapToObj(Long::toString).toArray(String[]::new))
                + "\nslots=" + join(Arrays.stream(slots).mapToObj(Integer::toString).toArray(String[]::new))
                + "\nincarnations=" + join(Arrays.stream(incarnations).mapToObj(Long::toString).toArray(String[]::new))
                + "\nmembers=" + join(Arrays.stream(members).mapToObj(Integer::toString).toArray(String[]::new));
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static GrowPlan decode(byte[] v) {
        String s = new String(v, StandardCharsets.UTF_8);
        if (s.startsWith("error=")) return failed(s.substring(6));
        Map<String, String> kv = new HashMap<>();
        for (String line : s.split("\n")) {
            int eq = line.indexOf('=');
            kv.put(line.substring(0, eq), line.substring(eq + 1));
        }
        return new GrowPlan(Long.parseLong(kv.get("id")), longs(kv.get("tickets")), ints(kv.get("slots")),
                longs(kv.get("incarnations")), ints(kv.get("members")), null);
    }

    /** The index of {@code ticket} among the joiners, or -1. */
    int joinerIndex(long ticket) {
        for (int i = 0; i < tickets.length; i++) if (tickets[i] == ticket) return i;
        return -1;
    }

    boolean isMember(int worldRank) {
        for (int m : members) if (m == worldRank) return true;
        return false;
    }

    private static String join(String[] parts) {
        return String.join(",", parts);
    }

    private static long[] longs(String s) {
        return s.isEmpty() ? new long[0] : Arrays.stream(s.split(",")).mapToLong(Long::parseLong).toArray();
    }

    private static int[] ints(String s) {
        return s.isEmpty() ? new int[0] : Arrays.stream(s.split(",")).mapToInt(Integer::parseInt).toArray();
    }
}
