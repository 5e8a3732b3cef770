// residual.hip -- classical residual (SE-ResNet) bodies on activations in NHWC = [B*64, C] rows
// (row b*64 + s, s = rank*8 + file), so 1x1 convolutions and dense layers are plain GEMMs.
//
//   im2col3x3    a same-padded 3x3 convolution becomes ONE GEMM [B*64, 9C] x [Cout, 9C]^T:
//                cols[r, t*C + c] = x[neighbour(r, t), c] (0 off the board), t = dr*3 + df,
//                neighbour = (rank + dr - 1, file + df - 1). The host packs the weights
//                [Cout, Cin, 3, 3] as [Cout, 3, 3, Cin] to match (weights.py ConvWeights).
//   se_residual  after a block's second convolution, one block per position:
//                y += b; [SE: p = mean_s y; h = act(W1 p + b1); z = W2 h + b2;
//                y = sigmoid(z[:C]) * y + z[C:]]; out = act(y + skip). lc0's SE layout: the
//                first C outputs of fc2 are the (sigmoid) scale, the second C the bias.
#include "common.h"
#include "activations.h"

extern "C" __global__ void im2col3x3(const T* LC0_RESTRICT x, T* LC0_RESTRICT cols, int rows, int c) {
    const int vec = (c % LC0_VEC == 0) ? LC0_VEC : 1;
    const unsigned cpt = (unsigned)(c / vec);  // chunks per tap
    const unsigned per_row = 9u * cpt;
    const unsigned total = (unsigned)rows * per_row;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const unsigned r = i / per_row, rem = i - r * per_row;
        const unsigned t = rem / cpt, k = (rem - t * cpt) * (unsigned)vec;
        const int s = (int)(r & 63u);
        const int rank = (s >> 3) + (int)(t / 3u) - 1, file = (s & 7) + (int)(t % 3u) - 1;
        const bool on = rank >= 0 && rank < 8 && file >= 0 && file < 8;
        T* dst = cols + (size_t)i * vec;
        const size_t src_row = (size_t)(r - (unsigned)s) + (size_t)(on ? rank * 8 + file : 0);
        const T* src = x + src_row * (size_t)c + k;
        if (vec == LC0_VEC) {
            uint4 v;
            v.x = v.y = v.z = v.w = 0u;
            if (on) v = *reinterpret_cast<const uint4*>(src);
            *reinterpret_cast<uint4*>(dst) = v;
        } else {
            store_f32(dst, on ? to_f32(*src) : 0.f);
        }
    }
}

// Dynamic shared memory: (3C + S) floats when w1 != nullptr (pooled[C], hidden[S], gate[2C]).
// w1 == nullptr: a block without SE, out = act(y + b + skip). out may alias skip (same element).
extern "C" __global__ void se_residual(const T* LC0_RESTRICT y, const T* LC0_RESTRICT bias, const T* skip,
                                       T* out, const T* LC0_RESTRICT w1, const T* LC0_RESTRICT b1,
                                       const T* LC0_RESTRICT w2, const T* LC0_RESTRICT b2, int c, int se,
                                       int act) {
    extern __shared__ float se_smem[];
    const int b = blockIdx.x;
    const size_t base = (size_t)b * 64 * c;
    const T* yb = y + base;
    const bool has_se = w1 != nullptr;
    float* pooled = se_smem;
    float* hidden = se_smem + c;
    float* gate = hidden + se;
    if (has_se) {
        for (int ch = threadIdx.x; ch < c; ch += blockDim.x) {
            float acc = 0.f;
            for (int s = 0; s < 64; ++s) acc += to_f32(yb[s * c + ch]);
            pooled[ch] = acc * (1.f / 64.f) + to_f32(bias[ch]);
        }
        __syncthreads();
        const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
        const int warps = blockDim.x / WARP_SIZE;
        for (int o = warp; o < se; o += warps) {  // fc1: K = C, one warp per output
            float acc = 0.f;
            for (int k = lane; k < c; k += WARP_SIZE) acc += to_f32(w1[(size_t)o * c + k]) * pooled[k];
            acc = warp_sum(acc);
            if (lane == 0) hidden[o] = activate(acc + to_f32(b1[o]), act);
        }
        __syncthreads();
        for (int o = threadIdx.x; o < 2 * c; o += blockDim.x) {  // fc2: K = S, one thread per output
            float acc = to_f32(b2[o]);
            for (int k = 0; k < se; ++k) acc += to_f32(w2[(size_t)o * se + k]) * hidden[k];
            gate[o] = o < c ? activate(acc, LC0_ACT_SIGMOID) : acc;
        }
        __syncthreads();
    }
    const int vec = (c % LC0_VEC == 0) ? LC0_VEC : 1;
    const int chunks = 64 * c / vec;
    for (int i = threadIdx.x; i < chunks; i += blockDim.x) {
        const int e = i * vec, ch = e % c;
        float v[LC0_VEC], sk[LC0_VEC];
        if (vec == LC0_VEC) {
            load_vec(yb + e, v);
            load_vec(skip + base + e, sk);
        } else {
            v[0] = to_f32(yb[e]);
            sk[0] = to_f32(skip[base + e]);
        }
        for (int j = 0; j < vec; ++j) {
            float t = v[j] + to_f32(bias[ch + j]);
            if (has_se) t = gate[ch + j] * t + gate[c + ch + j];
            v[j] = activate(t + sk[j], act);
        }
        if (vec == LC0_VEC) store_vec(out + base + e, v);
        else store_f32(out + base + e, v[0]);
    }
}
