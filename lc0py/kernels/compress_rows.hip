// compress_rows.hip -- smolgen's compress and its first dense layer, with that layer's bias,
// activation and LayerNorm, for a few positions in one kernel, split by token:
//
//   c[r, t, :] = x[r, t, :] . Wc^T                                   (HC values a token, no bias)
//   out[r, :]  = LN( act( sum_t c[r, t, :] . W1[:, t*HC : (t+1)*HC]^T + b1 ) ) * gamma + beta
//
// At a batch of one position smolgen's compress is a GEMM of 64 x 32 x 768 and its first dense
// layer a GEMV of 2048 -> 256: two kernels (3.9 + 6.1 us on an H200, docs/performance.md §1) whose
// time is their fixed cost, and they sit on each layer's critical path beside the 3.5 us QKV GEMM.
// Since the dense layer is linear in the compressed values, it splits by token with no redundant
// work: block (r, t) computes token t's HC compressed values into shared memory (each warp some of
// them, its lanes splitting E in 16-byte chunks), then every thread the dot products of its outputs'
// HC weights of that token with them, written in fp32 to part[r, t, :]. Every weight load of a
// block is issued before any arithmetic, and before the block waits for the kernel before it
// (lc0_weights_before_wait), so a block waits for memory about once. The last block of
// row r to finish -- a device-scope fence, then an atomic ticket on counter[r] -- adds the SEQ
// shares in token order (the same sum at every launch), then bias, activation and the LayerNorm
// (fp32, two-pass) into out, and puts counter[r] back to 0 for the next launch and a CUDA graph's
// replay (the counters must be 0 before the first launch; the runner zeroes them).
//
// The GEMM path rounds the compressed values and the dense output to T; this kernel keeps both in
// fp32, so the two differ by T's rounding (fp16: ~1e-3 relative), not more.
//
// A second entry, compress_rows_prenorm, takes the previous layer's FFN output before its LayerNorm
// (with that LayerNorm's bias, skip input, gamma and beta) and normalises each token's row itself,
// so that smolgen's chain can start beside the LayerNorm kernel instead of after it (the
// smolgen_early fusion, lc0py/backends/gpu/fusions.py).
//
// Compile defines: LC0_CR_SEQ (tokens), LC0_CR_E (input width), LC0_CR_HC (compressed values a
// token), LC0_CR_N (dense outputs), LC0_CR_ROWS (most rows a launch takes), LC0_CR_WARPS (warps a
// block), LC0_CR_ACT (optional: the activation, fixed). Grid: rows * SEQ blocks of
// WARPS * WARP_SIZE threads. part: float[LC0_CR_ROWS * SEQ * N]; counter: u32[LC0_CR_ROWS].
#include "common.h"
#include "activations.h"

#ifndef LC0_CR_SEQ
#define LC0_CR_SEQ 64
#endif
#ifndef LC0_CR_E
#define LC0_CR_E 768
#endif
#ifndef LC0_CR_HC
#define LC0_CR_HC 32
#endif
#ifndef LC0_CR_N
#define LC0_CR_N 256
#endif
#ifndef LC0_CR_ROWS
#define LC0_CR_ROWS 8
#endif
#ifndef LC0_CR_WARPS
#define LC0_CR_WARPS 8
#endif

namespace cr {
constexpr int SEQ = LC0_CR_SEQ;
constexpr int E = LC0_CR_E;
constexpr int HC = LC0_CR_HC;
constexpr int N = LC0_CR_N;
constexpr int WARPS = LC0_CR_WARPS;
constexpr int THREADS = WARPS * WARP_SIZE;
constexpr int EV = (E % LC0_VEC == 0) ? LC0_VEC : 1;   // elements a chunk of an input row
constexpr int ECH = E / EV;                             // chunks of an input row
constexpr int EPER = (ECH + WARP_SIZE - 1) / WARP_SIZE;  // of them a lane
constexpr int CPW = (HC + WARPS - 1) / WARPS;           // compressed values a warp
constexpr int HV = (HC % LC0_VEC == 0) ? LC0_VEC : 1;   // elements a chunk of a token's dense weights
constexpr int HCH = HC / HV;                            // chunks of them
constexpr int PJ = (N + THREADS - 1) / THREADS;         // dense outputs a thread
// Shares a thread of the last block loads at once: all of them (64 for lc0's 64 tokens), so that
// the sum waits for memory once (eight groups of eight, eight waits: 7.4 us a launch on an H200).
constexpr int SUM_BATCH = SEQ <= 64 ? SEQ : 64;
static_assert(SEQ % SUM_BATCH == 0, "the last block adds the shares in groups of SUM_BATCH");
static_assert(LC0_CR_ROWS >= 1, "at least one row");
}  // namespace cr

