// layernorm.hip -- the fused "act(y + bias) * alpha + skip -> LayerNorm" of every post-LN block.
//
//   out[r, :] = LN( act(y[r, :] + bias) * alpha + skip[r, :] ) * gamma + beta
//
// (lc0's layer_norm_kernel, attention-body.md §4.4/§12). One pass over memory: y, skip and the
// output are each touched once, instead of the 3-4 passes of separate bias, activation, residual
// and normalisation kernels. Statistics are fp32 and two-pass (mean, then the centred variance
// from registers: no E[x^2]-E[x]^2 cancellation). `skip` may be nullptr (smolgen LNs) and `out`
// may alias `skip` or `y` (each row is fully read into registers before it is written).
//
// Compile defines: LC0_LN_N (row length), LC0_LN_THREADS (threads per row, multiple of the warp),
// LC0_LN_ROWS (rows per block). Block = THREADS * ROWS threads. Each thread owns
// ceil(N / (THREADS * VEC)) 16-byte chunks of its row, so the row stays in registers.
#include "common.h"
#include "activations.h"

#ifndef LC0_LN_N
#error "LC0_LN_N must be defined"
#endif
#ifndef LC0_LN_THREADS
#define LC0_LN_THREADS 32
#endif
#ifndef LC0_LN_ROWS
#define LC0_LN_ROWS 4
#endif

namespace ln {
constexpr int N = LC0_LN_N;
constexpr int TH = LC0_LN_THREADS;
constexpr int WPR = TH / WARP_SIZE;  // warps per row
constexpr int VEC = (N % LC0_VEC == 0) ? LC0_VEC : 1;
constexpr int CHUNKS = N / VEC;
constexpr int PER = (CHUNKS + TH - 1) / TH;
static_assert(TH % WARP_SIZE == 0, "threads per row must be a multiple of the warp size");
}  // namespace ln

LC0_DEVICE void ld_chunk(const T* p, float* out) {
    if (ln::VEC == LC0_VEC) {
        load_vec(p, out);
    } else {
        out[0] = to_f32(*p);
    }
}
LC0_DEVICE void st_chunk(T* p, const float* in) {
    if (ln::VEC == LC0_VEC) {
        store_vec(p, in);
    } else {
        store_f32(p, in[0]);
    }
}

extern "C" __global__ void __launch_bounds__(LC0_LN_THREADS * LC0_LN_ROWS)
residual_layernorm(const T* y, const T* LC0_RESTRICT bias, const T* skip, T* out,
                   const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta, int rows, float alpha,
                   float eps, int act) {
    using namespace ln;
    __shared__ float red[LC0_LN_ROWS][WPR > 1 ? WPR : 1];
    const int rl = threadIdx.x / TH, t = threadIdx.x % TH;
    const int row = blockIdx.x * LC0_LN_ROWS + rl;
    const bool live = row < rows;  // no early return: the block reduces through shared memory
    const long long base = (long long)row * N;

    float x[PER][LC0_VEC];
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const int idx = (t + c * TH) * VEC;
        if (live && idx < N) {
            ld_chunk(y + base + idx, x[c]);
            float bb[LC0_VEC], sk[LC0_VEC];
            if (bias != nullptr) ld_chunk(bias + idx, bb);
            if (skip != nullptr) ld_chunk(skip + base + idx, sk);
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                float val = x[c][i];
                if (bias != nullptr) val += bb[i];
                val = activate(val, act) * alpha;
                if (skip != nullptr) val += sk[i];
                x[c][i] = val;
                sum += val;
            }
        }
    }
    auto row_reduce = [&](float v) {
        v = warp_sum(v);
        if (WPR > 1) {
            __syncthreads();
            if (threadIdx.x % WARP_SIZE == 0) red[rl][t / WARP_SIZE] = v;
            __syncthreads();
            v = 0.f;
#pragma unroll
            for (int w = 0; w < WPR; ++w) v += red[rl][w];
        }
        return v;
    };
    const float mean = row_reduce(sum) / N;
    float var = 0.f;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const int idx = (t + c * TH) * VEC;
        if (live && idx < N) {
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                const float d = x[c][i] - mean;
                var += d * d;
            }
        }
    }
    var = row_reduce(var) / N;
    const float rstd = rsqrtf(var + eps);
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const int idx = (t + c * TH) * VEC;
        if (live && idx < N) {
            float gg[LC0_VEC], be[LC0_VEC], res[LC0_VEC];
            ld_chunk(gamma + idx, gg);
            ld_chunk(beta + idx, be);
#pragma unroll
            for (int i = 0; i < VEC; ++i) res[i] = (x[c][i] - mean) * rstd * gg[i] + be[i];
            st_chunk(out + base + idx, res);
        }
    }
}
