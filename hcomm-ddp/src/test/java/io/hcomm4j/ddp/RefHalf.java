package io.hcomm4j.ddp;

/** Reference roundings for the tests, computed another way than the code under test. */
final class RefHalf {
    private RefHalf() {
    }

    /** {@code x} rounded to the nearest bfloat16 (ties to even), as a float: the nearer of its two neighbours. */
    static float bf16(float x) {
        if (Float.isInfinite(x)) return x;
        int bits = Float.floatToRawIntBits(x);
        int down = bits & 0xFFFF_0000;
        int up = down + 0x1_0000;
        // past the largest finite bfloat16 the next one up is infinity, which IEEE rounding treats as 2^128
        double upValue = (up & 0x7FFF_FFFF) == 0x7F80_0000 ? Math.copySign(Math.scalb(1.0, 128), x) : Float.intBitsToFloat(up);
        double dDown = Math.abs((double) Float.intBitsToFloat(down) - x);
        double dUp = Math.abs(upValue - x);
        if (dDown < dUp) return Float.intBitsToFloat(down);
        if (dUp < dDown) return Float.intBitsToFloat(up);
        return Float.intBitsToFloat(((down >>> 16) & 1) == 0 ? down : up);
    }

    /** {@code x} rounded to float16 and back, by the JDK's own conversion. */
    static float fp16(float x) {
        return Float.float16ToFloat(Float.floatToFloat16(x));
    }
}