// A block's weights, loaded by every entry before it waits for the kernel before it (no kernel
// writes them, so with the dependent launch their DRAM latency overlaps that kernel): this thread's
// dense weights of token t, its warp's compress rows, and the last block's bias and LayerNorm
// parameters (only the last block uses them; loaded now, they cost no wait after the sum).
namespace cr {
struct Weights {
    uint4 wd[PJ][HCH];
    uint4 wr[CPW][EPER];
    float b1[PJ], g1[PJ], be1[PJ];
};

LC0_DEVICE void load_weights(Weights& wts, const T* LC0_RESTRICT wc, const T* LC0_RESTRICT w1,
                             const T* LC0_RESTRICT bias, const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta) {
    const int t = blockIdx.x % SEQ;
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (int i = 0; i < PJ; ++i) {
        const int j = threadIdx.x + i * THREADS;
#pragma unroll
        for (int h = 0; h < HCH; ++h)
            wts.wd[i][h] = j < N ? raw_chunk<HV>(w1 + (long long)j * (SEQ * HC) + t * HC + h * HV) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int o = 0; o < CPW; ++o) {
        const int c = warp + o * WARPS;
#pragma unroll
        for (int q = 0; q < EPER; ++q) {
            const int idx = (lane + q * WARP_SIZE) * EV;
            wts.wr[o][q] = (c < HC && idx < E) ? raw_chunk<EV>(wc + (long long)c * E + idx) : make_uint4(0, 0, 0, 0);
        }
    }
#pragma unroll
    for (int i = 0; i < PJ; ++i) {
        const int j = threadIdx.x + i * THREADS;
        wts.b1[i] = (j < N && bias != nullptr) ? to_f32(bias[j]) : 0.f;
        wts.g1[i] = j < N ? to_f32(gamma[j]) : 0.f;
        wts.be1[i] = j < N ? to_f32(beta[j]) : 0.f;
    }
}
}  // namespace cr

