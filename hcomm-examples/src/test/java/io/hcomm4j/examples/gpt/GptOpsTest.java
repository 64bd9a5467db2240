package io.hcomm4j.examples.gpt;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import jdk.incubator.vector.FloatVector;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * The hand-made special functions of {@link Activations} and {@link Ops}: exp, erf inside GELU and its slope, and
 * the deterministic lane sum, against double references (whose own values are pinned to Python's math.erf).
 */
class GptOpsTest {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;

    @Test
    void referenceGeluIsPythonsErfGelu() {
        // 0.5·x·(1 + math.erf(x/√2)) in CPython (double)
        double[][] pinned = {{-6, -5.919525870226207e-09}, {-3, -0.004049694094890287}, {-1.5, -0.10021080190328713},
            {-0.5, -0.15426876936299344}, {-1e-3, -0.000499601057786089}, {0, 0}, {0.3, 0.18537342665668577},
            {1, 0.8413447460685429}, {2.5, 2.4844758366855597}, {8, 7.999999999999995}};
        for (double[] p : pinned) {
            assertThat(Reference.gelu(p[0])).as("gelu(%s)", p[0]).isCloseTo(p[1], Offset.offset(1e-15 + 1e-13 * Math.abs(p[1])));
        }
        assertThat(Reference.erfc(3)).isCloseTo(2.2090496998585438e-05, Offset.offset(1e-18));
        assertThat(Reference.erfc(5)).isCloseTo(1.5374597944280351e-12, Offset.offset(1e-24));
    }

    @Test
    void expIsWithinTwoUlpOfMathExpAndZeroBelowTheNormalRange() {
        SplittableRandom r = new SplittableRandom(1);
        float[] xs = new float[100_000];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = (float) (r.nextDouble() * 175 - 87);   // [-87, 88]
        }
        xs[0] = 0;
        xs[1] = -87.2f;
        xs[2] = 88f;
        float worst = 0;
        for (int i = 0; i + Ops.L <= xs.length; i += Ops.L) {
            FloatVector v = Activations.exp(FloatVector.fromArray(Ops.S, xs, i));
            for (int j = 0; j < Ops.L; j++) {
                float x = xs[i + j], want = (float) Math.exp(x);
                float ulps = Math.abs(v.lane(j) - want) / Math.ulp(want);
                worst = Math.max(worst, ulps);
                assertThat(ulps).as("exp(%s)", x).isLessThanOrEqualTo(2f);
                assertThat(Activations.exp(x)).as("scalar twin at %s", x).isEqualTo(v.lane(j));
            }
        }
        System.out.printf("exp: worst %.2f ulp over [-87, 88]%n", worst);
        assertThat(Activations.exp(0f)).isEqualTo(1f);
        assertThat(Activations.exp(-87.4f)).isZero();
        assertThat(Activations.exp(-1000f)).isZero();
        assertThat(Activations.exp(FloatVector.broadcast(Ops.S, -200f)).lane(0)).isZero();
    }

    @Test
    void geluAndItsSlopeMatchTheDoubleReference() {
        int n = 20_003;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = arena.allocate(n * 4L), act = arena.allocate(n * 4L), slope = arena.allocate(n * 4L);
            for (int i = 0; i < n; i++) {
                x.setAtIndex(F, i, -10f + 20f * i / (n - 1));
            }
            slope.copyFrom(x);
            new Activations(0).gelu(slope, 0, act, 0, n, true);
            double worstRel = 0, worstRelNear = 0;
            for (int i = 0; i < n; i++) {
                double xi = x.getAtIndex(F, i);
                double want = Reference.gelu(xi);
                double dWant = 0.5 * Reference.erfc(-xi / Math.sqrt(2)) + xi * Math.exp(-xi * xi / 2) / Math.sqrt(2 * Math.PI);
                // a few float roundings (about 6·2^-24 at worst when written), in the far tail too
                assertThat((double) act.getAtIndex(F, i)).as("gelu(%s)", xi)
                        .isCloseTo(want, Offset.offset(8e-7 * Math.abs(want) + 1e-38));
                assertThat((double) slope.getAtIndex(F, i)).as("gelu'(%s)", xi).isCloseTo(dWant, Offset.offset(3e-7));
                if (Math.abs(want) > 1e-30) {
                    double rel = Math.abs(act.getAtIndex(F, i) - want) / Math.abs(want);
                    worstRel = Math.max(worstRel, rel);
                    worstRelNear = Math.abs(xi) <= 3 ? Math.max(worstRelNear, rel) : worstRelNear;
                }
            }
            System.out.printf("gelu: worst relative error %.2e over [-3, 3], %.2e over [-10, 10]%n", worstRelNear, worstRel);
            MemorySegment again = arena.allocate(n * 4L);
            again.copyFrom(x);
            new Activations(0).gelu(again, 0, act.asSlice(0), 0, n, false);
            assertThat(again.toArray(F)).as("without slope x stays").containsExactly(x.toArray(F));
        }
    }

    @Test
    void laneSumIsTheSameAsAPairwiseSum() {
        SplittableRandom r = new SplittableRandom(2);
        float[] a = new float[Ops.L];
        for (int rep = 0; rep < 1000; rep++) {
            for (int i = 0; i < a.length; i++) {
                a[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(8) - 4));
            }
            float[] t = a.clone();
            for (int h = Ops.L / 2; h >= 1; h /= 2) {
                for (int i = 0; i < h; i++) {
                    t[i] = t[i] + t[i + h];
                }
            }
            assertThat(Ops.sumLanes(FloatVector.fromArray(Ops.S, a, 0))).isEqualTo(t[0]);
        }
    }
}
