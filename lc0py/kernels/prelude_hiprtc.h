// prelude_hiprtc.h -- the AMD twin of prelude_nvrtc.h: the small vocabulary every kernel uses,
// spelled with clang AMDGPU builtins. The HIP platform (lc0py/backends/gpu/hip_platform.py)
// pre-includes it in every hiprtc compile; kernels never name an AMD-only builtin themselves.
//
//   LC0_AMD                     defined to 1 (LC0_NVIDIA is the NVRTC prelude's)
//   WARP_SIZE                   64 on gfx9 (GCN/CDNA: wave64 only), 32 on gfx10+ (RDNA: HIP
//                               compiles wave32 unless -mwavefrontsize64, which we never pass)
//   u16, u32, u64               fixed-width unsigned integers
//   f16                         16-bit IEEE half *storage* type, the same struct as on NVIDIA
//   f16_to_f32 / f32_to_f16     conversions (round to nearest even: v_cvt_f16_f32)
//   pack_f16x2(lo, hi)          two floats -> (lo | hi << 16) halves
//   warp_shfl_xor(v, m)         butterfly shuffle among the lanes of a wave (ds_bpermute)
//   warp_sync()                 converge the wave and order its shared-memory accesses
//   lc0_exp2 / lc0_rsqrt / lc0_rcp  v_exp_f32 / v_rsq_f32 / v_rcp_f32 (1 ulp; inputs are never denormal here)
//   lc0_fence_device / lc0_atomic_add  device-scope fence / atomic add on a u32 (a grid's last-block hand-off)
//   lc0_load_global_cg          a float another block wrote (after lc0_fence_device)
//   lc0_load_volatile_u32       a u32 other blocks are changing (a grid barrier's spin); lc0_spin_pause
//   lc0_weights_before_wait()   marks a kernel that loads weights before lc0_grid_dependency_sync():
//                               only what no kernel writes (the net's weights), never the previous
//                               kernel's outputs and no store (tests/kernels/test_dependent_launch.py)
//   lc0_grid_dependency_sync()  every kernel's first statement; NVIDIA's programmatic dependent
//                               launch has no HIP counterpart, so here it does nothing
//   LC0_DEVICE / LC0_RESTRICT   spelled the same on both vendors
//   async_copy16(smem, gmem)    16-byte global->shared copy. AMD has no cp.async equivalent
//   async_commit()              before gfx950, so this is a plain 16-byte copy through
//   async_wait<N>()             registers and commit/wait are no-ops: the copy is complete in
//                               program order, and the kernel's __syncthreads publishes it
//
// Only clang builtins are used (no HIP header function), so the file compiles the same under
// every ROCm's hiprtc and under plain clang in CI (tests/kernels/test_compile_amd.py), where no
// ROCm is installed. threadIdx, __syncthreads, __shared__ and __global__ still come from hiprtc's
// own pre-defined runtime header, exactly as on NVIDIA they come from NVRTC.
#pragma once

#define LC0_AMD 1

// Not __AMDGCN_WAVEFRONT_SIZE: newer clang deprecates it (a warning in every compile). The arch
// family decides it: gfx9 (incl. CDNA gfx908/90a/94x/950) only runs wave64; HIP builds gfx10+
// (RDNA) for wave32 by default.
#if defined(__GFX9__) || defined(__GFX8__)
#define WARP_SIZE 64
#else
#define WARP_SIZE 32
#endif

#define LC0_DEVICE __device__ inline __attribute__((always_inline))
#define LC0_RESTRICT __restrict__

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// The same storage struct as prelude_nvrtc.h, so host code and kernels see one type.
struct __attribute__((aligned(2))) f16 {
    u16 x;
};

LC0_DEVICE float f16_to_f32(f16 h) { return (float)__builtin_bit_cast(_Float16, h.x); }

LC0_DEVICE f16 f32_to_f16(float f) {
    f16 h;
    h.x = __builtin_bit_cast(u16, (_Float16)f);  // IEEE conversion: round to nearest even
    return h;
}

LC0_DEVICE u32 pack_f16x2(float lo, float hi) {
    return (u32)f32_to_f16(lo).x | ((u32)f32_to_f16(hi).x << 16);
}

// Hardware lane (0..WARP_SIZE-1), whatever the block shape: mbcnt counts the set bits of the
// all-ones mask below this lane (what HIP's __lane_id() does).
LC0_DEVICE int lc0_lane() {
#if WARP_SIZE == 64
    return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
#else
    return (int)__builtin_amdgcn_mbcnt_lo(~0u, 0u);
#endif
}

// ds_bpermute: lane l reads the value of lane addr/4; the same instruction HIP's __shfl_xor uses.
LC0_DEVICE u32 warp_shfl_xor(u32 v, int lane_mask) {
    const int src = lc0_lane() ^ lane_mask;
    return (u32)__builtin_amdgcn_ds_bpermute(src << 2, (int)v);
}
LC0_DEVICE float warp_shfl_xor(float v, int lane_mask) {
    return __builtin_bit_cast(float, warp_shfl_xor(__builtin_bit_cast(u32, v), lane_mask));
}

// A wave executes in lockstep, so only the compiler must be stopped from moving shared-memory
// accesses across this point (ROCm's __syncwarp is the same three builtins).
LC0_DEVICE void warp_sync() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}

LC0_DEVICE float lc0_exp2(float x) {
#if __has_builtin(__builtin_amdgcn_exp2f)
    return __builtin_amdgcn_exp2f(x);  // v_exp_f32, no denormal-range fix-up code
#else
    return __builtin_exp2f(x);
#endif
}
LC0_DEVICE float lc0_rsqrt(float x) { return __builtin_amdgcn_rsqf(x); }

// A block's global writes made visible to the whole device (agent scope) before what follows, and
// an atomic add on a u32 in global memory returning the old value: what HIP's __threadfence and
// atomicAdd are, with clang builtins only.
LC0_DEVICE void lc0_fence_device() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
LC0_DEVICE u32 lc0_atomic_add(u32* p, u32 v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
// A float another block wrote: a plain load, since the agent-scope fence before it (seq_cst: an
// acquire) already invalidated this compute unit's vector L1.
LC0_DEVICE float lc0_load_global_cg(const float* p) { return *p; }
// A counter other blocks are raising (a grid barrier's spin loop): an acquiring atomic load.
LC0_DEVICE u32 lc0_load_volatile_u32(const u32* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
LC0_DEVICE void lc0_spin_pause() { __builtin_amdgcn_s_sleep(1); }
// Kernels launch in stream order here (no programmatic dependent launch; prelude_nvrtc.h).
LC0_DEVICE void lc0_grid_dependency_sync() {}
LC0_DEVICE float lc0_rcp(float x) {  // 1/x to about 1 ulp (v_rcp_f32); 1/inf = 0
#if __has_builtin(__builtin_amdgcn_rcpf)
    return __builtin_amdgcn_rcpf(x);
#else
    return 1.0f / x;
#endif
}
// A kernel's first statement where it loads weights before its lc0_grid_dependency_sync(): does
// nothing; it names the contract (loads of weights only, no store) for readers and the test.
LC0_DEVICE void lc0_weights_before_wait() {}

typedef unsigned lc0_u32x4 __attribute__((ext_vector_type(4)));
LC0_DEVICE void async_copy16(void* smem, const void* gmem) {
    *reinterpret_cast<lc0_u32x4*>(smem) = *reinterpret_cast<const lc0_u32x4*>(gmem);
}
LC0_DEVICE void async_commit() {}
template <int N>
LC0_DEVICE void async_wait() {}
