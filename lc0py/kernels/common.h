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

#define LC0_LOG2E 1.4426950408889634f

// -inf without <math.h> (NVRTC has no INFINITY macro without headers).
#define LC0_NEG_INF (-__int_as_float(0x7f800000))
