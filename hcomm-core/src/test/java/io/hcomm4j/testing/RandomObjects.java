package io.hcomm4j.testing;

import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Seeded random values of every kind {@code ObjectCodec.standard()} encodes (nested lists, sets and maps, strings with
 * non-ASCII, surrogate pairs and unpaired surrogates, NaNs, empty and null elements), and a deep comparison that also
 * holds decoded collections to the original's iteration order and to the types the codec decodes them as.
 */
public final class RandomObjects {
    private RandomObjects() {
    }

    /** A random value nesting up to {@code depth} levels of collections. */
    public static Object value(Random random, int depth) {
        int kind = random.nextInt(depth > 0 ? 24 : 20);
        return switch (kind) {
            case 0 -> null;
            case 1 -> random.nextBoolean();
            case 2 -> (byte) random.nextInt();
            case 3 -> (short) random.nextInt();
            case 4 -> (char) random.nextInt(0x10000);
            case 5 -> random.nextInt();
            case 6 -> random.nextLong();
            case 7 -> random.nextInt(8) == 0 ? Float.NaN : random.nextFloat() * 1e6f - 5e5f;
            case 8 -> random.nextInt(8) == 0 ? Double.NEGATIVE_INFINITY : random.nextGaussian();
            case 9, 10 -> string(random);
            case 11 -> bytes(random, random.nextInt(40));
            case 12 -> {
                short[] a = new short[random.nextInt(20)];
                for (int i = 0; i < a.length; i++) a[i] = (short) random.nextInt();
                yield a;
            }
            case 13 -> string(random).toCharArray();
            case 14 -> random.ints(random.nextInt(20)).toArray();
            case 15 -> random.longs(random.nextInt(20)).toArray();
            case 16 -> {
                float[] a = new float[random.nextInt(20)];
                for (int i = 0; i < a.length; i++) a[i] = random.nextFloat();
                yield a;
            }
            case 17 -> random.doubles(random.nextInt(20)).toArray();
            case 18 -> {
                boolean[] a = new boolean[random.nextInt(20)];
                for (int i = 0; i < a.length; i++) a[i] = random.nextBoolean();
                yield a;
            }
            case 19 -> "";
            case 20, 21 -> {
                List<Object> list = new ArrayList<>();
                for (int i = random.nextInt(6); i > 0; i--) list.add(value(random, depth - 1));
                yield random.nextBoolean() ? list : List.copyOf(list.stream().filter(e -> e != null).toList());
            }
            case 22 -> {
                // elements with value equality (arrays have none, so a set of arrays could not be compared)
                Set<Object> set = new LinkedHashSet<>();
                for (int i = random.nextInt(6); i > 0; i--) set.add(random.nextBoolean() ? string(random) : (Object) random.nextLong());
                if (random.nextInt(4) == 0) set.add(null);
                yield set;
            }
            default -> {
                Map<Object, Object> map = new LinkedHashMap<>();
                for (int i = random.nextInt(6); i > 0; i--) {
                    Object key = random.nextBoolean() ? string(random) : (Object) random.nextInt(1000);
                    map.put(key, value(random, depth - 1));
                }
                yield map;
            }
        };
    }

    /** A random string: ASCII, Latin-1, CJK, emoji (surrogate pairs), and now and then an unpaired surrogate. */
    public static String string(Random random) {
        StringBuilder sb = new StringBuilder();
        for (int i = random.nextInt(24); i > 0; i--) {
            switch (random.nextInt(6)) {
                case 0 -> sb.append((char) (' ' + random.nextInt(95)));
                case 1 -> sb.append((char) (0xA0 + random.nextInt(0x60)));
                case 2 -> sb.append((char) (0x4E00 + random.nextInt(0x5000)));
                case 3 -> sb.appendCodePoint(0x1F600 + random.nextInt(0x50));
                case 4 -> sb.append(random.nextInt(10) == 0 ? (char) (0xD800 + random.nextInt(0x800)) : 'é');
                default -> sb.append("Grüße, 世界");
            }
        }
        return sb.toString();
    }

    /** {@code n} random bytes. */
    public static byte[] bytes(Random random, int n) {
        byte[] a = new byte[n];
        random.nextBytes(a);
        return a;
    }

    /**
     * Whether {@code decoded} is {@code expected} as the standard codec gives it back: arrays element by element, lists
     * as ArrayList, sets as LinkedHashSet, maps as LinkedHashMap, each in the original's iteration order, records
     * component by component; otherwise {@code equals}. The first difference, or null.
     */
    public static String difference(Object expected, Object decoded) {
        return difference(expected, decoded, "value");
    }

    private static String difference(Object expected, Object decoded, String at) {
        if (expected == null || decoded == null) {
            return expected == decoded ? null : at + ": expected " + brief(expected) + ", got " + brief(decoded);
        }
        if (expected.getClass().isArray()) {
            if (expected.getClass() != decoded.getClass()) return at + ": expected a " + expected.getClass().getSimpleName() + ", got " + brief(decoded);
            return Arrays.deepEquals(new Object[] {expected}, new Object[] {decoded}) ? null : at + ": arrays differ";
        }
        if (expected instanceof List<?> e) {
            if (!(decoded instanceof ArrayList<?> d)) return at + ": expected an ArrayList, got " + brief(decoded);
            return sequence(e, d, at);
        }
        if (expected instanceof Set<?> e) {
            if (!(decoded instanceof LinkedHashSet<?> d)) return at + ": expected a LinkedHashSet, got " + brief(decoded);
            return sequence(e, d, at);
        }
        if (expected instanceof Map<?, ?> e) {
            if (!(decoded instanceof LinkedHashMap<?, ?> d)) return at + ": expected a LinkedHashMap, got " + brief(decoded);
            String keys = sequence(e.keySet(), d.keySet(), at + ".keys");
            if (keys != null) return keys;
            for (Map.Entry<?, ?> entry : e.entrySet()) {
                String diff = difference(entry.getValue(), d.get(entry.getKey()), at + "[" + entry.getKey() + "]");
                if (diff != null) return diff;
            }
            return null;
        }
        if (expected instanceof Record r) {
            if (decoded.getClass() != r.getClass()) return at + ": expected a " + r.getClass().getName() + ", got " + brief(decoded);
            try {
                for (RecordComponent c : r.getClass().getRecordComponents()) {
                    c.getAccessor().setAccessible(true);
                    String diff = difference(c.getAccessor().invoke(r), c.getAccessor().invoke(decoded), at + "." + c.getName());
                    if (diff != null) return diff;
                }
            } catch (ReflectiveOperationException ex) {
                throw new AssertionError(ex);
            }
            return null;
        }
        if (expected.getClass() != decoded.getClass() || !expected.equals(decoded)) {
            return at + ": expected " + brief(expected) + ", got " + brief(decoded);
        }
        return null;
    }

    private static String sequence(Iterable<?> expected, Iterable<?> decoded, String at) {
        Iterator<?> d = decoded.iterator();
        int i = 0;
        for (Object e : expected) {
            if (!d.hasNext()) return at + ": ends after " + i + " elements";
            String diff = difference(e, d.next(), at + "[" + i + "]");
            if (diff != null) return diff;
            i++;
        }
        return d.hasNext() ? at + ": has more than " + i + " elements" : null;
    }

    private static String brief(Object o) {
        if (o == null) return "null";
        String s = String.valueOf(o);
        return o.getClass().getSimpleName() + " " + (s.length() > 60 ? s.substring(0, 60) + "..." : s);
    }
}
