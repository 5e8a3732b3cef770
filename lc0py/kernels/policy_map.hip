// policy_map.hip -- attention policy: promotion logits and the 4288 -> 1858 gather in one kernel
// (docs/attention-body.md §8). Blocks (position, part): part p of gridDim.y takes the outputs
// k = p * blockDim.x + t, p * blockDim.x + t + gridDim.y * blockDim.x, ...
//   off[j][r] = Kp[56 + j] . wpromo[r]                 (8 to-files x 4 pieces, fp32 dots)
//   v[f*64 + t]                = Lg[f, t]               (already scaled by 1/sqrt(Pd) in the GEMM)
//   v[4096 + i*24 + j*3 + r]   = Lg[48+i, 56+j] + off[j][r] + off[j][3]
//   policy[k] = v[gather[k]]   written as fp32
// Only the 1858 needed entries are produced; the 4288 vector never exists in memory. A thread's
// first output is read before the promotion dots, so its two dependent loads (the index, then
// the logit) overlap them: with one block a position and 7 outputs a thread the kernel was a
// chain of dependent loads, ~15 us at any batch up to 32 on an H200. Every block computes the 32
// dots (18 KB from L2 a position): cheap beside the chain, and no block waits for another.
// blockDim.x: a multiple of 32 (a dot's threads are a power of two).
#include "common.h"

LC0_DEVICE int policy_source(int idx) {
    if (idx < 4096) return idx;
    const int p = idx - 4096, i = p / 24, j = (p % 24) / 3;
    return (48 + i) * 64 + 56 + j;
}

extern "C" __global__ void policy_gather(const T* LC0_RESTRICT lg, const T* LC0_RESTRICT kp, int ld_kp,
                                         const T* LC0_RESTRICT wpromo, int pd, const int* LC0_RESTRICT gather,
                                         int n_out, float* LC0_RESTRICT out) {
    lc0_grid_dependency_sync();
    __shared__ float off[8][4];
    const int b = blockIdx.x;
    const T* lb = lg + (long long)b * 4096;
    const int first = blockIdx.y * blockDim.x + threadIdx.x, stride = gridDim.y * blockDim.x;
    int idx0 = 0;
    float val0 = 0.f;
    if (first < n_out) {
        idx0 = gather[first];
        val0 = to_f32(lb[policy_source(idx0)]);
    }
    // the 32 dots, blockDim.x / 32 neighbouring threads each (8 of a 256-thread block: a group never
    // spans two warps), 16-byte loads where the rows allow them
    const int per = blockDim.x / 32, d = threadIdx.x / per, sub = threadIdx.x % per;
    const int j = d / 4, r = d % 4;
    const T* krow = kp + ((long long)b * 64 + 56 + j) * ld_kp;
    const T* wrow = wpromo + r * pd;
    float acc = 0.f;
    if (pd % LC0_VEC == 0 && ((unsigned long long)krow | (unsigned long long)wrow) % 16 == 0) {
        for (int c = sub * LC0_VEC; c < pd; c += per * LC0_VEC) {
            float a[LC0_VEC], w[LC0_VEC];
            load_vec(krow + c, a);
            load_vec(wrow + c, w);
#pragma unroll
            for (int i = 0; i < LC0_VEC; ++i) acc += a[i] * w[i];
        }
    } else {
        for (int c = sub; c < pd; c += per) acc += to_f32(krow[c]) * to_f32(wrow[c]);
    }
    for (int m = per / 2; m > 0; m >>= 1) acc += warp_shfl_xor(acc, m);
    if (sub == 0) off[j][r] = acc;
    __syncthreads();
    for (int k = first; k < n_out; k += stride) {
        const int idx = k == first ? idx0 : gather[k];
        float val = k == first ? val0 : to_f32(lb[policy_source(idx)]);
        if (idx >= 4096) {
            const int p = idx - 4096, j = (p % 24) / 3, r = p % 3;
            val += off[j][r] + off[j][3];
        }
        out[(long long)b * n_out + k] = val;
    }
}

// Convolution and classical policy heads of residual nets: out[b, k] = src[b * stride + gather[k]]
// + bias[k] as fp32. Convolution policy: src = the second policy convolution in NHWC [64, P] per
// position, gather[k] = square*P + plane of lc0's 73x64 -> 1858 map, bias[k] = that plane's bias;
// classical: src = the dense output [1858], gather = identity, bias = the dense bias.
// Blocks (position, part) as policy_gather's.
extern "C" __global__ void gather_bias(const T* LC0_RESTRICT src, int stride, const int* LC0_RESTRICT gather,
                                       const T* LC0_RESTRICT bias, int n_out, float* LC0_RESTRICT out) {
    lc0_grid_dependency_sync();
    const int b = blockIdx.x;
    const T* sb = src + (long long)b * stride;
    for (int k = blockIdx.y * blockDim.x + threadIdx.x; k < n_out; k += gridDim.y * blockDim.x)
        out[(long long)b * n_out + k] = to_f32(sb[gather[k]]) + to_f32(bias[k]);
}
