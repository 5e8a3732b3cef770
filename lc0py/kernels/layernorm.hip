// layernorm.hip -- the fused "act(y + bias) * alpha + skip -> LayerNorm" of every post-LN block.
//
//   out[r, :] = LN( act(y[r, :] + bias) * alpha + skip[r, :] ) * gamma + beta
//
// (lc0's layer_norm_kernel, docs/attention-body.md §4.4/§12). One pass over memory: y, skip and the
// output are each touched once, instead of the 3-4 passes of separate bias, activation, residual
// and normalisation kernels. Statistics are fp32 and two-pass (mean, then the centred variance
// from registers: no E[x^2]-E[x]^2 cancellation). `skip` may be nullptr (smolgen LNs) and `out`
// may alias `skip` or `y` (each row is fully read into registers before it is written).
//
// Compile defines: LC0_LN_N (row length), LC0_LN_THREADS (threads per row, multiple of the warp),
// LC0_LN_ROWS (rows per block), LC0_LN_ACT (optional: the activation as a compile-time constant;
// the run-time `act` argument is then ignored). Block = THREADS * ROWS threads. Each thread owns
// ceil(N / (THREADS * VEC)) 16-byte chunks of its row, so the row stays in registers.
//
// LC0_LN_FP8 (the FP8 path, fp8_scales=outer): the entry point residual_layernorm_fp8 also writes
// the output quantized per row for the next FP8 GEMM -- q[r, :] = e4m3(out[r, :] / row_scale[r]),
// row_scale[r] = max |out[r, :]| / LC0_FP8_MAX of the fp16 values as stored -- bit for bit what a
// separate fp8_quantize_rows over `out` writes, without reading `out` again (the row is still in
// registers and the row's maximum is one more row reduction).
#include "common.h"
#include "activations.h"
#ifdef LC0_LN_FP8
#include "fp8.h"
static_assert(LC0_FP16 == 1, "the FP8 path keeps its activations in fp16");
#endif

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

// Chunks are kept as their raw 16 bytes until used (common.h, raw_chunk).
LC0_DEVICE void unpack(const uint4& u, float* out) {
    const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
    for (int i = 0; i < ln::VEC; ++i) out[i] = to_f32(e[i]);
}
LC0_DEVICE void st_chunk(T* p, const float* in) {
    if (ln::VEC == LC0_VEC) {
        store_vec(p, in);
    } else {
        store_f32(p, in[0]);
    }
}

