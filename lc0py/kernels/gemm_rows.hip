// gemm_rows.hip -- out = act(alpha * x . W^T + bias) for the few rows of a small batch, in one kernel.
//
//   out[m, n] = act(alpha * sum_k x[m, k] * W[n, k] + bias[n])      (bias may be nullptr)
//
// Why: at one position a T82 layer's GEMMs have M = 64 rows and take ~3.5 us each in cuBLAS, most of
// it the launch and one trip to memory, and cuBLAS cannot be launched as a programmatic dependent
// launch (Platform.dependent_launch). This kernel can: it loads its block's weights into shared
// memory BEFORE lc0_grid_dependency_sync() (they are the net's, so those loads overlap the kernel
// before it), then the activations, and it adds the bias and activation in its epilogue (FFN1's
// bias + relu^2 was a kernel of its own).
//
// Shape: a block computes 64 rows (four warps of 16) by LC0_GR_NT columns (16 or 32: one or two
// 16x16 tiles a warp) over the whole of K, with both operands in shared memory: W's NT rows, then x's
// 64 rows in four column groups, each its own async-copy group, so the tiles of the first group are
// multiplied while the rest land. Rows past M and columns past N are zero-filled and not stored;
// K is zero-padded to a multiple of 16. Needs K % 8 == 0 (16-byte copies), lda and ldo multiples of
// 8, and (64 + NT) * (round16(K) + 8) * 2 bytes of dynamic shared memory (gemm_rows_shared_bytes).
// fp16 only (matrix cores; the fp32 backend keeps its BLAS GEMMs).
//
// Grid: (ceil(N / NT), ceil(M / 64)); block: 4 warps.
#include "common.h"
#include "activations.h"
#include "mma.h"

#ifndef LC0_GR_NT
#define LC0_GR_NT 16
#endif

static_assert(LC0_FP16 == 1, "gemm_rows runs on fp16 operands (matrix cores)");
static_assert(LC0_GR_NT == 16 || LC0_GR_NT == 32, "LC0_GR_NT is 16 or 32 columns a block");

namespace gr {
constexpr int WARPS = 4;
constexpr int THREADS = WARPS * WARP_SIZE;
constexpr int MT = WARPS * 16;      // rows a block
constexpr int NT = LC0_GR_NT;       // columns a block
constexpr int TILES = NT / 16;      // 16x16 output tiles a warp
constexpr int GROUPS = 4;           // column groups of x, one async-copy group each
}  // namespace gr

// Copy rows [0, rows) x columns [k0, k1) of a row-major matrix (leading dimension ld, `valid` rows
// and `kvalid` columns of real data) into shared memory with row stride lds; what lies past the data
// is written as zeros. 16-byte pieces, spread over the block's threads.
LC0_DEVICE void stage_rows(f16* s, int lds, const T* g, long long ld, int rows, int valid, int k0, int k1,
                           int kvalid) {
    const int pieces = (k1 - k0) / 8;
    for (int i = threadIdx.x; i < rows * pieces; i += gr::THREADS) {
        const int r = i / pieces, k = k0 + (i % pieces) * 8;
        f16* d = s + r * lds + k;
        if (r < valid && k < kvalid) {
            async_copy16(d, g + (long long)r * ld + k);
        } else {
            *reinterpret_cast<uint4*>(d) = make_uint4(0, 0, 0, 0);
        }
    }
}

// The k-steps of column group G, once its copies (and W's, and the groups before) have landed.
template <int G>
LC0_DEVICE void multiply_group(lc0mma::frag_c (&acc)[gr::TILES], const f16* xs, const f16* ws, int lds, int kp) {
    async_wait<gr::GROUPS - 1 - G>();
    __syncthreads();  // every thread's copies (and zero fills) of this group are visible
    const int per = (kp / 16 + gr::GROUPS - 1) / gr::GROUPS;  // k-steps a group
    const int s0 = G * per, s1 = (G + 1) * per < kp / 16 ? (G + 1) * per : kp / 16;
    const int warp = threadIdx.x / WARP_SIZE;
    for (int s = s0; s < s1; ++s) {
        lc0mma::frag_a a;
        lc0mma::load_a(a, xs + warp * 16 * lds + s * 16, lds);
#pragma unroll
        for (int t = 0; t < gr::TILES; ++t) {
            lc0mma::frag_b b;
            lc0mma::load_b_t(b, ws + t * 16 * lds + s * 16, lds);
            lc0mma::mma(acc[t], a, b);
        }
    }
}

extern "C" __global__ void __launch_bounds__(gr::THREADS)
gemm_rows(const T* LC0_RESTRICT x, int lda, const T* LC0_RESTRICT w, const T* LC0_RESTRICT bias, T* out, int ldo,
          int m, int n, int k, float alpha, int act) {
    using namespace gr;
    extern __shared__ __align__(16) unsigned char smem[];
    const int kp = (k + 15) / 16 * 16;
    const int lds = kp + 8;  // padded rows: ldmatrix's eight rows fall in different banks
    f16* ws = reinterpret_cast<f16*>(smem);
    f16* xs = ws + NT * lds;
    const int n0 = blockIdx.x * NT, m0 = blockIdx.y * MT;

    // The weights first (the net's own, untouched by any kernel): in flight while we wait.
    stage_rows(ws, lds, w + (long long)n0 * k, k, NT, n - n0, 0, kp, k);
    async_commit();
    lc0_grid_dependency_sync();
    // x in GROUPS column groups (k-steps split as multiply_group splits them)
    const int per = (kp / 16 + GROUPS - 1) / GROUPS;
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
        const int k0 = g * per * 16 < kp ? g * per * 16 : kp, k1 = (g + 1) * per * 16 < kp ? (g + 1) * per * 16 : kp;
        stage_rows(xs, lds, x + (long long)m0 * lda, lda, MT, m - m0, k0, k1, k);
        async_commit();
    }
    lc0mma::frag_c acc[TILES];
#pragma unroll
    for (int t = 0; t < TILES; ++t) lc0mma::zero(acc[t]);
    multiply_group<0>(acc, xs, ws, lds, kp);
    multiply_group<1>(acc, xs, ws, lds, kp);
    multiply_group<2>(acc, xs, ws, lds, kp);
    multiply_group<3>(acc, xs, ws, lds, kp);

    const int warp = threadIdx.x / WARP_SIZE;
#pragma unroll
    for (int t = 0; t < TILES; ++t) {
#pragma unroll
        for (int i = 0; i < lc0mma::C_ELEMS; ++i) {
            const int r = m0 + warp * 16 + lc0mma::c_row(i), c = n0 + t * 16 + lc0mma::c_col(i);
            if (r < m && c < n) {
                float v = alpha * acc[t].x[i];
                if (bias != nullptr) v += to_f32(bias[c]);
                store_f32(out + (long long)r * ldo + c, activate(v, act));
            }
        }
    }
}
