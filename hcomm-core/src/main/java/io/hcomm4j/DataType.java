package io.hcomm4j;

/**
 * Element types that collectives and typed point-to-point calls understand.
 * Point-to-point messages are plain bytes; the type only fixes the element size of array overloads.
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
    FLOAT64(8);

    private final int byteSize;

    DataType(int byteSize) {
        this.byteSize = byteSize;
    }

    /** Size of one element in bytes. */
    public int byteSize() {
        return byteSize;
    }
}