// The kernel body; FP8: also the per-row e4m3 codes and scale (q, row_scale; LC0_LN_FP8 only).
template <bool FP8>
LC0_DEVICE void layernorm_rows(const T* y, const T* LC0_RESTRICT bias, const T* skip, T* out,
                               const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta, int rows, float alpha,
                               float eps, int act, unsigned char* LC0_RESTRICT q, float* LC0_RESTRICT row_scale) {
    using namespace ln;
    __shared__ float red[LC0_LN_ROWS][WPR > 1 ? WPR : 1];
    const int rl = threadIdx.x / TH, t = threadIdx.x % TH;
    const int row = blockIdx.x * LC0_LN_ROWS + rl;
    const bool live = row < rows;  // no early return: the block reduces through shared memory
    const long long base = (long long)row * N;
#ifdef LC0_LN_ACT
    act = LC0_LN_ACT;  // compile-time activation: the switch folds away
#endif

    // Issue every load of the row (y, bias, skip, gamma, beta) before any arithmetic, so the
    // thread waits for memory once instead of once per dependent step.
    uint4 ry[PER], rb[PER], rs[PER], rg[PER], re[PER];
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const int idx = (t + c * TH) * VEC;
        if (live && idx < N) {
            ry[c] = raw_chunk<VEC>(y + base + idx);
            if (bias != nullptr) rb[c] = raw_chunk<VEC>(bias + idx);
            if (skip != nullptr) rs[c] = raw_chunk<VEC>(skip + base + idx);
            rg[c] = raw_chunk<VEC>(gamma + idx);
            re[c] = raw_chunk<VEC>(beta + idx);
        }
    }
    float x[PER][LC0_VEC];
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const int idx = (t + c * TH) * VEC;
        if (live && idx < N) {
            float bb[LC0_VEC], sk[LC0_VEC];
            unpack(ry[c], x[c]);
            if (bias != nullptr) unpack(rb[c], bb);
            if (skip != nullptr) unpack(rs[c], sk);
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
    auto row_max = [&](float v) {  // the same shape as row_reduce, for the FP8 row maximum
        v = warp_max(v);
        if (WPR > 1) {
            __syncthreads();
            if (threadIdx.x % WARP_SIZE == 0) red[rl][t / WARP_SIZE] = v;
            __syncthreads();
            v = 0.f;
#pragma unroll
            for (int w = 0; w < WPR; ++w) v = fmaxf(v, red[rl][w]);
        }
        return v;
    };
    (void)row_max;
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
            float res[LC0_VEC], gg[LC0_VEC], be[LC0_VEC];
            unpack(rg[c], gg);
            unpack(re[c], be);
#pragma unroll
            for (int i = 0; i < VEC; ++i) res[i] = (x[c][i] - mean) * rstd * gg[i] + be[i];
            st_chunk(out + base + idx, res);
            if (FP8) {
#pragma unroll
                for (int i = 0; i < VEC; ++i) {  // the value as stored (what a separate quantize reads)
                    T stored;
                    store_f32(&stored, res[i]);
                    x[c][i] = to_f32(stored);
                }
            }
        }
    }
#ifdef LC0_LN_FP8
    if (FP8) {
        static_assert(VEC == LC0_VEC, "FP8 rows are whole 16-byte chunks (N a multiple of 8)");
        float m = 0.f;
#pragma unroll
        for (int c = 0; c < PER; ++c) {
            const int idx = (t + c * TH) * VEC;
            if (live && idx < N) {
#pragma unroll
                for (int i = 0; i < VEC; ++i) m = fmaxf(m, fmaxf(x[c][i], -x[c][i]));
            }
        }
        m = row_max(m);
        const float inv = fp8_row_inv(m);
        if (live && t == 0) row_scale[row] = fp8_row_scale(m);
#pragma unroll
        for (int c = 0; c < PER; ++c) {
            const int idx = (t + c * TH) * VEC;
            if (live && idx < N) {
                float v[LC0_VEC];
#pragma unroll
                for (int i = 0; i < VEC; ++i) v[i] = x[c][i] * inv;
                fp8x8_store(q + base + idx, v);
            }
        }
    }
#endif
}

extern "C" __global__ void __launch_bounds__(LC0_LN_THREADS * LC0_LN_ROWS)
residual_layernorm(const T* y, const T* LC0_RESTRICT bias, const T* skip, T* out,
                   const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta, int rows, float alpha,
                   float eps, int act) {
    lc0_grid_dependency_sync();
    layernorm_rows<false>(y, bias, skip, out, gamma, beta, rows, alpha, eps, act, nullptr, nullptr);
}

#ifdef LC0_LN_FP8
// residual_layernorm, and the output's per-row e4m3 codes q [rows, N] and scales row_scale [rows].
extern "C" __global__ void __launch_bounds__(LC0_LN_THREADS * LC0_LN_ROWS)
residual_layernorm_fp8(const T* y, const T* LC0_RESTRICT bias, const T* skip, T* out,
                       const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta, int rows, float alpha,
                       float eps, int act, fp8_t* LC0_RESTRICT q, float* LC0_RESTRICT row_scale) {
    lc0_grid_dependency_sync();
    layernorm_rows<true>(y, bias, skip, out, gamma, beta, rows, alpha, eps, act, q, row_scale);
}
#endif
