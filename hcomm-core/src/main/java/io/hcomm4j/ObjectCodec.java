package io.hcomm4j;

import java.io.ObjectInputFilter;
import java.util.Arrays;
import java.util.Objects;

/**
 * Turns objects into bytes and back, for the object collectives of {@link ObjectCollectives}
 * ({@code comm.allGatherObject(name)}, {@code broadcastObject}, {@code sendObject} ...). Every rank of a call must use
 * codecs that read each other's bytes (the same codec, normally).
 *
 * <p>Three kinds:
 * <ul>
 *   <li>{@link #standard()}, the default: a small tagged binary format for {@code null}, {@code String}, the boxed
 *       primitives, primitive arrays, {@code List}, {@code Set} and {@code Map} (nested as deep as 512 levels), and the
 *       records and enums named in {@link #standard(Class...)}. Safe by construction: decoding creates nothing but those
 *       values and never loads a class by name (see "Safety" below).</li>
 *   <li>{@link #javaSerialization(Class...)}: Java serialization, opt-in, decoding only the classes it was given
 *       (an {@link ObjectInputFilter}), for objects that are {@code Serializable} and nothing else.</li>
 *   <li>A codec of your own: implement {@link #encode} and {@link #decode(byte[])} (and, to save a copy,
 *       {@link #decode(byte[], int, int)}). A Jackson adapter, say:
 * <pre>{@code
 * ObjectMapper json = new ObjectMapper();
 * ObjectCodec<Settings> codec = new ObjectCodec<>() {
 *     public byte[] encode(Settings s) {
 *         try { return json.writeValueAsBytes(s); }
 *         catch (JsonProcessingException e) { throw new IllegalArgumentException("cannot encode " + s, e); }
 *     }
 *     public Settings decode(byte[] bytes) { return decode(bytes, 0, bytes.length); }
 *     public Settings decode(byte[] bytes, int offset, int length) {
 *         try { return json.readValue(bytes, offset, length, Settings.class); }
 *         catch (IOException e) { throw new IllegalArgumentException("not a Settings", e); }
 *     }
 * };
 * Settings s = comm.broadcastObject(mine, 0, codec);
 * }</pre>
 *       A Kryo adapter is the same shape: {@code new Output(...)} / {@code writeObject} in {@code encode},
 *       {@code new Input(bytes, offset, length)} / {@code readObject} in {@code decode}, one Kryo per thread
 *       (a {@code ThreadLocal}), with class registration required.</li>
 * </ul>
 *
 * <p>The contract: {@code decode(encode(v))} equals {@code v} (of a type the caller can cast to {@code T}); both
 * methods are thread-safe (one codec may serve several threads and communicators); {@code encode} throws
 * {@link IllegalArgumentException} for a value it refuses, naming its type, and {@code decode} throws it for bytes it
 * cannot or will not decode. The object collectives encode before they communicate, so a refusal fails the call on
 * every rank with a message naming the rank and the reason, instead of leaving the other ranks waiting.
 *
 * <h2>The standard codec's format (version 1)</h2>
 *
 * <p>A format byte {@code 0x01}, then one value. A value is a tag byte and its body; numbers are little-endian, a
 * length is an {@code int32} count ({@code >= 0}) of the elements that follow:
 * <pre>
 * 0x00 null             0x01 false    0x02 true
 * 0x03 Byte      1 byte               0x04 Short     int16       0x05 Character  UTF-16 unit
 * 0x06 Integer   int32                0x07 Long      int64
 * 0x08 Float     IEEE 754 bits (raw: NaN payloads kept)          0x09 Double     IEEE 754 bits
 * 0x0A String    length, UTF-8 bytes (a well-formed string)
 * 0x0B String    length, UTF-16 units (a string with an unpaired surrogate, which UTF-8 cannot carry)
 * 0x10 byte[]  0x11 short[]  0x12 char[]  0x13 int[]  0x14 long[]  0x15 float[]  0x16 double[]
 *                length, the elements
 * 0x17 boolean[] length, one byte 0 or 1 each
 * 0x20 List      length, the values in order                   decoded as ArrayList
 * 0x21 Set       length, the values in iteration order         decoded as LinkedHashSet
 * 0x22 Map       length, key and value of each entry, in iteration order   decoded as LinkedHashMap
 * 0x30 record    class name (length, UTF-8), length (its components), the components' values in declaration order
 * 0x31 enum      class name (length, UTF-8), constant name (length, UTF-8)
 * </pre>
 * So insertion order is kept and collections come back as ArrayList, LinkedHashSet and LinkedHashMap (mutable, nulls
 * allowed): declare results by their interface ({@code List<String>}, not {@code TreeSet}). Other types (an
 * {@code Object[]}, a {@code TreeMap}'s comparator, a {@code Deque}, any other class) are refused by {@code encode} with
 * an {@link IllegalArgumentException} that names the type, where it sits in the value, and these options.
 *
 * <h2>Safety</h2>
 *
 * <p>Decoding the standard format can only create {@code String}s, boxed primitives, primitive arrays, ArrayLists,
 * LinkedHashSets, LinkedHashMaps, the constants of the enums the codec was given and, through their canonical
 * constructors (so their own checks run), the records it was given; it looks a class name up in that list and nowhere
 * else (no {@code Class.forName}, no class loading, no other constructor, no {@code readObject}). Every length is
 * checked against the bytes left before anything is allocated (n elements need at least n bytes), collections grow as
 * their elements are read rather than by the length they claim, nesting deeper than 512 levels is refused, and
 * trailing bytes are an error; so bytes from a faulty or hostile peer yield an {@link IllegalArgumentException}, never
 * code execution or memory out of proportion to the message. (Time is another matter, as for any decoder into hash
 * maps: keys crafted to collide make a large map slow to build.) The types of record components are checked before the
 * constructor runs; the element types inside a generic component ({@code List<String>}) are not (they are erased), as
 * with any deserializer.
 *
 * <p>Java serialization is not the default because decoding it runs the {@code readObject} methods of whatever classes
 * the bytes name (the classic gadget-chain attack). {@link #javaSerialization(Class...)} decodes only the classes given
 * (and their serializable superclasses, {@code String}, the boxed primitives, arrays), and refuses to encode others.
 *
 * @param <T> the type of the values
 */
