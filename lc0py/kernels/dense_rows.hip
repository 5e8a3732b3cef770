// dense_rows.hip -- a dense layer of a few rows with its bias, activation and LayerNorm, in one kernel:
//
//   out[r, :] = LN( act(x[r, :] . W^T + bias) ) * gamma + beta        r < rows <= LC0_DR_ROWS
//
// Smolgen's two dense layers (T82: 2048 -> 256 and 256 -> 6144) run once per position, so at a
// batch of one to a few positions they are GEMVs: cuBLAS takes 5.1 and 3.0 us for them on an H200
// and the LayerNorm after each another 2.7 us, most of it the fixed cost of a kernel
// (docs/performance.md §1). Here each warp computes LC0_DR_OUT outputs of every row: it loads all
// its weight chunks (its lanes split K in 16-byte chunks: coalesced rows) before any arithmetic, so
// the kernel waits for memory about once, reads each row of x in chunks (cached after the first
// warp), and writes act(dot + bias) in fp32 to `pre`. The last block to finish -- a device-scope
// fence, then an atomic ticket on `counter` -- loads each row of `pre` into registers at once and
// normalises it there (fp32, two-pass: mean, then the centred variance) into `out`.
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
constexpr int PER = (CHUNKS + WARP_SIZE - 1) / WARP_SIZE;  // chunks of a row per lane
constexpr int PT = (N + THREADS - 1) / THREADS;  // elements of an output row per thread (last block)
static_assert(ROWS >= 1, "at least one row");
}  // namespace dr

extern "C" __global__ void __launch_bounds__(LC0_DR_WARPS * WARP_SIZE)
dense_rows_layernorm(const T* LC0_RESTRICT x, const T* LC0_RESTRICT w, const T* LC0_RESTRICT bias,
                     const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta, T* LC0_RESTRICT out, float* pre,
                     u32* counter, int rows, float eps, int act) {
    lc0_weights_before_wait();
    using namespace dr;
    __shared__ float red[WARPS];
    __shared__ u32 ticket;
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    const int n0 = (blockIdx.x * WARPS + warp) * OUT;
#ifdef LC0_DR_ACT
    act = LC0_DR_ACT;
#endif

    // 1. This warp's OUT outputs for every row: act(x . w_n + bias_n) into pre (fp32). Every weight
    //    chunk of the warp is loaded before any arithmetic (one wait for memory, not one an output),
    //    and before the wait for the kernel before this one (no kernel writes the weights, so with
    //    the dependent launch their latency overlaps its tail); each row of x is then read in
    //    chunks (from cache after the first warp).
    uint4 wr[OUT][PER];
#pragma unroll
    for (int o = 0; o < OUT; ++o) {
#pragma unroll
        for (int c = 0; c < PER; ++c) {
            const int idx = (lane + c * WARP_SIZE) * VEC;
            wr[o][c] = (n0 + o < N && idx < K) ? raw_chunk<VEC>(w + (long long)(n0 + o) * K + idx) : make_uint4(0, 0, 0, 0);
        }
    }
    lc0_grid_dependency_sync();
    if (n0 < N) {
        for (int r = 0; r < rows; ++r) {
            uint4 xr[PER];
#pragma unroll
            for (int c = 0; c < PER; ++c) {
                const int idx = (lane + c * WARP_SIZE) * VEC;
                xr[c] = idx < K ? raw_chunk<VEC>(x + (long long)r * K + idx) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int o = 0; o < OUT; ++o) {
                float acc = 0.f;
#pragma unroll
                for (int c = 0; c < PER; ++c) acc += dot_raw_chunks<VEC>(wr[o][c], xr[c]);
                acc = warp_sum(acc);  // the whole warp takes part: rows and n0 are the warp's
                if (lane == 0 && n0 + o < N) {
                    const float b = bias != nullptr ? to_f32(bias[n0 + o]) : 0.f;
                    pre[r * N + n0 + o] = activate(acc + b, act);
                }
            }
        }
    }

    // 2. The last block to get here normalises every row from registers.
    lc0_fence_device();  // this block's pre values are visible before its ticket is taken
    __syncthreads();
    if (threadIdx.x == 0) ticket = lc0_atomic_add(counter, 1u);
    __syncthreads();
    if (ticket != gridDim.x - 1) return;
    lc0_fence_device();
    float g[PT], be[PT];
#pragma unroll
    for (int j = 0; j < PT; ++j) {
        const int i = threadIdx.x + j * THREADS;
        g[j] = i < N ? to_f32(gamma[i]) : 0.f;
        be[j] = i < N ? to_f32(beta[i]) : 0.f;
    }
    for (int r = 0; r < rows; ++r) {
        float v[PT];
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < PT; ++j) {  // written by other blocks: past this multiprocessor's cache
            const int i = threadIdx.x + j * THREADS;
            v[j] = i < N ? lc0_load_global_cg(pre + r * N + i) : 0.f;
        }
#pragma unroll
        for (int j = 0; j < PT; ++j) sum += v[j];
        const float mean = block_sum<WARPS>(sum, red) / N;
        float var = 0.f;
#pragma unroll
        for (int j = 0; j < PT; ++j) {
            const int i = threadIdx.x + j * THREADS;
            const float d = i < N ? v[j] - mean : 0.f;
            var += d * d;
        }
        var = block_sum<WARPS>(var, red) / N;
        const float rstd = rsqrtf(var + eps);
#pragma unroll
        for (int j = 0; j < PT; ++j) {
            const int i = threadIdx.x + j * THREADS;
            if (i < N) store_f32(out + (long long)r * N + i, (v[j] - mean) * rstd * g[j] + be[j]);
        }
    }
    if (threadIdx.x == 0) *counter = 0u;  // ready for the next launch
}
