package io.hcomm4j.monitor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the tuning table and the flight-recorder dumps need, so the core keeps its one dependency: {@link #parse} reads objects (as
 * insertion-ordered maps), arrays (lists), strings, numbers (doubles), booleans and null, strictly (RFC 8259, no
 * comments, nothing after the value); {@link #write} writes the same kinds back, objects one member a line.
 */
public final class Json {
    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    /** @throws IllegalArgumentException naming the offset and what was expected */
    public static Object parse(String text) {
        Json p = new Json(text);
        p.space();
        Object v = p.value();
        p.space();
        if (p.i != text.length()) throw p.error("end of input");
        return v;
    }

    private IllegalArgumentException error(String expected) {
        String at = i < s.length() ? "'" + s.charAt(i) + "'" : "the end";
        return new IllegalArgumentException("JSON: expected " + expected + " at offset " + i + ", found " + at);
    }

    private void space() {
        while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++;
    }

    private Object value() {
        if (i >= s.length()) throw error("a value");
        char c = s.charAt(i);
        return switch (c) {
            case '{' -> object();
            case '[' -> array();
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) yield number();
                throw error("a value");
            }
        };
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, i)) throw error(word);
        i += word.length();
        return v;
    }

    private Map<String, Object> object() {
        Map<String, Object> m = new LinkedHashMap<>();
        i++;
        space();
        if (i < s.length() && s.charAt(i) == '}') {
            i++;
            return m;
        }
        while (true) {
            space();
            if (i >= s.length() || s.charAt(i) != '"') throw error("a member name");
            String k = string();
            space();
            if (i >= s.length() || s.charAt(i) != ':') throw error("':'");
            i++;
            space();
            if (m.put(k, value()) != null) throw new IllegalArgumentException("JSON: member '" + k + "' twice");
            space();
            if (i < s.length() && s.charAt(i) == ',') {
                i++;
            } else if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return m;
            } else {
                throw error("',' or '}'");
            }
        }
    }

    private List<Object> array() {
        List<Object> l = new ArrayList<>();
        i++;
        space();
        if (i < s.length() && s.charAt(i) == ']') {
            i++;
            return l;
        }
        while (true) {
            space();
            l.add(value());
            space();
            if (i < s.length() && s.charAt(i) == ',') {
                i++;
            } else if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return l;
            } else {
                throw error("',' or ']'");
            }
        }
    }

    private String string() {
        StringBuilder b = new StringBuilder();
        i++;
        while (true) {
            if (i >= s.length()) throw error("'\"'");
            char c = s.charAt(i++);
            if (c == '"') return b.toString();
            if (c < 0x20) throw new IllegalArgumentException("JSON: control character in a string at offset " + (i - 1));
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (i >= s.length()) throw error("an escape");
            char e = s.charAt(i++);
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    if (i + 4 > s.length()) throw error("four hex digits");
                    try {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    } catch (NumberFormatException x) {
                        throw error("four hex digits");
                    }
                    i += 4;
                }
                default -> {
                    i--;
                    throw error("an escape");
                }
            }
        }
    }

    private Double number() {
        int start = i;
        if (s.charAt(i) == '-') i++;
        while (i < s.length() && "0123456789.eE+-".indexOf(s.charAt(i)) >= 0) i++;
        try {
            return Double.valueOf(s.substring(start, i));
        } catch (NumberFormatException e) {
            i = start;
            throw error("a number");
        }
    }

    /** {@code v} as JSON text: maps (string keys), lists, strings, numbers, booleans, null. */
    public static String write(Object v) {
        StringBuilder b = new StringBuilder();
        write(b, v, "");
        return b.append('\n').toString();
    }

    private static void write(StringBuilder b, Object v, String indent) {
        switch (v) {
            case null -> b.append("null");
            case Map<?, ?> m -> {
                if (m.isEmpty()) {
                    b.append("{}");
                    return;
                }
                b.append("{\n");
                int k = 0;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    b.append(indent).append("  ");
                    quote(b, (String) e.getKey());
                    b.append(": ");
                    write(b, e.getValue(), indent + "  ");
                    b.append(++k < m.size() ? ",\n" : "\n");
                }
                b.append(indent).append('}');
            }
            case List<?> l -> {
                // arrays of scalars on one line: a size sweep stays readable
                boolean flat = l.stream().noneMatch(x -> x instanceof Map || x instanceof List);
                b.append('[');
                for (int k = 0; k < l.size(); k++) {
                    if (k > 0) b.append(flat ? ", " : ",");
                    if (!flat) b.append('\n').append(indent).append("  ");
                    write(b, l.get(k), indent + "  ");
                }
                if (!flat && !l.isEmpty()) b.append('\n').append(indent);
                b.append(']');
            }
            case String str -> quote(b, str);
            case Double d when d == Math.rint(d) && Math.abs(d) < 1e15 -> b.append(d.longValue());
            case Float f -> write(b, f.doubleValue(), indent);
            case Double d -> {
                if (!Double.isFinite(d)) throw new IllegalArgumentException("JSON has no " + d);
                b.append(d);
            }
            case Number n -> b.append(n);
            case Boolean x -> b.append(x);
            default -> throw new IllegalArgumentException("not a JSON value: " + v.getClass().getName());
        }
    }

    private static void quote(StringBuilder b, String str) {
        b.append('"');
        for (int k = 0; k < str.length(); k++) {
            char c = str.charAt(k);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
                }
            }
        }
        b.append('"');
    }
}