public interface ObjectCodec<T> {
    /**
     * The bytes of {@code value}.
     *
     * @throws IllegalArgumentException if this codec does not encode such a value (the message names its type)
     */
    byte[] encode(T value);

    /**
     * The value {@code bytes} hold (all of them).
     *
     * @throws IllegalArgumentException if they are not an encoding of this codec, or one it refuses to decode
     */
    T decode(byte[] bytes);

    /**
     * The value that {@code length} bytes of {@code bytes} from {@code offset} hold. The collectives and
     * {@code recvObject} call this one, on a slice of a larger receive buffer; this default copies the slice and calls
     * {@link #decode(byte[])}; a codec that can read in place overrides it.
     *
     * @throws IndexOutOfBoundsException if the slice is not within {@code bytes}
     * @throws IllegalArgumentException  if the slice is not an encoding of this codec, or one it refuses to decode
     */
    default T decode(byte[] bytes, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        return decode(offset == 0 && length == bytes.length ? bytes : Arrays.copyOfRange(bytes, offset, offset + length));
    }

    /**
     * The standard codec (the default of every object collective): the tagged binary format above, for null,
     * {@code String}, the boxed primitives, primitive arrays, {@code List}, {@code Set} and {@code Map}; no records or
     * enums (see {@link #standard(Class...)}).
     */
    static ObjectCodec<Object> standard() {
        return StandardObjectCodec.PLAIN;
    }

    /**
     * The standard codec that also encodes the given record and enum classes (and values of the standard types nesting
     * them). A record is encoded as its class name and its components, and decoded through its canonical constructor
     * once its name is found in this list and each component's decoded value fits the component's type. Give every
     * record and enum that may occur, nested ones too, on every rank. A record or enum that is not public (or whose
     * package a named module does not open) must be reachable by reflection from this library.
     *
     * @param recordAndEnumTypes record and enum classes
     * @throws IllegalArgumentException if a class is neither a record nor an enum, if a record component is of a type
     *         the codec can never decode (a {@code TreeMap}, a record not in the list), or if a record's constructor
     *         or accessors cannot be reached
     */
    static ObjectCodec<Object> standard(Class<?>... recordAndEnumTypes) {
        return recordAndEnumTypes.length == 0 ? StandardObjectCodec.PLAIN : new StandardObjectCodec(recordAndEnumTypes);
    }

    /**
     * Java serialization, decoding only instances of the {@code allowed} classes, of their {@code Serializable}
     * superclasses (the stream names those too, so allowing {@code LinkedHashMap} allows {@code HashMap}),
     * {@code String}, the boxed primitives and arrays (an array creates no objects of its element type; its elements
     * are checked one by one), through an {@link ObjectInputFilter} that refuses every other class, any
     * array longer than the message and nesting deeper than 1000 levels. {@code encode} refuses an object graph that
     * holds an instance of another class, naming it, so the refusal comes before the call communicates. The classes
     * must be {@code Serializable}; note that whatever custom {@code readObject} methods the allowed classes have run
     * when they are decoded.
     *
     * @param allowed the classes whose instances may be decoded (exactly these: not their subclasses)
     */
    static ObjectCodec<Object> javaSerialization(Class<?>... allowed) {
        return JavaSerializationCodec.allowing(allowed);
    }

    /**
     * Java serialization, decoding what {@code filter} allows: every class the stream names is passed to it, and
     * {@link ObjectInputFilter.Status#UNDECIDED} counts as {@link ObjectInputFilter.Status#REJECTED} (so a filter that
     * knows nothing allows nothing); arrays longer than the message are refused whatever the filter says. {@code encode}
     * does not consult the filter: a class it refuses fails on the receiving side.
     */
    static ObjectCodec<Object> javaSerialization(ObjectInputFilter filter) {
        return JavaSerializationCodec.filtering(filter);
    }
}
