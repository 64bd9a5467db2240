package io.hcomm4j.memory;

/**
 * The pool's size classes. Requests up to 4 KiB take one page; up to 256 KiB the next power of two (these "small"
 * classes are carved out of shared chunk mappings); above that four classes per power of two ({@code 2^k * 5/4, 6/4,
 * 7/4, 8/4}), each buffer its own mapping, so a large buffer wastes at most a quarter of its size. Every class is a
 * multiple of the page size, so every buffer starts page-aligned.
 */
final class SizeClasses {
    /** Page size, alignment of every buffer and the smallest class. */
    static final long PAGE = 4096;
    /** Largest small class; small classes share chunk mappings. */
    static final long SMALL_MAX = 256 * 1024;
    /** Number of small classes: 4 KiB .. 256 KiB. */
    static final int SMALL_CLASSES = 7;
    /** Size of a chunk mapping that small classes are carved from (at most; less when the limit is near). */
    static final long CHUNK = 2L * 1024 * 1024;
    /** Largest class, {@code 2^50} (1 PiB), which is also the largest pool limit. */
    static final long MAX = 1L << 50;
    /** Number of classes. */
    static final int COUNT = SMALL_CLASSES + (50 - 18) * 4;

    private SizeClasses() {
    }

    /** The class of a request of {@code bytes} ({@code 1 <= bytes <= MAX}). */
    static int index(long bytes) {
        if (bytes <= PAGE) return 0;
        if (bytes <= SMALL_MAX) return 64 - Long.numberOfLeadingZeros(bytes - 1) - 12;
        int k = 63 - Long.numberOfLeadingZeros(bytes - 1); // 2^k < bytes <= 2^(k+1), k >= 18
        long step = 1L << (k - 2);
        long quarters = (bytes - (1L << k) + step - 1) / step; // 1..4
        return SMALL_CLASSES + (k - 18) * 4 + (int) quarters - 1;
    }

    /** Bytes of every buffer of class {@code index}. */
    static long size(int index) {
        if (index < SMALL_CLASSES) return PAGE << index;
        int i = index - SMALL_CLASSES;
        int k = 18 + i / 4;
        return (1L << k) + (i % 4 + 1) * (1L << (k - 2));
    }

    /** True for the classes carved out of chunk mappings. */
    static boolean small(int index) {
        return index < SMALL_CLASSES;
    }
}
