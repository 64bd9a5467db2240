package io.hcomm4j.kernel;

import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;

/**
 * The kernel contract computed the slow, obvious way, one element at a time, sharing no code with the kernels:
 * integers in {@code long} or {@link BigInteger} arithmetic, then truncated to the element width; floats exactly in
 * {@link BigDecimal}, rounded once to float32/float64 by {@link BigDecimal#floatValue()}/{@link
 * BigDecimal#doubleValue()} (both round to nearest even), with IEEE special cases written out; the 16-bit formats
 * decoded from their bit fields and rounded by searching a table of every finite value of the format.
 */
final class Reference {
    private static final Format FP16 = new Format(5, 10);
    private static final Format BF16 = new Format(8, 7);
    private static final MathContext DIVISION = new MathContext(60, RoundingMode.HALF_EVEN);

    private Reference() {
    }

    /** {@code x OP y} on raw element bits; AVG is the sum. */
    static long combine(DataType type, ReduceOp op, long x, long y) {
        return switch (type) {
            case INT8 -> integer(op, (byte) x, (byte) y) & 0xFF;
            case UINT8 -> integer(op, x & 0xFF, y & 0xFF) & 0xFF;
            case INT16 -> integer(op, (short) x, (short) y) & 0xFFFF;
            case INT32 -> integer(op, (int) x, (int) y) & 0xFFFF_FFFFL;
            case BOOL -> bool(op, (x & 0xFF) != 0, (y & 0xFF) != 0) ? 1 : 0;
            case INT64 -> integer(op, x, y);
            case FLOAT32 -> Float.floatToRawIntBits(exact(op, f32(x), f32(y)).floatValue()) & 0xFFFF_FFFFL;
            case FLOAT64 -> Double.doubleToRawLongBits(exact(op, f64(x), f64(y)).doubleValue());
            // the contract: combine in float32 (one rounding), then round to 16 bits (a second one)
            case FLOAT16 -> FP16.round(exact(op, FP16.value(x), FP16.value(y)).floatValue());
            case BFLOAT16 -> BF16.round(exact(op, BF16.value(x), BF16.value(y)).floatValue());
        };
    }

    /** {@code x / divisor} on raw element bits, AVG's final step. */
    static long divide(DataType type, long x, int divisor) {
        return switch (type) {
            case INT8 -> ((byte) x / (long) divisor) & 0xFF;
            case UINT8 -> ((x & 0xFF) / divisor) & 0xFF;
            case INT16 -> ((short) x / (long) divisor) & 0xFFFF;
            case BOOL -> throw new AssertionError("BOOL has no AVG");
            case INT32 -> ((int) x / (long) divisor) & 0xFFFF_FFFFL;
            case INT64 -> BigInteger.valueOf(x).divide(BigInteger.valueOf(divisor)).longValue();
            case FLOAT32 -> Float.floatToRawIntBits(quotient(f32(x), divisor).floatValue()) & 0xFFFF_FFFFL;
            case FLOAT64 -> Double.doubleToRawLongBits(quotient(f64(x), divisor).doubleValue());
            case FLOAT16 -> FP16.round(quotient(FP16.value(x), divisor).floatValue());
            case BFLOAT16 -> BF16.round(quotient(BF16.value(x), divisor).floatValue());
        };
    }

    /** The 16-bit rounding of the reference, for tests of the conversions alone. */
    static long roundFp16(float f) {
        return FP16.round(f);
    }

    static long roundBf16(float f) {
        return BF16.round(f);
    }

    static double fp16Value(long bits) {
        return FP16.value(bits);
    }

    static double bf16Value(long bits) {
        return BF16.value(bits);
    }

    private static long integer(ReduceOp op, long a, long b) {
        BigInteger x = BigInteger.valueOf(a);
        BigInteger y = BigInteger.valueOf(b);
        return switch (op) {
            case SUM, AVG -> x.add(y).longValue();
            case PROD -> x.multiply(y).longValue();
            case MIN -> a < b ? a : b;
            case MAX -> a > b ? a : b;
            case BAND -> x.and(y).longValue();
            case BOR -> x.or(y).longValue();
            case BXOR -> x.xor(y).longValue();
            case REPLACE, NO_OP -> throw new AssertionError(op + " is not a reduction");
        };
    }

    /** BOOL, spelled out: or for SUM, MAX, BOR; and for PROD, MIN, BAND; exclusive or for BXOR. */
    private static boolean bool(ReduceOp op, boolean a, boolean b) {
        return switch (op) {
            case SUM, MAX, BOR -> a || b;
            case PROD, MIN, BAND -> a && b;
            case BXOR -> a != b;
            case AVG, REPLACE, NO_OP -> throw new AssertionError(op + " is not a BOOL reduction");
        };
    }

    private static double f32(long bits) {
        return Float.intBitsToFloat((int) bits);
    }

    private static double f64(long bits) {
        return Double.longBitsToDouble(bits);
    }

    private static boolean negative(double v) {
        return Double.doubleToRawLongBits(v) < 0;
    }

