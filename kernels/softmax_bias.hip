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