// The kernel body, after the entry loaded the block's weights and waited. PRENORM
// (compress_rows_prenorm): x is not the layer input but the previous layer's FFN output before its
// LayerNorm; each warp forms its token's row of LN(x + pre_bias + skip) * pre_gamma + pre_beta
// itself (fp32, two-pass, rounded to T as the LayerNorm kernel stores it), so smolgen need not
// wait for that kernel (the smolgen_early fusion).
template <bool PRENORM>
LC0_DEVICE void compress_rows_body(const cr::Weights& wts, const T* LC0_RESTRICT x, const T* LC0_RESTRICT skip,
                                   const T* LC0_RESTRICT pre_bias, const T* LC0_RESTRICT pre_gamma,
                                   const T* LC0_RESTRICT pre_beta, float pre_eps, T* LC0_RESTRICT out,
                                   float* part, u32* counter, float eps, int act) {
    using namespace cr;
    __shared__ float comp[HC];
    __shared__ float red[WARPS];
    __shared__ u32 ticket;
    const int r = blockIdx.x / SEQ, t = blockIdx.x % SEQ;
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
#ifdef LC0_CR_ACT
    act = LC0_CR_ACT;
#endif
    const auto& wd = wts.wd;
    const auto& wr = wts.wr;
    const auto& b1 = wts.b1;
    const auto& g1 = wts.g1;
    const auto& be1 = wts.be1;

    // The token's input row (its weights are in wts) ...
    uint4 xr[EPER];
    const long long row0 = ((long long)r * SEQ + t) * E;
#pragma unroll
    for (int k = 0; k < EPER; ++k) {
        const int idx = (lane + k * WARP_SIZE) * EV;
        xr[k] = idx < E ? raw_chunk<EV>(x + row0 + idx) : make_uint4(0, 0, 0, 0);
    }
    if (PRENORM) {
        // The token's row of the LayerNorm the main stream computes beside this kernel: every
        // lane holds EPER chunks of it, so each warp normalises the whole row on its own.
        uint4 rs[EPER], rb[EPER], rg[EPER], re[EPER];
#pragma unroll
        for (int k = 0; k < EPER; ++k) {
            const int idx = (lane + k * WARP_SIZE) * EV;
            const uint4 zero = make_uint4(0, 0, 0, 0);
            rs[k] = idx < E ? raw_chunk<EV>(skip + row0 + idx) : zero;
            rb[k] = (idx < E && pre_bias != nullptr) ? raw_chunk<EV>(pre_bias + idx) : zero;
            rg[k] = idx < E ? raw_chunk<EV>(pre_gamma + idx) : zero;
            re[k] = idx < E ? raw_chunk<EV>(pre_beta + idx) : zero;
        }
        float v[EPER][EV];
        float sum = 0.f;
#pragma unroll
        for (int k = 0; k < EPER; ++k) {
            const int idx = (lane + k * WARP_SIZE) * EV;
            const T* ye = reinterpret_cast<const T*>(&xr[k]);
            const T* be = reinterpret_cast<const T*>(&rb[k]);
            const T* se = reinterpret_cast<const T*>(&rs[k]);
#pragma unroll
            for (int i = 0; i < EV; ++i) {
                // the LayerNorm kernel's order: (y + bias) + skip
                const float val = idx < E ? (to_f32(ye[i]) + to_f32(be[i])) + to_f32(se[i]) : 0.f;
                v[k][i] = val;
                sum += val;
            }
        }
        const float mean = warp_sum(sum) / E;
        float var = 0.f;
#pragma unroll
        for (int k = 0; k < EPER; ++k) {
            const int idx = (lane + k * WARP_SIZE) * EV;
#pragma unroll
            for (int i = 0; i < EV; ++i) {
                const float d = idx < E ? v[k][i] - mean : 0.f;
                var += d * d;
            }
        }
        const float rstd = rsqrtf(warp_sum(var) / E + pre_eps);
#pragma unroll
        for (int k = 0; k < EPER; ++k) {
            const T* ge = reinterpret_cast<const T*>(&rg[k]);
            const T* bb = reinterpret_cast<const T*>(&re[k]);
            uint4 u = make_uint4(0, 0, 0, 0);
            T* ue = reinterpret_cast<T*>(&u);
#pragma unroll
            for (int i = 0; i < EV; ++i) store_f32(&ue[i], (v[k][i] - mean) * rstd * to_f32(ge[i]) + to_f32(bb[i]));
            xr[k] = u;  // zero past the row's end: gamma and beta are zero there
        }
    }

    // 1. The token's compressed values (fp32, shared memory).
#pragma unroll
    for (int o = 0; o < CPW; ++o) {
        float acc = 0.f;
#pragma unroll
        for (int k = 0; k < EPER; ++k) acc += dot_raw_chunks<EV>(wr[o][k], xr[k]);
        acc = warp_sum(acc);  // the whole warp takes part
        const int c = warp + o * WARPS;
        if (lane == 0 && c < HC) comp[c] = acc;
    }
    __syncthreads();

    // 2. The token's share of every dense output.
    float* share = part + ((long long)r * SEQ + t) * N;
#pragma unroll
    for (int i = 0; i < PJ; ++i) {
        const int j = threadIdx.x + i * THREADS;
        float acc = 0.f;
#pragma unroll
        for (int h = 0; h < HCH; ++h) {
            const T* wv = reinterpret_cast<const T*>(&wd[i][h]);
#pragma unroll
            for (int e = 0; e < HV; ++e) acc += to_f32(wv[e]) * comp[h * HV + e];
        }
        if (j < N) share[j] = acc;
    }

    // 3. The last block of row r adds the shares, then bias, activation and LayerNorm.
    lc0_fence_device();  // this block's share is visible before its ticket is taken
    __syncthreads();
    if (threadIdx.x == 0) ticket = lc0_atomic_add(counter + r, 1u);
    __syncthreads();
    if (ticket != SEQ - 1) return;
    lc0_fence_device();
    const float* row = part + (long long)r * SEQ * N;
    float v[PJ];
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < PJ; ++i) {
        const int j = threadIdx.x + i * THREADS;
        float acc = 0.f;
        if (j < N) {
            for (int t0 = 0; t0 < SEQ; t0 += SUM_BATCH) {  // written by other blocks: past L1
                float s[SUM_BATCH];
#pragma unroll
                for (int u = 0; u < SUM_BATCH; ++u) s[u] = lc0_load_global_cg(row + (t0 + u) * N + j);
#pragma unroll
                for (int u = 0; u < SUM_BATCH; ++u) acc += s[u];
            }
            acc = activate(acc + b1[i], act);
        }
        v[i] = acc;
        sum += acc;
    }
    const float mean = block_sum<WARPS>(sum, red) / N;
    float var = 0.f;
