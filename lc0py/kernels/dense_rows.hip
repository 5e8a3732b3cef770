// dense_rows.hip -- a dense layer of a few rows with its bias, activation and LayerNorm, in one kernel:
//
//   out[r, :] = LN( act(x[r, :] . W^T + bias) ) * gamma + beta        r < rows <= LC0_DR_ROWS
//
// Smolgen's two dense layers (T82: 2048 -> 256 and 256 -> 6144) run once per position, so at a
// batch of one to a few positions they are GEMVs: cuBLAS takes 5.1 and 3.0 us for them on an H200
// and the LayerNorm after each another 2.7 us, most of it the fixed cost of a kernel
// (docs/performance.md §1). Here every block computes LC0_DR_WARPS * LC0_DR_OUT outputs of every
// row (a warp per output: its lanes split K in 16-byte chunks, so a warp reads one weight row
// coalesced and every row of x reuses it from registers), writes act(dot + bias) in fp32 to
// `pre`, and the last block to finish -- a device-scope fence, then an atomic ticket on `counter`
// -- normalises every row (fp32, two-pass: mean, then the centred variance) and writes `out`.
// It then puts the counter back to 0, so the next launch (and a CUDA graph's replay) starts from
// it; the counter must be 0 before the first launch (the runner zeroes it when it allocates it).
//
// The GEMM path rounds the dense output to T before the LayerNorm reads it; this kernel keeps it in
// fp32, so the two differ by T's rounding (fp16: ~1e-3 relative), not more.
//
// Compile defines: LC0_DR_N (outputs), LC0_DR_K (inputs), LC0_DR_ROWS (most rows a launch takes),
// LC0_DR_WARPS (warps per block), LC0_DR_OUT (outputs per warp). Grid: ceil(N / (WARPS * OUT))
// blocks of WARPS * WARP_SIZE threads. pre: float[LC0_DR_ROWS * N] scratch; counter: one u32.
#include "common.h"
#include "activations.h"

#ifndef LC0_DR_N
#define LC0_DR_N 256
#endif
#ifndef LC0_DR_K
#define LC0_DR_K 2048
#endif
#ifndef LC0_DR_ROWS
#define LC0_DR_ROWS 4
#endif
#ifndef LC0_DR_WARPS
#define LC0_DR_WARPS 8
#endif
#ifndef LC0_DR_OUT
#define LC0_DR_OUT 1
#endif

namespace dr {
constexpr int N = LC0_DR_N;
constexpr int K = LC0_DR_K;
constexpr int ROWS = LC0_DR_ROWS;
constexpr int WARPS = LC0_DR_WARPS;
constexpr int OUT = LC0_DR_OUT;
constexpr int THREADS = WARPS * WARP_SIZE;
constexpr int VEC = (K % LC0_VEC == 0) ? LC0_VEC : 1;  // elements per chunk of a row
constexpr int CHUNKS = K / VEC;
constexpr int PER = (CHUNKS + WARP_SIZE - 1) / WARP_SIZE;  // chunks per lane
static_assert(ROWS >= 1, "at least one row");
}  // namespace dr

// One chunk (VEC elements) of a row of T as floats.
LC0_DEVICE void dr_load(const T* p, float* out) {
    if (dr::VEC == LC0_VEC) {
        load_vec(p, out);
    } else {
        out[0] = to_f32(*p);
    }
}

// The sum of v over the block (every thread gets it); red: WARPS floats of shared memory.
LC0_DEVICE float dr_block_sum(float v, float* red) {
    v = warp_sum(v);
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    __syncthreads();  // red is free again (a previous call's readers are done)
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < dr::WARPS; ++w) total += red[w];
    return total;
}

extern "C" __global__ void __launch_bounds__(LC0_DR_WARPS * WARP_SIZE)
dense_rows_layernorm(const T* LC0_RESTRICT x, const T* LC0_RESTRICT w, const T* LC0_RESTRICT bias,
                     const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta, T* LC0_RESTRICT out, float* pre,
                     u32* counter, int rows, float eps, int act) {
    using namespace dr;
    __shared__ float red[WARPS];
    __shared__ u32 ticket;
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
#ifdef LC0_DR_ACT
    act = LC0_DR_ACT;
#endif

    // 1. This block's outputs for every row: act(x . w_n + bias_n) into pre (fp32).
#pragma unroll
    for (int o = 0; o < OUT; ++o) {
        const int n = (blockIdx.x * WARPS + warp) * OUT + o;
        if (n < N) {
            float acc[ROWS];
#pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
            const T* wn = w + (long long)n * K;
#pragma unroll
            for (int c = 0; c < PER; ++c) {
                const int idx = (lane + c * WARP_SIZE) * VEC;
                if (idx < K) {
                    float wv[LC0_VEC];
                    dr_load(wn + idx, wv);
#pragma unroll
                    for (int r = 0; r < ROWS; ++r) {
                        if (r < rows) {
                            float xv[LC0_VEC];
                            dr_load(x + (long long)r * K + idx, xv);
#pragma unroll
                            for (int i = 0; i < VEC; ++i) acc[r] += wv[i] * xv[i];
                        }
                    }
                }
            }
            const float b = bias != nullptr ? to_f32(bias[n]) : 0.f;
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const float s = warp_sum(acc[r]);  // every lane takes part, whatever `rows`
                if (lane == 0 && r < rows) pre[r * N + n] = activate(s + b, act);
            }
        }
    }

    // 2. The last block to get here normalises every row.
    lc0_fence_device();  // this block's pre values are visible before its ticket is taken
    __syncthreads();
    if (threadIdx.x == 0) ticket = lc0_atomic_add(counter, 1u);
    __syncthreads();
    if (ticket != gridDim.x - 1) return;
    lc0_fence_device();
    const volatile float* vp = pre;  // written by other blocks: read past any cached copy
    for (int r = 0; r < rows; ++r) {
        float sum = 0.f;
        for (int i = threadIdx.x; i < N; i += THREADS) sum += vp[r * N + i];
        const float mean = dr_block_sum(sum, red) / N;
        float var = 0.f;
        for (int i = threadIdx.x; i < N; i += THREADS) {
            const float d = vp[r * N + i] - mean;
            var += d * d;
        }
        var = dr_block_sum(var, red) / N;
        const float rstd = rsqrtf(var + eps);
        for (int i = threadIdx.x; i < N; i += THREADS) {
            const float v = (vp[r * N + i] - mean) * rstd * to_f32(gamma[i]) + to_f32(beta[i]);
            store_f32(out + (long long)r * N + i, v);
        }
    }
    if (threadIdx.x == 0) *counter = 0u;  // ready for the next launch
}
