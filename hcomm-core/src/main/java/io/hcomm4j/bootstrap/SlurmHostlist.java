package io.hcomm4j.bootstrap;

import java.util.ArrayList;
import java.util.List;

/**
 * Slurm's compressed host lists ({@code SLURM_JOB_NODELIST=node[01-04,07],gpu5}), read in Java so that a rank finds the
 * step's first node without running {@code scontrol show hostnames}. A list is host expressions separated by commas
 * outside brackets; an expression is text with bracketed groups of numbers and ranges ({@code [01-04,07]}), several
 * groups expanding to every combination ({@code rack[1-2]n[1-2]}: rack1n1, rack1n2, rack2n1, rack2n2) in that order; a
 * range keeps the width of its lower bound ({@code [08-10]}: 08, 09, 10).
 */
final class SlurmHostlist {
    /** More hosts than any cluster has: a longer expansion is a malformed list, not a job. */
    static final int MAX_HOSTS = 1 << 20;

    private SlurmHostlist() {
    }

    /** The first host of {@code list}, without expanding the rest. */
    static String first(String list) {
        List<String> exprs = expressions(list);
        StringBuilder sb = new StringBuilder();
        for (Object part : parts(exprs.getFirst())) sb.append(part instanceof String s ? s : ((List<?>) part).getFirst());
        return sb.toString();
    }

    /** Every host of {@code list}, in order. */
    static List<String> expand(String list) {
        List<String> out = new ArrayList<>();
        for (String e : expressions(list)) {
            List<String> hosts = List.of("");
            for (Object part : parts(e)) {
                List<?> choices = part instanceof String s ? List.of(s) : (List<?>) part;
                if ((long) hosts.size() * choices.size() + out.size() > MAX_HOSTS) {
                    throw new IllegalArgumentException("expands to more than " + MAX_HOSTS + " hosts");
                }
                List<String> next = new ArrayList<>(hosts.size() * choices.size());
                for (String h : hosts) for (Object c : choices) next.add(h + c);
                hosts = next;
            }
            out.addAll(hosts);
        }
        return out;
    }

    /** The host expressions of {@code list}: split at the commas outside brackets. */
    private static List<String> expressions(String list) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        int start = 0;
        String s = list.strip();
        for (int i = 0; i <= s.length(); i++) {
            char c = i < s.length() ? s.charAt(i) : ',';
            if (c == '[' && ++depth > 1) throw new IllegalArgumentException("nested '[' at position " + i);
            if (c == ']' && --depth < 0) throw new IllegalArgumentException("']' without '[' at position " + i);
            if (c == ',' && depth == 0) {
                String e = s.substring(start, Math.min(i, s.length())).strip();
                if (e.isEmpty()) throw new IllegalArgumentException("empty host name at position " + start);
                out.add(e);
                start = i + 1;
            }
        }
        if (depth != 0) throw new IllegalArgumentException("'[' without ']'");
        return out;
    }

    /** One expression as literal text (String) and bracketed groups (List of the numbers they stand for, as text). */
    private static List<Object> parts(String expr) {
        List<Object> out = new ArrayList<>();
        int i = 0;
        while (i < expr.length()) {
            int open = expr.indexOf('[', i);
            if (open < 0) {
                out.add(expr.substring(i));
                break;
            }
            if (open > i) out.add(expr.substring(i, open));
            int close = expr.indexOf(']', open);
            out.add(group(expr.substring(open + 1, close), expr));
            i = close + 1;
        }
        return out;
    }

    private static List<String> group(String body, String expr) {
        if (body.isEmpty()) throw new IllegalArgumentException("empty brackets in '" + expr + "'");
        List<String> out = new ArrayList<>();
        for (String item : body.split(",", -1)) {
            int dash = item.indexOf('-');
            String lo = dash < 0 ? item : item.substring(0, dash);
            String hi = dash < 0 ? item : item.substring(dash + 1);
            if (!digits(lo) || !digits(hi)) {
                throw new IllegalArgumentException("'" + item + "' in '" + expr + "' is not a number or a range such as 01-04");
            }
            long from = Long.parseLong(lo);
            long to = Long.parseLong(hi);
            if (to < from) throw new IllegalArgumentException("range '" + item + "' in '" + expr + "' runs backwards");
            if (to - from >= MAX_HOSTS) throw new IllegalArgumentException("range '" + item + "' in '" + expr + "' is too long");
            for (long n = from; n <= to; n++) out.add(pad(n, lo.length()));
        }
        return out;
    }

    private static boolean digits(String s) {
        return !s.isEmpty() && s.length() <= 18 && s.chars().allMatch(c -> c >= '0' && c <= '9');
    }

    private static String pad(long n, int width) {
        String s = Long.toString(n);
        return s.length() >= width ? s : "0".repeat(width - s.length()) + s;
    }
}