#pragma unroll
    for (int i = 0; i < PJ; ++i) {
        const int j = threadIdx.x + i * THREADS;
        const float d = j < N ? v[i] - mean : 0.f;
        var += d * d;
    }
    var = block_sum<WARPS>(var, red) / N;
    const float rstd = rsqrtf(var + eps);
#pragma unroll
    for (int i = 0; i < PJ; ++i) {
        const int j = threadIdx.x + i * THREADS;
        if (j < N) store_f32(out + (long long)r * N + j, (v[i] - mean) * rstd * g1[i] + be1[i]);
    }
    if (threadIdx.x == 0) counter[r] = 0u;  // ready for the next launch
}

extern "C" __global__ void __launch_bounds__(LC0_CR_WARPS * WARP_SIZE)
compress_rows_layernorm(const T* LC0_RESTRICT x, const T* LC0_RESTRICT wc, const T* LC0_RESTRICT w1,
                        const T* LC0_RESTRICT bias, const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta,
                        T* LC0_RESTRICT out, float* part, u32* counter, float eps, int act) {
    lc0_weights_before_wait();
    cr::Weights wts;
    cr::load_weights(wts, wc, w1, bias, gamma, beta);
    lc0_grid_dependency_sync();
    compress_rows_body<false>(wts, x, nullptr, nullptr, nullptr, nullptr, 0.f, out, part, counter, eps, act);
}

// The same from the previous layer's FFN output y before its LayerNorm:
//   x[r, t, :] = LN(y[r, t, :] + pre_bias + skip[r, t, :]) * pre_gamma + pre_beta   (eps pre_eps)
// computed per token inside the kernel (pre_bias may be nullptr).
extern "C" __global__ void __launch_bounds__(LC0_CR_WARPS * WARP_SIZE)
compress_rows_prenorm(const T* LC0_RESTRICT y, const T* LC0_RESTRICT skip, const T* LC0_RESTRICT pre_bias,
                      const T* LC0_RESTRICT pre_gamma, const T* LC0_RESTRICT pre_beta, float pre_eps,
                      const T* LC0_RESTRICT wc, const T* LC0_RESTRICT w1, const T* LC0_RESTRICT bias,
                      const T* LC0_RESTRICT gamma, const T* LC0_RESTRICT beta, T* LC0_RESTRICT out, float* part,
                      u32* counter, float eps, int act) {
    lc0_weights_before_wait();
    cr::Weights wts;
    cr::load_weights(wts, wc, w1, bias, gamma, beta);
    lc0_grid_dependency_sync();
    compress_rows_body<true>(wts, y, skip, pre_bias, pre_gamma, pre_beta, pre_eps, out, part, counter, eps, act);
}
