package io.hcomm4j;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.RecordComponent;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * {@link ObjectCodec#standard()}: the tagged binary format that {@link ObjectCodec}'s Javadoc specifies, written by
 * {@link #encode} and read by {@link #decode(byte[], int, int)} in place. Records and enums only from the list the codec
 * was made with, looked up by name in that list.
 */
final class StandardObjectCodec implements ObjectCodec<Object> {
    static final StandardObjectCodec PLAIN = new StandardObjectCodec(new Class<?>[0]);

    /** The first byte of every encoding: the format's version. */
    static final byte FORMAT = 1;
    /** Deeper nesting is refused both ways: a value that contains itself would otherwise recurse until the stack ends. */
    static final int MAX_DEPTH = 512;
    /** The largest byte[] a JVM allocates reliably. */
    static final int MAX_ARRAY = Integer.MAX_VALUE - 8;
    /**
     * Collections are sized for at most this many elements before they are read: 512 nested lists that each claim as
     * many elements as there are bytes left would otherwise reserve 512 times the message before the first one failed.
     */
    private static final int PRESIZE_MAX = 1024;

    static final byte NULL = 0x00, FALSE = 0x01, TRUE = 0x02, BYTE = 0x03, SHORT = 0x04, CHAR = 0x05, INT = 0x06, LONG = 0x07,
            FLOAT = 0x08, DOUBLE = 0x09, STRING = 0x0A, STRING_UTF16 = 0x0B;
    static final byte BYTES = 0x10, SHORTS = 0x11, CHARS = 0x12, INTS = 0x13, LONGS = 0x14, FLOATS = 0x15, DOUBLES = 0x16,
            BOOLEANS = 0x17;
    static final byte LIST = 0x20, SET = 0x21, MAP = 0x22, RECORD = 0x30, ENUM = 0x31;

    private static final VarHandle SHORT_LE = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle CHAR_LE = MethodHandles.byteArrayViewVarHandle(char[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INT_LE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort SHORTS_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfChar CHARS_LE = ValueLayout.JAVA_CHAR_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INTS_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONGS_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOATS_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble DOUBLES_LE = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The classes decoding can make of the standard types: what a record component must be able to hold. */
    private static final List<Class<?>> DECODED = List.of(Boolean.class, Byte.class, Short.class, Character.class,
            Integer.class, Long.class, Float.class, Double.class, String.class, byte[].class, short[].class, char[].class,
            int[].class, long[].class, float[].class, double[].class, boolean[].class, ArrayList.class, LinkedHashSet.class,
            LinkedHashMap.class);

    /** A record class the codec was given: its canonical constructor and its components' accessors, made accessible. */
    private record RecordType(Class<?> type, Constructor<?> constructor, RecordComponent[] components, Method[] accessors) {
    }

    /** An enum class the codec was given: its constants by name. */
    private record EnumType(Class<?> type, Map<String, Enum<?>> constants) {
    }

    private final Map<String, RecordType> records = new HashMap<>();
    private final Map<String, EnumType> enums = new HashMap<>();
    private final String description;

    StandardObjectCodec(Class<?>[] recordAndEnumTypes) {
        StringBuilder names = new StringBuilder();
        for (Class<?> c : recordAndEnumTypes) {
            if (c == null) throw new IllegalArgumentException("ObjectCodec.standard: a class is null");
            if (records.containsKey(c.getName()) || enums.containsKey(c.getName())) {
                throw new IllegalArgumentException("ObjectCodec.standard: " + c.getName() + " is given twice");
            }
            if (c.isRecord()) {
                records.put(c.getName(), recordType(c));
            } else if (c.isEnum()) {
                Map<String, Enum<?>> constants = new HashMap<>();
                for (Object e : c.getEnumConstants()) constants.put(((Enum<?>) e).name(), (Enum<?>) e);
                enums.put(c.getName(), new EnumType(c, constants));
            } else {
                throw new IllegalArgumentException("ObjectCodec.standard takes record and enum classes; " + c.getName()
                        + " is neither: write an ObjectCodec for it, or use ObjectCodec.javaSerialization("
                        + c.getSimpleName() + ".class)");
            }
            names.append(names.isEmpty() ? "" : ", ").append(c.getSimpleName());
        }
        description = "ObjectCodec.standard(" + names + ")";
        for (RecordType r : records.values()) {
            for (RecordComponent rc : r.components()) checkDecodable(r.type(), rc);
        }
    }

    private static RecordType recordType(Class<?> c) {
        RecordComponent[] components = c.getRecordComponents();
        Class<?>[] types = new Class<?>[components.length];
        Method[] accessors = new Method[components.length];
        for (int i = 0; i < components.length; i++) {
            types[i] = components[i].getType();
            accessors[i] = components[i].getAccessor();
        }
        try {
            Constructor<?> constructor = c.getDeclaredConstructor(types);
            boolean reachable = constructor.trySetAccessible();
            for (Method m : accessors) reachable &= m.trySetAccessible();
            if (!reachable) {
                throw new IllegalArgumentException("ObjectCodec.standard: record " + c.getName() + " is not accessible to "
                        + "io.hcomm4j: make it public in an exported package, or open its package to io.hcomm4j.core");
            }
            return new RecordType(c, constructor, components, accessors);
        } catch (NoSuchMethodException e) {
            throw new IllegalArgumentException("ObjectCodec.standard: record " + c.getName() + " has no canonical constructor",
                    e);
        }
    }

    /** Refuses, when the codec is made, a record component that no decoded value could fill. */
    private void checkDecodable(Class<?> record, RecordComponent rc) {
        Class<?> t = rc.getType();
        if (t.isPrimitive()) return;
        for (Class<?> d : DECODED) if (t.isAssignableFrom(d)) return;
        for (RecordType r : records.values()) if (t.isAssignableFrom(r.type())) return;
        for (EnumType e : enums.values()) if (t.isAssignableFrom(e.type())) return;
        throw new IllegalArgumentException("ObjectCodec.standard: component " + rc.getName() + " of record " + record.getName()
                + " is a " + t.getName() + ", which this codec never decodes (it decodes collections as ArrayList, "
                + "LinkedHashSet, LinkedHashMap; a record or enum only if it is given too)");
    }

    @Override
    public String toString() {
        return description;
    }

    // ------------------------------------------------------------------------------------ encoding

    @Override
    public byte[] encode(Object value) {
        Writer out = new Writer();
        out.put(FORMAT);
        try {
            write(out, value, 0);
        } catch (Refusal r) {
            throw new IllegalArgumentException(description + " cannot encode " + r.path("value") + ": " + r.getMessage());
        }
        return out.toArray();
    }

    private void write(Writer out, Object value, int depth) {
        if (depth > MAX_DEPTH) throw new Refusal("it nests deeper than " + MAX_DEPTH + " levels (does it contain itself?)");
        switch (value) {
            case null -> out.put(NULL);
            case String s -> writeString(out, s);
            case Integer i -> out.put(INT).putInt(i);
            case Long l -> out.put(LONG).putLong(l);
            case Double d -> out.put(DOUBLE).putLong(Double.doubleToRawLongBits(d));
            case Float f -> out.put(FLOAT).putInt(Float.floatToRawIntBits(f));
            case Boolean b -> out.put(b ? TRUE : FALSE);
            case Byte b -> out.put(BYTE).put(b);
            case Short s -> out.put(SHORT).putShort(s);
            case Character c -> out.put(CHAR).putChar(c);
            case byte[] a -> out.put(BYTES).putBytes(a);
            case short[] a -> out.put(SHORTS).putArray(a, SHORTS_LE, a.length);
            case char[] a -> out.put(CHARS).putArray(a, CHARS_LE, a.length);
            case int[] a -> out.put(INTS).putArray(a, INTS_LE, a.length);
            case long[] a -> out.put(LONGS).putArray(a, LONGS_LE, a.length);
            case float[] a -> out.put(FLOATS).putArray(a, FLOATS_LE, a.length);
            case double[] a -> out.put(DOUBLES).putArray(a, DOUBLES_LE, a.length);
            case boolean[] a -> {
                out.put(BOOLEANS).putInt(a.length).ensure(a.length);
                for (boolean b : a) out.buf[out.pos++] = (byte) (b ? 1 : 0);
            }
            case Record r -> writeRecord(out, r, depth);
            case Enum<?> e -> writeEnum(out, e);
            case List<?> list -> writeElements(out.put(LIST), list, depth, "[", "]");
            case Set<?> set -> writeElements(out.put(SET), set, depth, "{element ", "}");
            case Map<?, ?> map -> writeMap(out.put(MAP), map, depth);
            default -> throw new Refusal("a " + value.getClass().getName() + " is none of the types it encodes (null, String, "
                    + "Boolean, Byte, Short, Character, Integer, Long, Float, Double, their primitive arrays, List, Set, Map, "
                    + "and the records and enums named in ObjectCodec.standard(Class...)); pass the call an ObjectCodec of "
                    + "your own, ObjectCodec.standard(YourRecord.class) or ObjectCodec.javaSerialization(allowed classes)");
        }
    }

    private static void writeString(Writer out, String s) {
        if (wellFormed(s)) {
            out.put(STRING).putBytes(s.getBytes(StandardCharsets.UTF_8));
        } else {
            char[] units = s.toCharArray();
            out.put(STRING_UTF16).putArray(units, CHARS_LE, units.length);
        }
    }

    /** True unless {@code s} holds a surrogate that is not part of a pair (UTF-8 would turn it into '?'). */
    private static boolean wellFormed(String s) {
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (!Character.isSurrogate(c)) continue;
            if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) i++;
            else return false;
        }
        return true;
    }

    private void writeElements(Writer out, Iterable<?> elements, int depth, String open, String close) {
        int countAt = out.reserveInt();
        int i = 0;
        for (Object e : elements) {
            try {
                write(out, e, depth + 1);
            } catch (Refusal r) {
                throw r.at(open + i + close);
            }
            i++;
        }
        out.patchInt(countAt, i); // the count of what was written, whatever size() said
    }

    private void writeMap(Writer out, Map<?, ?> map, int depth) {
        int countAt = out.reserveInt();
        int i = 0;
        for (Map.Entry<?, ?> e : map.entrySet()) {
            try {
                write(out, e.getKey(), depth + 1);
            } catch (Refusal r) {
                throw r.at("{key " + i + "}");
            }
            try {
                write(out, e.getValue(), depth + 1);
            } catch (Refusal r) {
                throw r.at("[" + keyText(e.getKey()) + "]");
            }
            i++;
        }
        out.patchInt(countAt, i);
    }

    private static String keyText(Object key) {
        String s = key instanceof String str ? '"' + str + '"' : String.valueOf(key);
        return s.length() > 40 ? s.substring(0, 37) + "..." : s;
    }

    private void writeRecord(Writer out, Record r, int depth) {
        RecordType type = records.get(r.getClass().getName());
        if (type == null || type.type() != r.getClass()) {
            throw new Refusal("record " + r.getClass().getName() + " is not one the codec was given: use ObjectCodec.standard("
                    + r.getClass().getSimpleName() + ".class, ...) on every rank");
        }
        out.put(RECORD).putBytes(r.getClass().getName().getBytes(StandardCharsets.UTF_8)).putInt(type.accessors().length);
        for (int i = 0; i < type.accessors().length; i++) {
            Object component;
            try {
                component = type.accessors()[i].invoke(r);
            } catch (InvocationTargetException | IllegalAccessException e) {
                Throwable cause = e instanceof InvocationTargetException ite ? ite.getCause() : e;
                String name = type.components()[i].getName();
                throw new Refusal("its accessor " + name + "() threw " + cause).at("." + name);
            }
            try {
                write(out, component, depth + 1);
            } catch (Refusal refusal) {
                throw refusal.at("." + type.components()[i].getName());
            }
        }
    }

    private void writeEnum(Writer out, Enum<?> e) {
        String name = e.getDeclaringClass().getName();
        EnumType type = enums.get(name);
        if (type == null || type.constants().get(e.name()) != e) {
            throw new Refusal("enum " + name + " is not one the codec was given: use ObjectCodec.standard("
                    + e.getDeclaringClass().getSimpleName() + ".class, ...) on every rank");
        }
        out.put(ENUM).putBytes(name.getBytes(StandardCharsets.UTF_8)).putBytes(e.name().getBytes(StandardCharsets.UTF_8));
    }

    /** Why a value cannot be encoded, and where in it (built on the way out, so a value that encodes pays nothing). */
    private static final class Refusal extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final StringBuilder path = new StringBuilder();

        Refusal(String reason) {
            super(reason, null, false, false);
        }

        Refusal at(String step) {
            path.insert(0, step);
            return this;
        }

        String path(String root) {
            return path.isEmpty() ? "the value" : root + path;
        }
    }

    /** A growing byte[]; at most {@link #MAX_ARRAY} bytes. */
    private static final class Writer {
        byte[] buf = new byte[256];
        int pos;

        Writer ensure(long more) {
            long need = pos + more;
            if (need > buf.length) {
                if (need > MAX_ARRAY) {
                    throw new Refusal("its encoding exceeds " + MAX_ARRAY + " bytes, the most a byte[] holds");
                }
                buf = java.util.Arrays.copyOf(buf, (int) Math.min(MAX_ARRAY, Math.max(need, 2L * buf.length)));
            }
            return this;
        }

        Writer put(byte b) {
            ensure(1);
            buf[pos++] = b;
            return this;
        }

        Writer putShort(short v) {
            ensure(2);
            SHORT_LE.set(buf, pos, v);
            pos += 2;
            return this;
        }

        Writer putChar(char v) {
            ensure(2);
            CHAR_LE.set(buf, pos, v);
            pos += 2;
            return this;
        }

        Writer putInt(int v) {
            ensure(4);
            INT_LE.set(buf, pos, v);
            pos += 4;
            return this;
        }

        Writer putLong(long v) {
            ensure(8);
            LONG_LE.set(buf, pos, v);
            pos += 8;
            return this;
        }

        /** Length, then the bytes. */
        Writer putBytes(byte[] a) {
            putInt(a.length).ensure(a.length);
            System.arraycopy(a, 0, buf, pos, a.length);
            pos += a.length;
            return this;
        }

        /** Length, then the elements of a primitive array, little-endian. */
        Writer putArray(Object array, ValueLayout layout, int n) {
            long bytes = n * layout.byteSize();
            putInt(n).ensure(bytes);
            MemorySegment.copy(array, 0, MemorySegment.ofArray(buf), layout, pos, n);
            pos += (int) bytes;
            return this;
        }

        /** Room for an int filled in later ({@link #patchInt}); its offset. */
        int reserveInt() {
            putInt(0);
            return pos - 4;
        }

        void patchInt(int at, int v) {
            INT_LE.set(buf, at, v);
        }

        byte[] toArray() {
            return java.util.Arrays.copyOf(buf, pos);
        }
    }

    // ------------------------------------------------------------------------------------ decoding

    @Override
    public Object decode(byte[] bytes) {
        return decode(bytes, 0, bytes.length);
    }

    @Override
    public Object decode(byte[] bytes, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        Reader in = new Reader(bytes, offset, offset + length);
        if (length == 0 || in.get() != FORMAT) {
            throw in.malformed("the first byte is not the format byte " + FORMAT + " (bytes of another codec?)");
        }
        Object value = read(in, 0);
        if (in.pos != in.end) throw in.malformed((in.end - in.pos) + " bytes follow the value");
        return value;
    }

    private Object read(Reader in, int depth) {
        if (depth > MAX_DEPTH) throw in.malformed("values nest deeper than " + MAX_DEPTH + " levels");
        byte tag = in.get();
        return switch (tag) {
            case NULL -> null;
            case FALSE -> Boolean.FALSE;
            case TRUE -> Boolean.TRUE;
            case BYTE -> in.get();
            case SHORT -> (short) SHORT_LE.get(in.take(2), in.pos - 2);
            case CHAR -> (char) CHAR_LE.get(in.take(2), in.pos - 2);
            case INT -> in.getInt();
            case LONG -> in.getLong();
            case FLOAT -> Float.intBitsToFloat(in.getInt());
            case DOUBLE -> Double.longBitsToDouble(in.getLong());
            case STRING -> in.utf8("a String");
            case STRING_UTF16 -> new String((char[]) in.array(new char[in.length(2, "a String")], CHARS_LE));
            case BYTES -> {
                byte[] a = new byte[in.length(1, "a byte[]")];
                System.arraycopy(in.take(a.length), in.pos - a.length, a, 0, a.length);
                yield a;
            }
            case SHORTS -> in.array(new short[in.length(2, "a short[]")], SHORTS_LE);
            case CHARS -> in.array(new char[in.length(2, "a char[]")], CHARS_LE);
            case INTS -> in.array(new int[in.length(4, "an int[]")], INTS_LE);
            case LONGS -> in.array(new long[in.length(8, "a long[]")], LONGS_LE);
            case FLOATS -> in.array(new float[in.length(4, "a float[]")], FLOATS_LE);
            case DOUBLES -> in.array(new double[in.length(8, "a double[]")], DOUBLES_LE);
            case BOOLEANS -> {
                boolean[] a = new boolean[in.length(1, "a boolean[]")];
                for (int i = 0; i < a.length; i++) {
                    byte b = in.get();
                    if (b != 0 && b != 1) throw in.malformed("a boolean[] element is " + b + ", not 0 or 1");
                    a[i] = b == 1;
                }
                yield a;
            }
            case LIST -> {
                int n = in.length(1, "a List"); // every value takes a byte at least: no claim of more than the bytes left
                List<Object> list = new ArrayList<>(Math.min(n, PRESIZE_MAX));
                for (int i = 0; i < n; i++) list.add(read(in, depth + 1));
                yield list;
            }
            case SET -> {
                int n = in.length(1, "a Set");
                Set<Object> set = LinkedHashSet.newLinkedHashSet(Math.min(n, PRESIZE_MAX));
                for (int i = 0; i < n; i++) set.add(read(in, depth + 1));
                yield set;
            }
            case MAP -> {
                int n = in.length(2, "a Map");
                Map<Object, Object> map = LinkedHashMap.newLinkedHashMap(Math.min(n, PRESIZE_MAX));
                for (int i = 0; i < n; i++) {
                    Object key = read(in, depth + 1);
                    map.put(key, read(in, depth + 1));
                }
                yield map;
            }
            case RECORD -> readRecord(in, depth);
            case ENUM -> readEnum(in);
            default -> throw in.malformed("unknown tag " + tag);
        };
    }

    private Object readRecord(Reader in, int depth) {
        String name = in.utf8("a record's class name");
        RecordType type = records.get(name);
        if (type == null) {
            throw new IllegalArgumentException(description + " refuses to decode a record " + name + ": it was not given "
                    + "that class (ObjectCodec.standard(" + simpleName(name) + ".class, ...) on every rank)");
        }
        RecordComponent[] components = type.components();
        int n = in.length(1, "a record");
        if (n != components.length) {
            throw in.malformed("record " + name + " has " + components.length + " components, the bytes " + n);
        }
        Object[] args = new Object[n];
        for (int i = 0; i < n; i++) {
            Object v = read(in, depth + 1);
            Class<?> t = components[i].getType();
            boolean fits = t.isPrimitive() ? v != null && MethodType.methodType(t).wrap().returnType().isInstance(v)
                    : v == null || t.isInstance(v);
            if (!fits) {
                throw new IllegalArgumentException(description + " cannot decode record " + name + ": its component "
                        + components[i].getName() + " is a " + t.getName() + ", the bytes hold "
                        + (v == null ? "null" : "a " + v.getClass().getName()));
            }
            args[i] = v;
        }
        try {
            return type.constructor().newInstance(args);
        } catch (InvocationTargetException e) {
            throw new IllegalArgumentException(description + " cannot decode record " + name + ": its constructor refused the "
                    + "decoded components: " + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException(description + " cannot decode record " + name + ": " + e, e);
        }
    }

    private Object readEnum(Reader in) {
        String name = in.utf8("an enum's class name");
        EnumType type = enums.get(name);
        if (type == null) {
            throw new IllegalArgumentException(description + " refuses to decode an enum " + name + ": it was not given that "
                    + "class (ObjectCodec.standard(" + simpleName(name) + ".class, ...) on every rank)");
        }
        String constant = in.utf8("an enum constant's name");
        Enum<?> e = type.constants().get(constant);
        if (e == null) throw new IllegalArgumentException(description + ": enum " + name + " has no constant " + constant);
        return e;
    }

    /** {@code a.b.Outer$Inner} as source names it: {@code Outer.Inner}. */
    private static String simpleName(String className) {
        return className.substring(className.lastIndexOf('.') + 1).replace('$', '.');
    }

    /** The bytes of one decode; every read checks that the bytes are there. */
    private final class Reader {
        final byte[] buf;
        final int start;
        final int end;
        int pos;

        Reader(byte[] buf, int start, int end) {
            this.buf = buf;
            this.start = start;
            this.end = end;
            this.pos = start;
        }

        IllegalArgumentException malformed(String what) {
            return new IllegalArgumentException("not an encoding of " + description + ": " + what + " (at byte " + (pos - start)
                    + " of " + (end - start) + ")");
        }

        /** Advances past {@code n} bytes, which must be there; the buffer, to read them at {@code pos - n}. */
        byte[] take(long n) {
            if (n > end - pos) throw malformed("it ends within a value (" + n + " bytes needed, " + (end - pos) + " left)");
            pos += (int) n;
            return buf;
        }

        byte get() {
            return take(1)[pos - 1];
        }

        int getInt() {
            return (int) INT_LE.get(take(4), pos - 4);
        }

        long getLong() {
            return (long) LONG_LE.get(take(8), pos - 8);
        }

        /** A length of elements of {@code elementBytes} bytes each (at least), checked against the bytes left. */
        int length(int elementBytes, String what) {
            int n = getInt();
            if (n < 0) throw malformed("the length of " + what + " is " + n);
            if ((long) n * elementBytes > end - pos) {
                throw malformed("the length of " + what + " is " + n + ", more than the " + (end - pos) + " bytes left hold");
            }
            return n;
        }

        String utf8(String what) {
            int n = length(1, what);
            String s = new String(buf, pos, n, StandardCharsets.UTF_8);
            pos += n;
            return s;
        }

        /** Fills a primitive array of {@code layout}'s elements (its length already checked) and returns it. */
        Object array(Object array, ValueLayout layout) {
            int n = java.lang.reflect.Array.getLength(array);
            take(n * layout.byteSize());
            MemorySegment.copy(MemorySegment.ofArray(buf), layout, pos - n * layout.byteSize(), array, 0, n);
            return array;
        }
    }
}
