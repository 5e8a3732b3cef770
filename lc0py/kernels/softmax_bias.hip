// softmax_bias.hip -- the fallback attention's middle step (between two batched GEMMs):
//
//   S[bh, s, :] = softmax( S[bh, s, :] * scale + G[bh, s, :] )   in place, fp32 math
//
// computed as exp2(S*scale*log2(e) + G') with G' = G*log2(e): the smolgen weights are uploaded
// pre-scaled (lc0py/backends/gpu/weights.py), like for the flash kernels. `scale` here is the
// caller's 1/sqrt(d) * log2(e).
//
// S is [B*H, seq, seq] (written by the Q.K^T GEMM), G the smolgen bias in the same layout
// (nullptr = none). One warp per row; LC0_SM_PER = ceil(seq / warp) values per lane stay in
// registers. Used when the flash kernel does not support a shape, fails, or flash=off.
#include "common.h"

#ifndef LC0_SM_PER
#define LC0_SM_PER 2
#endif

extern "C" __global__ void softmax_bias(T* LC0_RESTRICT s, const T* LC0_RESTRICT g, long long rows, int seq,
                                        float scale) {
    lc0_grid_dependency_sync();
    const long long row = (long long)blockIdx.x * (blockDim.x / WARP_SIZE) + threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    if (row >= rows) return;  // whole warp leaves together
    T* sr = s + row * seq;
    const T* gr = g ? g + row * seq : nullptr;
    float x[LC0_SM_PER];
    float m = LC0_NEG_INF;
#pragma unroll
    for (int i = 0; i < LC0_SM_PER; ++i) {
        const int c = lane + i * WARP_SIZE;
        float val = LC0_NEG_INF;
        if (c < seq) {
            val = to_f32(sr[c]) * scale;
            if (gr != nullptr) val += to_f32(gr[c]);
        }
        x[i] = val;
        m = fmaxf(m, val);
    }
    m = warp_max(m);
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < LC0_SM_PER; ++i) {
        const int c = lane + i * WARP_SIZE;
        x[i] = c < seq ? exp2f(x[i] - m) : 0.f;
        sum += x[i];
    }
    const float inv = 1.f / warp_sum(sum);
#pragma unroll
    for (int i = 0; i < LC0_SM_PER; ++i) {
        const int c = lane + i * WARP_SIZE;
        if (c < seq) store_f32(&sr[c], x[i] * inv);
    }
}

// softmax_rows -- lc0py.attention's naive GPU path (GEMM, this, GEMM; the scores are
// materialised): for every row (bh, i) of S [B*H, Lq, Lk], in place, fp32 math,
//
//   S[bh, i, :] = softmax( S[bh, i, :] * scale + bias[b, h, i, :] )   (causal: keys j > i = -inf)
//
// with b = bh / heads, h = bh % heads, bias strides g_b / g_h per batch / head (0 = broadcast),
// rows of Lk elements, natural-log units (a boolean mask arrives as 0 / -inf). A row whose keys
// are all masked becomes 0 (as the flash kernel's general entry). One block per row, any Lk:
// three passes over the row (max, sum, write) that hit L1/L2 after the first.
extern "C" __global__ void softmax_rows(T* LC0_RESTRICT s, const T* LC0_RESTRICT g, long long g_b,
                                        long long g_h, int heads, int q_len, int kv_len, int causal,
                                        float scale) {
    lc0_grid_dependency_sync();
    __shared__ float red[32];
    const long long row = blockIdx.x;
    const long long bh = row / q_len;
    const int i = (int)(row % q_len);
    const long long b = bh / heads, h = bh % heads;
    T* sr = s + row * kv_len;
    const T* gr = g ? g + b * g_b + h * g_h + (long long)i * kv_len : nullptr;
    const int n = causal ? min(kv_len, i + 1) : kv_len;
    const float sl = scale * LC0_LOG2E;
    const int warps = blockDim.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE, w = threadIdx.x / WARP_SIZE;
    auto logit = [&](int j) {
        float x = to_f32(sr[j]) * sl;
        if (gr != nullptr) x += to_f32(gr[j]) * LC0_LOG2E;
        return x;
    };
    auto block_reduce = [&](float x, bool is_max) {
        x = is_max ? warp_max(x) : warp_sum(x);
        __syncthreads();  // red[] of a previous reduction fully read
        if (lane == 0) red[w] = x;
        __syncthreads();
        x = lane < warps ? red[lane] : (is_max ? LC0_NEG_INF : 0.f);
        return is_max ? warp_max(x) : warp_sum(x);
    };
    float m = LC0_NEG_INF;
    for (int j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, logit(j));
    m = block_reduce(m, true);
    const float mu = m == LC0_NEG_INF ? 0.f : m;  // all masked: every p is 0
    float sum = 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) sum += exp2f(logit(j) - mu);
    sum = block_reduce(sum, false);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    for (int j = threadIdx.x; j < kv_len; j += blockDim.x) store_f32(&sr[j], j < n ? exp2f(logit(j) - mu) * inv : 0.f);
}
