package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.testing.RandomObjects;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputFilter;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The codecs on their own: round trips over seeded random values, refusals and their messages, hostile bytes. */
class ObjectCodecTest {
    record Point(int x, int y) {
    }

    enum Color { RED, GREEN { @Override public String toString() { return "green"; } }, BLUE }

    record Shape(String name, List<Point> corners, Color color, double[] weights, Map<String, Object> extra) {
    }

    record Range(int lo, int hi) {
        Range {
            if (lo > hi) throw new IllegalArgumentException("lo " + lo + " > hi " + hi);
        }
    }

    record Sorted(TreeMap<String, Integer> map) {
    }

    /** Serializable, for the Java-serialization codec. */
    static final class Payload implements Serializable {
        private static final long serialVersionUID = 1L;
        final String name;
        final int[] values;

        Payload(String name, int[] values) {
            this.name = name;
            this.values = values;
        }
    }

    private static final ObjectCodec<Object> STANDARD = ObjectCodec.standard();

    @Test
    void randomValuesComeBackEqualInOrderAndInTheDecodedTypes() {
        Random random = new Random(20240917L);
        for (int i = 0; i < 3000; i++) {
            Object value = RandomObjects.value(random, 4);
            byte[] bytes = STANDARD.encode(value);
            assertThat(bytes[0]).isEqualTo((byte) 1);
            assertThat(RandomObjects.difference(value, STANDARD.decode(bytes))).as("value %d: %s", i, value).isNull();
            // in place, from a slice of a larger buffer (what the collectives and recvObject do)
            byte[] padded = new byte[bytes.length + 10];
            System.arraycopy(bytes, 0, padded, 7, bytes.length);
            assertThat(RandomObjects.difference(value, STANDARD.decode(padded, 7, bytes.length))).isNull();
        }
    }

    @Test
    void theWireFormatIsTheDocumentedOne() {
        assertThat(STANDARD.encode(null)).containsExactly(1, 0x00);
        assertThat(STANDARD.encode(true)).containsExactly(1, 0x02);
        assertThat(STANDARD.encode(0x01020304)).containsExactly(1, 0x06, 4, 3, 2, 1);
        assertThat(STANDARD.encode("é")).containsExactly(1, 0x0A, 2, 0, 0, 0, 0xC3, 0xA9);
        assertThat(STANDARD.encode("\uD800")).containsExactly(1, 0x0B, 1, 0, 0, 0, 0x00, 0xD8);
        assertThat(STANDARD.encode(List.of((byte) 7))).containsExactly(1, 0x20, 1, 0, 0, 0, 0x03, 7);
        assertThat(STANDARD.encode(new long[] {-2})).containsExactly(1, 0x14, 1, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF);
        Map<String, Boolean> m = new LinkedHashMap<>();
        m.put("a", false);
        assertThat(STANDARD.encode(m)).containsExactly(1, 0x22, 1, 0, 0, 0, 0x0A, 1, 0, 0, 0, 'a', 0x01);
    }

    @Test
    void aLargeByteArrayAndNaNPayloadsSurvive() {
        byte[] big = RandomObjects.bytes(new Random(5), 5 << 20);
        assertThat((byte[]) STANDARD.decode(STANDARD.encode(big))).isEqualTo(big);
        float oddNaN = Float.intBitsToFloat(0x7fc01234);
        float back = (Float) STANDARD.decode(STANDARD.encode(oddNaN));
        assertThat(Float.floatToRawIntBits(back)).isEqualTo(0x7fc01234);
    }

    @Test
    void recordsAndEnumsTheCodecWasGivenRoundTrip() {
        ObjectCodec<Object> codec = ObjectCodec.standard(Point.class, Shape.class, Color.class);
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("tags", List.of("a", "b"));
        extra.put("origin", new Point(0, 0));
        Shape shape = new Shape("tri", List.of(new Point(1, 2), new Point(3, 4), new Point(-5, 6)), Color.GREEN,
                new double[] {0.5, 1.5}, extra);
        assertThat(RandomObjects.difference(shape, codec.decode(codec.encode(shape)))).isNull();
        assertThat(codec.decode(codec.encode(Color.GREEN))).isSameAs(Color.GREEN);
        assertThat(codec.decode(codec.encode(List.of(Color.BLUE, new Point(9, 9))))).isEqualTo(List.of(Color.BLUE, new Point(9, 9)));
        assertThat(codec).hasToString("ObjectCodec.standard(Point, Shape, Color)");
    }