    /** The exact result as a BigDecimal (or a special value): rounding is left to the caller. */
    private static Exact exact(ReduceOp op, double a, double b) {
        if (Double.isNaN(a) || Double.isNaN(b)) {
            return Exact.NAN;
        }
        switch (op) {
            case MIN -> {
                if (a == b) { // equal, or zeros of either sign: -0.0 is the smaller
                    return Exact.of(negative(a) ? a : b);
                }
                return Exact.of(a < b ? a : b);
            }
            case MAX -> {
                if (a == b) {
                    return Exact.of(negative(a) ? b : a);
                }
                return Exact.of(a > b ? a : b);
            }
            case SUM, AVG -> {
                if (Double.isInfinite(a) || Double.isInfinite(b)) {
                    if (Double.isInfinite(a) && Double.isInfinite(b) && a != b) {
                        return Exact.NAN;
                    }
                    return Exact.of(Double.isInfinite(a) ? a : b);
                }
                BigDecimal sum = new BigDecimal(a).add(new BigDecimal(b));
                if (sum.signum() == 0) {
                    // IEEE: an exact zero sum is +0 unless both operands are -0
                    return Exact.of(negative(a) && negative(b) ? -0.0 : 0.0);
                }
                return Exact.of(sum);
            }
            case PROD -> {
                boolean sign = negative(a) != negative(b);
                if (Double.isInfinite(a) || Double.isInfinite(b)) {
                    if (a == 0 || b == 0) {
                        return Exact.NAN;
                    }
                    return Exact.of(sign ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY);
                }
                if (a == 0 || b == 0) {
                    return Exact.of(sign ? -0.0 : 0.0);
                }
                return Exact.of(new BigDecimal(a).multiply(new BigDecimal(b)), sign);
            }
        }
        throw new AssertionError(op);
    }

    /**
     * {@code a / divisor}: exact when the quotient has a finite decimal expansion (which every tie has); otherwise to
     * 60 digits, far closer than any such quotient of a double by a small int comes to a rounding tie.
     */
    private static Exact quotient(double a, int divisor) {
        if (Double.isNaN(a) || Double.isInfinite(a) || a == 0) {
            return Exact.of(a); // divisor >= 1: NaN, infinities and zeros keep their sign
        }
        BigDecimal x = new BigDecimal(a);
        BigDecimal d = BigDecimal.valueOf(divisor);
        BigDecimal q;
        try {
            q = x.divide(d);
        } catch (ArithmeticException nonTerminating) {
            q = x.divide(d, DIVISION);
        }
        return Exact.of(q, negative(a));
    }

    /** An exact result, or a special value; rounding it to double or float happens once. */
    record Exact(BigDecimal value, double special, boolean negative) {
        static final Exact NAN = new Exact(null, Double.NaN, false);

        static Exact of(double special) {
            return new Exact(null, special, false);
        }

        /** {@code negative} gives the sign of a result that underflows to zero. */
        static Exact of(BigDecimal value, boolean negative) {
            return new Exact(value, 0, negative);
        }

        static Exact of(BigDecimal value) {
            return new Exact(value, 0, value.signum() < 0);
        }

        double doubleValue() {
            if (value == null) {
                return special;
            }
            double d = value.doubleValue();
            return d == 0 && negative ? -0.0 : d;
        }

        float floatValue() {
            if (value == null) {
                return (float) special;
            }
            float f = value.floatValue();
            return f == 0 && negative ? -0.0f : f;
        }
    }

    /** A binary floating-point format with {@code exponentBits} and {@code fractionBits}. */
    private static final class Format {
        private final int fractionBits;
        private final int bias;
        private final long signBit;
        private final long infinity;
        private final long nan;
        /** values[k] for every non-negative finite encoding k, and values[infinity] = the next power of two. */
        private final double[] values;

        Format(int exponentBits, int fractionBits) {
            this.fractionBits = fractionBits;
            this.bias = (1 << (exponentBits - 1)) - 1;
            this.signBit = 1L << (exponentBits + fractionBits);
            this.infinity = ((1L << exponentBits) - 1) << fractionBits;
            this.nan = infinity | (1L << (fractionBits - 1));
            this.values = new double[(int) infinity + 1];
            for (int k = 0; k <= infinity; k++) {
                long exponent = k >>> fractionBits;
                long fraction = k & ((1L << fractionBits) - 1);
                values[k] = exponent == 0
                        ? Math.scalb((double) fraction, 1 - bias - fractionBits)
                        : Math.scalb((double) ((1L << fractionBits) | fraction), (int) exponent - bias - fractionBits);
            }
        }

        double value(long bits) {
            long magnitude = bits & (signBit - 1);
            if (magnitude > infinity) {
                return Double.NaN;
            }
            double v = magnitude == infinity ? Double.POSITIVE_INFINITY : values[(int) magnitude];
            return (bits & signBit) != 0 ? -v : v;
        }

        /** The nearest value of the format, ties to the even encoding; NaN to the canonical quiet NaN. */
        long round(float f) {
            if (Float.isNaN(f)) {
                return nan;
            }
            long sign = Float.floatToRawIntBits(f) < 0 ? signBit : 0;
            double m = Math.abs((double) f);
            int lo = 0;
            int hi = values.length - 1;
            if (m >= values[hi]) { // beyond the largest finite value by at least half an ulp: rounds to infinity
                return sign | infinity;
            }
            while (hi - lo > 1) { // values[lo] <= m < values[hi]
                int mid = (lo + hi) >>> 1;
                if (values[mid] <= m) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            double below = m - values[lo]; // exact: neighbours of m, all with few significant bits
            double above = values[hi] - m;
            int k = below < above ? lo : above < below ? hi : ((lo & 1) == 0 ? lo : hi);
            return sign | k;
        }
    }
}
