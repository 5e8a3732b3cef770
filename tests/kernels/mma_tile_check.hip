// mma_tile_check.hip -- one warp exercises every function of the mma.h contract, so that a
// compile for an arch shows the matrix-core instructions are really emitted (test_compile_amd.py
// counts them), and so that a GPU run can compare the outputs with numpy:
//
//   C[16][16]     = A[16][K] . B[K][16]   (A row-major, B row-major [k][n]: load_a + load_b)
//   Ct[16][16]    = A . B again, B given transposed Bt[16][K] (load_b_t)
//   row_max[16], row_sum[16] of C           (row_max / row_sum over the lanes sharing a row)
//   P[16][16]     = fp16(C) . B[0:16][:]    (a_from_c then mma)
//
// Single-source: it only uses the contract names, so NVRTC (prelude_nvrtc.h) compiles it too.
// Launch: grid (1,1,1), block (WARP_SIZE,1,1), K a multiple of 16.
#include "mma.h"

#define LDS 24  // padded row stride (a multiple of 8 halves, 16-byte rows)

extern "C" __global__ void lc0_mma_tile_check(const f16* LC0_RESTRICT A, const f16* LC0_RESTRICT B,
                                              const f16* LC0_RESTRICT Bt, int K, float* LC0_RESTRICT C,
                                              float* LC0_RESTRICT Ct, float* LC0_RESTRICT row_max_out,
                                              float* LC0_RESTRICT row_sum_out, float* LC0_RESTRICT P) {
    __shared__ __attribute__((aligned(16))) f16 sa[16 * LDS];
    __shared__ __attribute__((aligned(16))) f16 sb[16 * LDS];
    __shared__ __attribute__((aligned(16))) f16 sbt[16 * LDS];
    __shared__ __attribute__((aligned(16))) f16 scratch[16 * 16];
    const int lane = lc0mma::lane_id();

    lc0mma::frag_c c, ct;
    lc0mma::zero(c);
    lc0mma::zero(ct);
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = lane; i < 256; i += WARP_SIZE) {
            const int r = i / 16, q = i % 16;
            sa[r * LDS + q] = A[r * K + k0 + q];        // [m][k]
            sb[r * LDS + q] = B[(k0 + r) * 16 + q];     // [k][n]
            sbt[r * LDS + q] = Bt[r * K + k0 + q];      // [n][k]
        }
        __syncthreads();
        lc0mma::frag_a a;
        lc0mma::frag_b b, bt;
        lc0mma::load_a(a, sa, LDS);
        lc0mma::load_b(b, sb, LDS);
        lc0mma::load_b_t(bt, sbt, LDS);
        lc0mma::mma(c, a, b);
        lc0mma::mma(ct, a, bt);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < lc0mma::C_ELEMS; ++i) {
        C[lc0mma::c_row(i) * 16 + lc0mma::c_col(i)] = c.x[i];
        Ct[lc0mma::c_row(i) * 16 + lc0mma::c_col(i)] = ct.x[i];
    }

#pragma unroll
    for (int j = 0; j < lc0mma::C_ROWS; ++j) {
        float m = -3.0e38f, s = 0.f;
#pragma unroll
        for (int i = 0; i < lc0mma::C_ELEMS; ++i)
            if (lc0mma::c_slot(i) == j) {
                m = fmaxf(m, c.x[i]);
                s += c.x[i];
            }
        m = lc0mma::row_max(m);
        s = lc0mma::row_sum(s);
        row_max_out[lc0mma::slot_row(j)] = m;  // every lane of the group writes the same value
        row_sum_out[lc0mma::slot_row(j)] = s;
    }

    // P = fp16(C) . B[0:16]: the accumulator reused as an A operand (the P.V step of attention).
    for (int i = lane; i < 256; i += WARP_SIZE) sb[(i / 16) * LDS + i % 16] = B[i];
    __syncthreads();
    lc0mma::frag_a p;
    lc0mma::a_from_c(p, c, scratch);
    lc0mma::frag_b b0;
    lc0mma::load_b(b0, sb, LDS);
    lc0mma::frag_c d;
    lc0mma::zero(d);
    lc0mma::mma(d, p, b0);
#pragma unroll
    for (int i = 0; i < lc0mma::C_ELEMS; ++i) P[lc0mma::c_row(i) * 16 + lc0mma::c_col(i)] = d.x[i];
}
