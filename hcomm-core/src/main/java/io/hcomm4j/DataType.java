package io.hcomm4j;

/**
 * Element types that collectives and typed point-to-point calls understand.
 * Point-to-point messages are plain bytes; the type only fixes the element size of array overloads.
 *
 * <p>New constants go last: the ordinals are wire format (collective fingerprints, one-sided frames).
 */
public enum DataType {
    /** Signed 8-bit integer. */
    INT8(1),
    /** Unsigned 8-bit integer (carried in a Java {@code byte}, compared and summed as 0..255). */
    UINT8(1),
    /** Signed 32-bit integer. */
    INT32(4),
    /** Signed 64-bit integer. */
    INT64(8),
    /** IEEE 754 binary16, carried in a Java {@code short}. */
    FLOAT16(2),
    /** bfloat16 (upper half of a float32), carried in a Java {@code short}. */
    BFLOAT16(2),
    /** IEEE 754 binary32. */
    FLOAT32(4),
    /** IEEE 754 binary64. */
    FLOAT64(8),
    /** Signed 16-bit integer, carried in a Java {@code short}. */
    INT16(2),
    /**
     * Boolean, one byte: 0 is false, any other value true. Reductions read it that way and write 0 or 1: SUM, MAX and
     * BOR are a logical or, PROD, MIN and BAND a logical and, BXOR an exclusive or; AVG is refused (see {@link ReduceOp}).
     */
    BOOL(1);

    private final int byteSize;

    DataType(int byteSize) {
        this.byteSize = byteSize;
    }

    /** Size of one element in bytes. */
    public int byteSize() {
        return byteSize;
    }

    /**
     * Whether this is a floating-point type (FLOAT16, BFLOAT16, FLOAT32, FLOAT64): the bitwise operators are not defined
     * on them.
     *
     * @return true for the four floating-point types
     */
    public boolean isFloatingPoint() {
        return this == FLOAT16 || this == BFLOAT16 || this == FLOAT32 || this == FLOAT64;
    }
}
