// policy_map.hip -- attention policy: promotion logits and the 4288 -> 1858 gather in one kernel
// (docs/attention-body.md §8). One block per position:
//   off[j][r] = Kp[56 + j] . wpromo[r]                 (8 to-files x 4 pieces, fp32 dots)
//   v[f*64 + t]                = Lg[f, t]               (already scaled by 1/sqrt(Pd) in the GEMM)
//   v[4096 + i*24 + j*3 + r]   = Lg[48+i, 56+j] + off[j][r] + off[j][3]
//   policy[k] = v[gather[k]]   written as fp32
// Only the 1858 needed entries are produced; the 4288 vector never exists in memory.
#include "common.h"

extern "C" __global__ void policy_gather(const T* LC0_RESTRICT lg, const T* LC0_RESTRICT kp, int ld_kp,
                                         const T* LC0_RESTRICT wpromo, int pd, const int* LC0_RESTRICT gather,
                                         int n_out, float* LC0_RESTRICT out) {
    __shared__ float off[8][4];
    const int b = blockIdx.x;
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    const int warps = blockDim.x / WARP_SIZE;
    const T* kb = kp + (long long)b * 64 * ld_kp;
    for (int d = warp; d < 32; d += warps) {
        const int j = d / 4, r = d % 4;
        float acc = 0.f;
        for (int c = lane; c < pd; c += WARP_SIZE) acc += to_f32(kb[(56 + j) * (long long)ld_kp + c]) * to_f32(wpromo[r * pd + c]);
        acc = warp_sum(acc);
        if (lane == 0) off[j][r] = acc;
    }
    __syncthreads();
    const T* lb = lg + (long long)b * 4096;
    for (int k = threadIdx.x; k < n_out; k += blockDim.x) {
        const int idx = gather[k];
        float val;
        if (idx < 4096) {
            val = to_f32(lb[idx]);
        } else {
            const int p = idx - 4096, i = p / 24, j = (p % 24) / 3, r = p % 3;
            val = to_f32(lb[(48 + i) * 64 + 56 + j]) + off[j][r] + off[j][3];
        }
        out[(long long)b * n_out + k] = val;
    }
}

// Convolution and classical policy heads of residual nets: out[b, k] = src[b * stride + gather[k]]
// + bias[k] as fp32. Convolution policy: src = the second policy convolution in NHWC [64, P] per
// position, gather[k] = square*P + plane of lc0's 73x64 -> 1858 map, bias[k] = that plane's bias;
// classical: src = the dense output [1858], gather = identity, bias = the dense bias.
extern "C" __global__ void gather_bias(const T* LC0_RESTRICT src, int stride, const int* LC0_RESTRICT gather,
                                       const T* LC0_RESTRICT bias, int n_out, float* LC0_RESTRICT out) {
    const int b = blockIdx.x;
    const T* sb = src + (long long)b * stride;
    for (int k = threadIdx.x; k < n_out; k += blockDim.x)
        out[(long long)b * n_out + k] = to_f32(sb[gather[k]]) + to_f32(bias[k]);
}