    @Test
    void aRecordOrEnumTheCodecWasNotGivenIsRefusedBothWays() {
        assertThatThrownBy(() -> STANDARD.encode(List.of(1, new Point(1, 2))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ObjectCodec.standard() cannot encode value[1]: record " + Point.class.getName()
                        + " is not one the codec was given: use ObjectCodec.standard(Point.class, ...) on every rank");
        assertThatThrownBy(() -> STANDARD.encode(Color.RED)).hasMessageContaining("enum " + Color.class.getName());
        // bytes that name a record: refused by a codec that was not given it, even if the class is loaded
        byte[] bytes = ObjectCodec.standard(Point.class).encode(new Point(1, 2));
        assertThatThrownBy(() -> ObjectCodec.standard(Color.class).decode(bytes))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("refuses to decode a record " + Point.class.getName() + ": it was not given that class");
        assertThatThrownBy(() -> STANDARD.decode(ObjectCodec.standard(Color.class).encode(Color.RED)))
                .hasMessageContaining("refuses to decode an enum");
    }

    @Test
    void aRecordsConstructorChecksTheDecodedComponents() {
        ObjectCodec<Object> codec = ObjectCodec.standard(Range.class);
        assertThat(codec.decode(codec.encode(new Range(1, 5)))).isEqualTo(new Range(1, 5));
        byte[] name = Range.class.getName().getBytes(StandardCharsets.UTF_8);
        ByteBuffer forged = ByteBuffer.allocate(2 + 4 + name.length + 4 + 10).order(ByteOrder.LITTLE_ENDIAN);
        forged.put((byte) 1).put((byte) 0x30).putInt(name.length).put(name).putInt(2).put((byte) 0x06).putInt(5).put((byte) 0x06).putInt(1);
        assertThatThrownBy(() -> codec.decode(forged.array()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("its constructor refused the decoded components")
                .hasMessageContaining("lo 5 > hi 1");
        // a component of the wrong type never reaches the constructor
        ByteBuffer wrongType = ByteBuffer.allocate(2 + 4 + name.length + 4 + 5 + 6).order(ByteOrder.LITTLE_ENDIAN);
        wrongType.put((byte) 1).put((byte) 0x30).putInt(name.length).put(name).putInt(2).put((byte) 0x06).putInt(5)
                .put((byte) 0x0A).putInt(1).put((byte) 'x');
        assertThatThrownBy(() -> codec.decode(wrongType.array()))
                .hasMessageContaining("its component hi is a int, the bytes hold a java.lang.String");
    }

    @Test
    void theCodecRefusesClassesItCannotHandleWhenItIsMade() {
        assertThatThrownBy(() -> ObjectCodec.standard(String.class))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("java.lang.String is neither");
        assertThatThrownBy(() -> ObjectCodec.standard(Sorted.class))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("component map of record " + Sorted.class.getName() + " is a java.util.TreeMap");
        assertThatThrownBy(() -> ObjectCodec.standard(Shape.class)) // Point and Color are missing
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("component color of record " + Shape.class.getName() + " is a " + Color.class.getName()
                        + ", which this codec never decodes");
    }

    @Test
    void anUnsupportedTypeIsNamedWithWhereItSitsAndWhatToDo() {
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("k", new ArrayDeque<>(List.of(1)));
        Throwable t = catchThrowable(() -> STANDARD.encode(List.of("ok", inner)));
        assertThat(t).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ObjectCodec.standard() cannot encode value[1][\"k\"]: a java.util.ArrayDeque is none of the types")
                .hasMessageContaining("ObjectCodec of your own").hasMessageContaining("ObjectCodec.javaSerialization");
        assertThatThrownBy(() -> STANDARD.encode(new Object())).hasMessageContaining("cannot encode the value: a java.lang.Object");
        assertThatThrownBy(() -> STANDARD.encode(new String[] {"a"})).hasMessageContaining("a [Ljava.lang.String; is none");
        List<Object> cyclic = new ArrayList<>();
        cyclic.add(cyclic);
        assertThatThrownBy(() -> STANDARD.encode(cyclic)).hasMessageContaining("nests deeper than 512 levels (does it contain itself?)");
    }

    @Test
    void malformedBytesAlwaysFailWithIllegalArgumentNeverAnythingElse() {
        Random random = new Random(77);
        for (int i = 0; i < 3000; i++) {
            byte[] bytes = STANDARD.encode(RandomObjects.value(random, 3));
            byte[] bad = random.nextBoolean() ? Arrays.copyOf(bytes, random.nextInt(bytes.length))
                    : flip(bytes, random);
            Throwable t = catchThrowable(() -> STANDARD.decode(bad));
            if (t != null) assertThat(t).as("case %d", i).isExactlyInstanceOf(IllegalArgumentException.class);
        }
        // a forged length claims 2 GiB in a message of 8 bytes: refused before any allocation
        assertThatThrownBy(() -> STANDARD.decode(new byte[] {1, 0x10, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, 0, 0}))
                .hasMessageContaining("the length of a byte[] is 2147483647, more than the 2 bytes left hold");
        assertThatThrownBy(() -> STANDARD.decode(new byte[] {1, 0x20, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f}))
                .hasMessageContaining("the length of a List is 2147483647");
        assertThatThrownBy(() -> STANDARD.decode(new byte[] {(byte) 0xAC, (byte) 0xED, 0, 5}))
                .hasMessageContaining("the first byte is not the format byte 1 (bytes of another codec?)");
        assertThatThrownBy(() -> STANDARD.decode(new byte[] {1, 0, 0})).hasMessageContaining("1 bytes follow the value");
        byte[] deep = new byte[2 + 5 * 600];
        deep[0] = 1;
        for (int i = 0; i < 600; i++) deep[1 + 5 * i] = 0x20;
        for (int i = 0; i < 600; i++) deep[2 + 5 * i] = 1;
        assertThatThrownBy(() -> STANDARD.decode(deep)).hasMessageContaining("values nest deeper than 512 levels");
        // 500 nested lists in 1 MiB that each claim as many elements as bytes are left: sized by what they hold, not by
        // the claim (500 x 1 M references, 2 GiB, before the first failed)
        ByteBuffer claims = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN).put((byte) 1);
        for (int i = 0; i < 500; i++) claims.put((byte) 0x20).putInt(claims.remaining() - 4);
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long before = mx.getCurrentThreadAllocatedBytes();
        assertThatThrownBy(() -> STANDARD.decode(claims.array())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("it ends within a value");
        assertThat(mx.getCurrentThreadAllocatedBytes() - before).as("bytes allocated decoding 1 MiB").isLessThan(64L << 20);
    }

    private static byte[] flip(byte[] bytes, Random random) {
        byte[] b = bytes.clone();
        for (int k = 1 + random.nextInt(3); k > 0; k--) b[random.nextInt(b.length)] ^= (byte) (1 << random.nextInt(8));
        return b;
    }

    @Test
    void javaSerializationDecodesWhatItAllowsAndRefusesTheRestOnBothSides() {
        ObjectCodec<Object> codec = ObjectCodec.javaSerialization(ArrayList.class, Payload.class);
        List<Object> value = new ArrayList<>(List.of(new Payload("p", new int[] {1, 2}), "s", 42, 2.5));
        @SuppressWarnings("unchecked")
        List<Object> back = (List<Object>) codec.decode(codec.encode(value));
        assertThat(back).hasSize(4);
        assertThat(((Payload) back.get(0)).values).containsExactly(1, 2);
        assertThat(back.subList(1, 4)).containsExactly("s", 42, 2.5);

        // encode: a class not in the list is named before anything is sent
        assertThatThrownBy(() -> codec.encode(new ArrayList<>(List.of(new HashMap<>(Map.of("k", 1))))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ObjectCodec.javaSerialization(ArrayList, Payload) refuses to encode a java.util.HashMap: "
                        + "not in its allow-list");
        // decode: bytes another codec made that hold a class not in the list
        byte[] foreign = ObjectCodec.javaSerialization(ArrayList.class, HashMap.class).encode(new ArrayList<>(List.of(new HashMap<>(Map.of("k", 1)))));
        assertThatThrownBy(() -> codec.decode(foreign))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("refuses to decode a java.util.HashMap: not in its allow-list");
        assertThatThrownBy(() -> ObjectCodec.javaSerialization(Object.class))
                .hasMessageContaining("java.lang.Object is not Serializable");
    }

    @Test
    void javaSerializationWithAFilterTreatsUndecidedAsRejected() throws IOException {
        byte[] bytes = ObjectCodec.javaSerialization(ArrayList.class).encode(new ArrayList<>(List.of("a")));
        ObjectCodec<Object> knowsNothing = ObjectCodec.javaSerialization(info -> ObjectInputFilter.Status.UNDECIDED);
        assertThatThrownBy(() -> knowsNothing.decode(bytes)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("refuses to decode a java.util.ArrayList: its filter did not allow it");
        ObjectCodec<Object> lists = ObjectCodec.javaSerialization(ObjectInputFilter.allowFilter(c -> c == ArrayList.class
                || c == Object[].class, ObjectInputFilter.Status.UNDECIDED));
        assertThat(lists.decode(bytes)).isEqualTo(List.of("a"));

        // an array length forged to 1 GiB elements in a message of a few kB: refused, not allocated
        int[] array = new int[1000];
        Arrays.fill(array, 0x7f7f7f7f);
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(raw)) {
            out.writeObject(array);
        }
        byte[] forged = raw.toByteArray();
        int at = indexOf(forged, new byte[] {0, 0, 0x03, (byte) 0xE8, 0x7f, 0x7f});
        assertThat(at).isPositive();
        forged[at] = 0x40;
        assertThatThrownBy(() -> ObjectCodec.javaSerialization(int[].class).decode(forged))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("refused the bytes");
        assertThat((int[]) ObjectCodec.javaSerialization(int[].class).decode(raw.toByteArray())).isEqualTo(array);
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) if (haystack[i + j] != needle[j]) continue outer;
            return i;
        }
        return -1;
    }

    @Test
    void aUserCodecNeedsOnlyEncodeAndDecode() {
        ObjectCodec<String> upper = new ObjectCodec<>() {
            @Override
            public byte[] encode(String value) {
                return value.getBytes(StandardCharsets.UTF_8);
            }

            @Override
            public String decode(byte[] bytes) {
                return new String(bytes, StandardCharsets.UTF_8).toUpperCase();
            }
        };
        byte[] buf = "xxhixx".getBytes(StandardCharsets.UTF_8);
        assertThat(upper.decode(buf, 2, 2)).isEqualTo("HI");
        assertThatThrownBy(() -> upper.decode(buf, 5, 2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(Set.of(upper.decode(upper.encode("a")))).containsExactly("A");
    }
}
