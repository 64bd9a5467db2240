package io.hcomm4j.examples.gpt;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * Single-threaded float32 matrix products on {@link MemorySegment}s (native byte order), with the Vector API; one
 * instance per thread, as it owns its packing buffers.
 *
 * <p>Matrices are row-major, addressed by an element offset and a row stride in floats, so a matrix can be a slice of
 * a flat parameter buffer or a column band of an activation (one head's slice of qkv). Two products cover training:
 * {@link #mulAdd} {@code C (+)= A·B}, A optionally read transposed (the forward {@code X·W}, the weight gradient
 * {@code Xᵀ·dY}), and {@link #mulAddTransB} {@code C (+)= A·Bᵀ} (the input gradient {@code dY·Wᵀ}, attention scores).
 *
 * <p>The main path is GotoBLAS's: blocks of A and B are packed into contiguous heap arrays, then a register tile of
 * 4 rows × 4 vectors of C (16 accumulators) runs down the block's depth, each step loading 4 vectors of packed B and
 * broadcasting 4 elements of packed A. Packing pays for itself twice over: power-of-two row strides (4096 floats)
 * would otherwise put a block's rows in the same cache sets, and a transposed operand costs no more than a plain one
 * (so {@code A·Bᵀ} with many rows of A also takes this path, B transposed while it is packed). With few rows of A
 * (the MLP's 16), {@code A·Bᵀ} is instead 4 × 4 tiles of dot products along rows of B, in bands of B that stay in L2
 * while all of A meets them, so a large B is read from memory once, and not transposed.
 *
 * <p>The order of every sum depends on the shapes alone (lane sums included, see {@link Ops#sumLanes(FloatVector)}),
 * so equal inputs give equal bits, compiled or not. No vector crosses a method boundary but through the tiny load
 * and store helpers, which C2 inlines whatever their call site, and the kernels leave their accumulators in small
 * heap arrays: an earlier kernel that also loaded and stored C through memory segments grew past C2's inlining node
 * budget, its stores were left as calls, and every tile boxed its 16 vectors (hundreds of MB/s of garbage, a quarter
 * of the speed).
 */
public final class MatMul {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    /** Columns of a register tile: 4 vectors. */
    private static final int W = 4 * L;
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    /** Depth of a packed block, in k. */
    private static final int KC = 256;
    /** Rows of A packed at once: 128 × 256 floats, 128 KiB, in L2 next to B's block. */
    private static final int MC = 128;
    /** Floats of B's packed block: 1 MiB, in L2 (which it shares with the rest; 512 KiB measured a little slower). */
    private static final int PACK = 256 << 10;
    /**
     * From this many rows of A on, {@link #mulAddTransB} transposes B while packing it and runs the packed product:
     * the transposition is paid once per element of B and shared by all rows. Below, dot products read B once.
     */
    private static final int PACKED_TRANS_B_ROWS = 64;
    /** Bytes of B's rows a band of {@link #mulAddTransB} may span, to stay in L2. */
    private static final long BAND_BYTES = 256 << 10;

    private final float[] packA = new float[MC * KC];
    private final float[] packB = new float[PACK];
    /** One register tile of C, 4 rows × W. */
    private final float[] tileC = new float[4 * W];
    /** 4 × 4 dot products' lane vectors, row-major. */
    private final float[] dots = new float[16 * L];

    /** A product engine with its own packing buffers (about 1.2 MiB of heap): not for use by two threads at once. */
    public MatMul() {
    }

    /** Floats per vector of the preferred species: 16 with AVX-512. */
    public static int lanes() {
        return L;
    }

    /**
     * {@code C[m×n] = (accumulate ? C : 0) + A[m×k]·B[k×n]}, A's element (i,kk) at {@code a + i*aRs + kk*aCs},
     * B's (kk,j) at {@code b + kk*ldb + j}, C's (i,j) at {@code c + i*ldc + j} (offsets and strides in floats).
     * C must not overlap A or B.
     */
    public void mulAdd(int m, int n, int k, MemorySegment sa, long a, long aRs, long aCs,
                       MemorySegment sb, long b, long ldb, MemorySegment sc, long c, long ldc, boolean accumulate) {
        gemm(m, n, k, sa, a, aRs, aCs, sb, b, ldb, false, sc, c, ldc, accumulate);
    }

    /** The packed product; B's (kk,j) at {@code b + kk*ldb + j}, or at {@code b + j*ldb + kk} if bTransposed. */
    private void gemm(int m, int n, int k, MemorySegment sa, long a, long aRs, long aCs,
                      MemorySegment sb, long b, long ldb, boolean bTransposed,
                      MemorySegment sc, long c, long ldc, boolean accumulate) {
        if (m <= 0 || n <= 0) {
            return;
        }
        if (k <= 0) {
            if (!accumulate) {
                for (int i = 0; i < m; i++) {
                    sc.asSlice((c + i * ldc) * 4, n * 4L).fill((byte) 0);
                }
            }
            return;
        }
        // With few rows of A each element of B meets few tiles, and reading B is what costs: the block is then made
        // of whole rows of B, one contiguous run of memory, rather than a tall narrow band of scattered short runs.
        int wide = (n + W - 1) / W * W;
        int kcMax = m <= MC ? Math.clamp(PACK / wide, 16, KC) : KC;
        int ncMax = Math.max(W, Math.min(wide, PACK / Math.min(kcMax, k) / W * W));
        for (int j0 = 0; j0 < n; j0 += ncMax) {
            int nc = Math.min(ncMax, n - j0);
            for (int k0 = 0; k0 < k; k0 += kcMax) {
                int kc = Math.min(kcMax, k - k0);
                boolean load = accumulate || k0 > 0;
                if (bTransposed) {
                    packBTransposed(kc, nc, sb, b + j0 * ldb + k0, ldb);
                } else {
                    packB(kc, nc, sb, b + k0 * ldb + j0, ldb);
                }
                for (int i0 = 0; i0 < m; i0 += MC) {
                    int mc = Math.min(MC, m - i0);
                    packA(mc, kc, sa, a + i0 * aRs + k0 * aCs, aRs, aCs);
                    // a row band of C at a time: C streams in order, and the 4 rows of packed A stay in L1
                    for (int ir = 0; ir < mc; ir += 4) {
                        int rows = Math.min(4, mc - ir);
                        long cRow = c + (i0 + ir) * ldc + j0;
                        for (int jr = 0; jr < nc; jr += W) {
                            tile(kc, ir * kc, jr * kc);
                            writeBack(sc, cRow + jr, ldc, rows, Math.min(W, nc - jr), load);
                        }
                    }
                }
            }
        }
    }

    /**
     * As {@link #packB}, from a B stored transposed (its (kk,j) at {@code b + j*ldb + kk}): each row of the source,
     * read in order, fills one column of a panel.
     */
    private void packBTransposed(int kc, int nc, MemorySegment sb, long b, long ldb) {
        float[] to = packB;
        for (int jr = 0; jr < nc; jr += W) {
            int panel = jr * kc;
            int cols = Math.min(W, nc - jr);
            for (int j = 0; j < cols; j++) {
                long from = b + (jr + j) * ldb;
                for (int kk = 0; kk < kc; kk++) {
                    to[panel + kk * W + j] = sb.getAtIndex(F, from + kk);
                }
            }
            for (int j = cols; j < W; j++) {
                for (int kk = 0; kk < kc; kk++) {
                    to[panel + kk * W + j] = 0f;
                }
            }
        }
    }

    /** B's kc × nc block as panels W columns wide, each kc rows of W floats; a short last panel is zero-padded. */
    private void packB(int kc, int nc, MemorySegment sb, long b, long ldb) {
        float[] to = packB;
        for (int kk = 0; kk < kc; kk++) {
            long from = b + kk * ldb;
            for (int jr = 0; jr < nc; jr += W) {
                int at = jr * kc + kk * W;
                if (jr + W <= nc) {
                    for (int v = 0; v < W; v += L) {
                        ld(sb, from + jr + v).intoArray(to, at + v);
                    }
                } else {
                    for (int v = 0; v < W; v += L) {
                        ld(sb, from + jr + v, S.indexInRange(jr + v, nc)).intoArray(to, at + v);
                    }
                }
            }
        }
    }

    /** A's mc × kc block as panels of 4 rows, each kc groups of the 4 rows' elements; missing rows are zeros. */
    private void packA(int mc, int kc, MemorySegment sa, long a, long aRs, long aCs) {
        float[] to = packA;
        if (mc % 4 != 0) {
            Arrays.fill(to, mc / 4 * 4 * kc, (mc + 3) / 4 * 4 * kc, 0f);
        }
        if (aCs == 1) {
            // rows of A run along k: read each row in order
            for (int i = 0; i < mc; i++) {
                long from = a + i * aRs;
                int at = i / 4 * 4 * kc + i % 4;
                for (int kk = 0; kk < kc; kk++) {
                    to[at + 4 * kk] = sa.getAtIndex(F, from + kk);
                }
            }
        } else {
            // A read transposed (Xᵀ of a weight gradient): its columns are contiguous, read them in order, as reading
            // down one row would step by a power-of-two stride and keep hitting the same cache set
            for (int kk = 0; kk < kc; kk++) {
                long from = a + kk * aCs;
                for (int i = 0; i < mc; i++) {
                    to[i / 4 * 4 * kc + 4 * kk + i % 4] = sa.getAtIndex(F, from + i * aRs);
                }
            }
        }
    }

    /** The 4 × W product of packed A's panel at ap and packed B's panel at bp, into {@link #tileC}. */
    private void tile(int kc, int ap, int bp) {
        float[] pa = packA, pb = packB;
        FloatVector z = FloatVector.zero(S);
        FloatVector x00 = z, x01 = z, x02 = z, x03 = z, x10 = z, x11 = z, x12 = z, x13 = z;
        FloatVector x20 = z, x21 = z, x22 = z, x23 = z, x30 = z, x31 = z, x32 = z, x33 = z;
        for (int kk = 0; kk < kc; kk++) {
            int bo = bp + kk * W;
            FloatVector b0 = FloatVector.fromArray(S, pb, bo), b1 = FloatVector.fromArray(S, pb, bo + L);
            FloatVector b2 = FloatVector.fromArray(S, pb, bo + 2 * L), b3 = FloatVector.fromArray(S, pb, bo + 3 * L);
            int ao = ap + 4 * kk;
            FloatVector v = FloatVector.broadcast(S, pa[ao]);
            x00 = b0.fma(v, x00); x01 = b1.fma(v, x01); x02 = b2.fma(v, x02); x03 = b3.fma(v, x03);
            v = FloatVector.broadcast(S, pa[ao + 1]);
            x10 = b0.fma(v, x10); x11 = b1.fma(v, x11); x12 = b2.fma(v, x12); x13 = b3.fma(v, x13);
            v = FloatVector.broadcast(S, pa[ao + 2]);
            x20 = b0.fma(v, x20); x21 = b1.fma(v, x21); x22 = b2.fma(v, x22); x23 = b3.fma(v, x23);
            v = FloatVector.broadcast(S, pa[ao + 3]);
            x30 = b0.fma(v, x30); x31 = b1.fma(v, x31); x32 = b2.fma(v, x32); x33 = b3.fma(v, x33);
        }
        float[] t = tileC;
        x00.intoArray(t, 0); x01.intoArray(t, L); x02.intoArray(t, 2 * L); x03.intoArray(t, 3 * L);
        x10.intoArray(t, W); x11.intoArray(t, W + L); x12.intoArray(t, W + 2 * L); x13.intoArray(t, W + 3 * L);
        x20.intoArray(t, 2 * W); x21.intoArray(t, 2 * W + L); x22.intoArray(t, 2 * W + 2 * L); x23.intoArray(t, 2 * W + 3 * L);
        x30.intoArray(t, 3 * W); x31.intoArray(t, 3 * W + L); x32.intoArray(t, 3 * W + 2 * L); x33.intoArray(t, 3 * W + 3 * L);
    }

    /** Stores (or adds, if load) the rows × cols corner of {@link #tileC} at C's (0,0) = c. */
    private void writeBack(MemorySegment sc, long c, long ldc, int rows, int cols, boolean load) {
        float[] t = tileC;
        for (int r = 0; r < rows; r++) {
            long row = c + r * ldc;
            if (cols == W) {
                for (int v = 0; v < W; v += L) {
                    FloatVector x = FloatVector.fromArray(S, t, r * W + v);
                    st(load ? x.add(ld(sc, row + v)) : x, sc, row + v);
                }
            } else {
                for (int v = 0; v < cols; v += L) {
                    VectorMask<Float> mask = S.indexInRange(v, cols);
                    FloatVector x = FloatVector.fromArray(S, t, r * W + v);
                    st(load ? x.add(ld(sc, row + v, mask)) : x, sc, row + v, mask);
                }
            }
        }
    }

    /**
     * {@code C[m×n] = (accumulate ? C : 0) + A[m×k]·B[n×k]ᵀ}: A's (i,kk) at {@code a + i*lda + kk}, B's (j,kk) at
     * {@code b + j*ldb + kk}, C's (i,j) at {@code c + i*ldc + j}. C must not overlap A or B.
     */
    public void mulAddTransB(int m, int n, int k, MemorySegment sa, long a, long lda,
                             MemorySegment sb, long b, long ldb, MemorySegment sc, long c, long ldc, boolean accumulate) {
        if (m >= PACKED_TRANS_B_ROWS) {
            gemm(m, n, k, sa, a, lda, 1, sb, b, ldb, true, sc, c, ldc, accumulate);
            return;
        }
        if (m <= 0 || n <= 0) {
            return;
        }
        int band = (int) Math.max(4, Math.min(n, BAND_BYTES / (4L * Math.max(1, k))) & ~3);
        for (int j0 = 0; j0 < n; j0 += band) {
            int j1 = Math.min(n, j0 + band);
            for (int i = 0; i < m; i += 4) {
                // a short last tile repeats its last row (or column): computed twice, stored once
                int mi = Math.min(4, m - i);
                long a0 = a + i * lda, a1 = a + Math.min(i + 1, m - 1) * lda;
                long a2 = a + Math.min(i + 2, m - 1) * lda, a3 = a + Math.min(i + 3, m - 1) * lda;
                for (int j = j0; j < j1; j += 4) {
                    int nj = Math.min(4, n - j);
                    long b0 = b + j * ldb, b1 = b + Math.min(j + 1, n - 1) * ldb;
                    long b2 = b + Math.min(j + 2, n - 1) * ldb, b3 = b + Math.min(j + 3, n - 1) * ldb;
                    dots(k, sa, a0, a1, a2, a3, sb, b0, b1, b2, b3);
                    dotsTail(k, sa, a0, a1, a2, a3, sb, b0, b1, b2, b3, sc, c + i * ldc + j, ldc, mi, nj, accumulate);
                }
            }
        }
    }

    /** The whole-vector part of the 16 dot products of rows a0..a3 with rows b0..b3, lane-wise, into {@link #dots}. */
    private void dots(int k, MemorySegment sa, long a0, long a1, long a2, long a3,
                      MemorySegment sb, long b0, long b1, long b2, long b3) {
        FloatVector z = FloatVector.zero(S);
        FloatVector x00 = z, x01 = z, x02 = z, x03 = z, x10 = z, x11 = z, x12 = z, x13 = z;
        FloatVector x20 = z, x21 = z, x22 = z, x23 = z, x30 = z, x31 = z, x32 = z, x33 = z;
        int kFull = k - k % L;
        for (int kk = 0; kk < kFull; kk += L) {
            FloatVector p0 = ld(sa, a0 + kk), p1 = ld(sa, a1 + kk), p2 = ld(sa, a2 + kk), p3 = ld(sa, a3 + kk);
            FloatVector q = ld(sb, b0 + kk);
            x00 = p0.fma(q, x00); x10 = p1.fma(q, x10); x20 = p2.fma(q, x20); x30 = p3.fma(q, x30);
            q = ld(sb, b1 + kk);
            x01 = p0.fma(q, x01); x11 = p1.fma(q, x11); x21 = p2.fma(q, x21); x31 = p3.fma(q, x31);
            q = ld(sb, b2 + kk);
            x02 = p0.fma(q, x02); x12 = p1.fma(q, x12); x22 = p2.fma(q, x22); x32 = p3.fma(q, x32);
            q = ld(sb, b3 + kk);
            x03 = p0.fma(q, x03); x13 = p1.fma(q, x13); x23 = p2.fma(q, x23); x33 = p3.fma(q, x33);
        }
        float[] t = dots;
        x00.intoArray(t, 0); x01.intoArray(t, L); x02.intoArray(t, 2 * L); x03.intoArray(t, 3 * L);
        x10.intoArray(t, 4 * L); x11.intoArray(t, 5 * L); x12.intoArray(t, 6 * L); x13.intoArray(t, 7 * L);
        x20.intoArray(t, 8 * L); x21.intoArray(t, 9 * L); x22.intoArray(t, 10 * L); x23.intoArray(t, 11 * L);
        x30.intoArray(t, 12 * L); x31.intoArray(t, 13 * L); x32.intoArray(t, 14 * L); x33.intoArray(t, 15 * L);
    }

    /** Sums each dot product's lanes, adds the k % L scalar tail, and stores the mi × nj valid ones into C. */
    private void dotsTail(int k, MemorySegment sa, long a0, long a1, long a2, long a3,
                          MemorySegment sb, long b0, long b1, long b2, long b3,
                          MemorySegment sc, long c, long ldc, int mi, int nj, boolean accumulate) {
        int kFull = k - k % L;
        for (int r = 0; r < mi; r++) {
            long ar = r == 0 ? a0 : r == 1 ? a1 : r == 2 ? a2 : a3;
            for (int s = 0; s < nj; s++) {
                long bs = s == 0 ? b0 : s == 1 ? b1 : s == 2 ? b2 : b3;
                float sum = Ops.sumLanes(FloatVector.fromArray(S, dots, (4 * r + s) * L));
                for (int kk = kFull; kk < k; kk++) {
                    sum = Math.fma(sa.getAtIndex(F, ar + kk), sb.getAtIndex(F, bs + kk), sum);
                }
                long at = c + r * ldc + s;
                sc.setAtIndex(F, at, accumulate ? sc.getAtIndex(F, at) + sum : sum);
            }
        }
    }

    private static FloatVector ld(MemorySegment s, long index) {
        return FloatVector.fromMemorySegment(S, s, index << 2, ORDER);
    }

    private static FloatVector ld(MemorySegment s, long index, VectorMask<Float> mask) {
        return FloatVector.fromMemorySegment(S, s, index << 2, ORDER, mask);
    }

    private static void st(FloatVector v, MemorySegment s, long index) {
        v.intoMemorySegment(s, index << 2, ORDER);
    }

    private static void st(FloatVector v, MemorySegment s, long index, VectorMask<Float> mask) {
        v.intoMemorySegment(s, index << 2, ORDER, mask);
    }
}
