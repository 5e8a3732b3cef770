// common.h -- vendor-neutral helpers shared by every kernel (no vendor #if in here).
//
// LC0_FP16 (compile define, default 1) selects the storage type T of activations and weights:
// f16 (fp16 backend) or float (fp32 backend). All arithmetic is fp32; T is only how values are
// stored. Vector helpers move 16 bytes per thread (8 halves / 4 floats): the widest access, and
// the one that keeps a warp's loads fully coalesced.
#pragma once

#ifndef LC0_FP16
#define LC0_FP16 1
#endif

#if LC0_FP16
typedef f16 T;
#else
typedef float T;
#endif

// elements of T in 16 bytes
#define LC0_VEC (16 / (int)sizeof(T))

LC0_DEVICE float to_f32(float x) { return x; }
LC0_DEVICE float to_f32(f16 x) { return f16_to_f32(x); }
LC0_DEVICE void store_f32(float* p, float v) { *p = v; }
LC0_DEVICE void store_f32(f16* p, float v) { *p = f32_to_f16(v); }

// 16-byte vector load/store of LC0_VEC elements of T, converted to/from fp32.
LC0_DEVICE void load_vec(const T* p, float* out) {
    uint4 u = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
    for (int i = 0; i < LC0_VEC; ++i) out[i] = to_f32(e[i]);
}
LC0_DEVICE void store_vec(T* p, const float* in) {
    uint4 u;
    T* e = reinterpret_cast<T*>(&u);
#pragma unroll
    for (int i = 0; i < LC0_VEC; ++i) store_f32(&e[i], in[i]);
    *reinterpret_cast<uint4*>(p) = u;
}

LC0_DEVICE float warp_sum(float v) {
#pragma unroll
    for (int m = WARP_SIZE / 2; m > 0; m >>= 1) v += warp_shfl_xor(v, m);
    return v;
}
LC0_DEVICE float warp_max(float v) {
#pragma unroll
    for (int m = WARP_SIZE / 2; m > 0; m >>= 1) v = fmaxf(v, warp_shfl_xor(v, m));
    return v;
}

// A chunk of a row kept as its raw 16 bytes until used: V = LC0_VEC elements (one vector load), or
// V = 1 for rows that are not a vector multiple (one element, the rest zero). 4 registers instead
// of 8 floats (fp16), which lets every load of a row be in flight at once without capping
// occupancy.
template <int V>
LC0_DEVICE uint4 raw_chunk(const T* p) {
    if (V == LC0_VEC) return *reinterpret_cast<const uint4*>(p);
    uint4 u = make_uint4(0, 0, 0, 0);
    *reinterpret_cast<T*>(&u) = *p;
    return u;
}
// The dot product of two raw chunks of V elements, in fp32.
template <int V>
LC0_DEVICE float dot_raw_chunks(const uint4& a, const uint4& b) {
    const T* x = reinterpret_cast<const T*>(&a);
    const T* y = reinterpret_cast<const T*>(&b);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < V; ++i) s += to_f32(x[i]) * to_f32(y[i]);
    return s;
}

// The sum of v over a block of WARPS warps (every thread gets it); red: WARPS floats of shared
// memory. Every thread of the block must call it (two barriers).
template <int WARPS>
LC0_DEVICE float block_sum(float v, float* red) {
    v = warp_sum(v);
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    __syncthreads();  // red is free again (a previous call's readers are done)
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) total += red[w];
    return total;
}

#define LC0_LOG2E 1.4426950408889634f

// -inf without <math.h> (NVRTC has no INFINITY macro without headers).
#define LC0_NEG_INF (-__int_as_float(0x7f800000))
