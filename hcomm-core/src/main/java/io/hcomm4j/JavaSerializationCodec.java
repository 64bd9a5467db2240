package io.hcomm4j;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InvalidClassException;
import java.io.NotSerializableException;
import java.io.ObjectInputFilter;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * {@link ObjectCodec#javaSerialization}: Java serialization behind an {@link ObjectInputFilter} made for each decode,
 * which also bounds arrays by the message's length (a forged length cannot make the decoder allocate gigabytes) and
 * nesting by {@link #MAX_DEPTH}. With an allow-list, {@code encode} checks every object it writes against the same list,
 * so a graph the receivers would refuse fails on the sender, before anything is sent.
 */
final class JavaSerializationCodec implements ObjectCodec<Object> {
    static final int MAX_DEPTH = 1000;

    /** Always decodable with an allow-list: values with no {@code readObject} of their own to abuse. */
    private static final List<Class<?>> HARMLESS = List.of(String.class, Boolean.class, Byte.class, Short.class,
            Character.class, Integer.class, Long.class, Float.class, Double.class, Number.class);

    /** The allow-list with its serializable superclasses, or null when a user filter decides. */
    private final Set<Class<?>> allowed;
    private final ObjectInputFilter userFilter;
    private final String description;

    private JavaSerializationCodec(Set<Class<?>> allowed, ObjectInputFilter userFilter, String description) {
        this.allowed = allowed;
        this.userFilter = userFilter;
        this.description = description;
    }

    static JavaSerializationCodec allowing(Class<?>... classes) {
        Set<Class<?>> allowed = new HashSet<>(HARMLESS);
        StringBuilder names = new StringBuilder();
        for (Class<?> c : classes) {
            if (c == null) throw new IllegalArgumentException("ObjectCodec.javaSerialization: a class is null");
            if (!Serializable.class.isAssignableFrom(c) && !c.isArray()) {
                throw new IllegalArgumentException("ObjectCodec.javaSerialization: " + c.getName() + " is not Serializable");
            }
            // a class's stream names its serializable superclasses too (Integer names Number); they come with it
            for (Class<?> k = c; k != null && Serializable.class.isAssignableFrom(k); k = k.getSuperclass()) allowed.add(k);
            names.append(names.isEmpty() ? "" : ", ").append(c.getSimpleName());
        }
        return new JavaSerializationCodec(Set.copyOf(allowed), null, "ObjectCodec.javaSerialization(" + names + ")");
    }

    static JavaSerializationCodec filtering(ObjectInputFilter filter) {
        Objects.requireNonNull(filter, "filter");
        return new JavaSerializationCodec(null, filter, "ObjectCodec.javaSerialization(" + filter + ")");
    }

    @Override
    public String toString() {
        return description;
    }

    /** Whether the allow-list admits {@code c}; arrays are containers (each element is checked as it is read). */
    private boolean allows(Class<?> c) {
        return c.isArray() || allowed.contains(c);
    }

    @Override
    public byte[] encode(Object value) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CheckingOutput out = null;
        try {
            out = new CheckingOutput(bytes);
            out.writeObject(value);
            out.close();
        } catch (NotSerializableException e) {
            throw new IllegalArgumentException(description + " cannot encode a " + e.getMessage() + ": it is not Serializable",
                    e);
        } catch (IOException e) {
            // a failing stream writes the exception into itself, so the class refused first is the one to name
            if (out != null && out.refused != null) {
                throw new IllegalArgumentException(description + " refuses to encode a " + out.refused.getName()
                        + ": not in its allow-list (add " + out.refused.getSimpleName() + ".class on every rank)");
            }
            throw new IllegalArgumentException(description + " cannot encode the value: " + e, e);
        }
        return bytes.toByteArray();
    }

    /** Checks each object the stream writes against the allow-list; remembers the first it refused. */
    private final class CheckingOutput extends ObjectOutputStream {
        Class<?> refused;

        CheckingOutput(ByteArrayOutputStream out) throws IOException {
            super(out);
            if (allowed != null) enableReplaceObject(true);
        }

        @Override
        protected Object replaceObject(Object obj) throws IOException {
            // a constant with a body of its own is of an anonymous subclass; the stream names the enum
            Class<?> c = obj instanceof Enum<?> e ? e.getDeclaringClass() : obj.getClass();
            if (!allows(c)) {
                if (refused == null) refused = c;
                throw new InvalidClassException(c.getName(), "not in the allow-list");
            }
            return obj;
        }
    }

    @Override
    public Object decode(byte[] bytes) {
        return decode(bytes, 0, bytes.length);
    }

    @Override
    public Object decode(byte[] bytes, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        Class<?>[] refused = new Class<?>[1];
        ObjectInputFilter filter = info -> {
            if (info.arrayLength() > length || info.depth() > MAX_DEPTH) return ObjectInputFilter.Status.REJECTED;
            Class<?> c = info.serialClass();
            if (c == null) return ObjectInputFilter.Status.ALLOWED; // a check of the limits alone
            ObjectInputFilter.Status status = allowed != null ? (allows(c) ? ObjectInputFilter.Status.ALLOWED
                    : ObjectInputFilter.Status.REJECTED) : userFilter.checkInput(info);
            if (status != ObjectInputFilter.Status.ALLOWED) {
                refused[0] = c;
                return ObjectInputFilter.Status.REJECTED; // UNDECIDED too: a filter that knows nothing allows nothing
            }
            return status;
        };
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes, offset, length))) {
            in.setObjectInputFilter(filter);
            return in.readObject();
        } catch (InvalidClassException e) {
            if (refused[0] != null) {
                throw new IllegalArgumentException(description + " refuses to decode a " + refused[0].getName()
                        + (allowed != null ? ": not in its allow-list" : ": its filter did not allow it"), e);
            }
            throw new IllegalArgumentException(description + " refused the bytes: " + e.getMessage()
                    + " (an array longer than the message, or nesting deeper than " + MAX_DEPTH + "?)", e);
        } catch (IOException | ClassNotFoundException | RuntimeException e) {
            throw new IllegalArgumentException("not an encoding of " + description + ": " + e, e);
        }
    }
}
