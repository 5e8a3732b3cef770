// prelude_nvrtc.h -- HIP spellings -> CUDA for NVRTC. The ONLY vendor switch on the NVIDIA side.
//
// The kernels in this folder are single-source HIP C++. On AMD, hiprtc compiles them as they are
// (the HIP platform pre-includes its own prelude with the same names). On NVIDIA, the CUDA
// platform pre-includes this file (NVRTC `-include prelude_nvrtc.h`), which defines the small
// vocabulary every kernel uses, so kernels never name a CUDA-only intrinsic:
//
//   LC0_NVIDIA / LC0_AMD        which vendor compiles (exactly one is defined to 1)
//   WARP_SIZE                   32 here; 64 on CDNA, 32 on RDNA wave32
//   u16, u32, u64               fixed-width unsigned integers (NVRTC has no <cstdint> here)
//   f16                         16-bit IEEE half *storage* type (all arithmetic is done in fp32)
//   f16_to_f32 / f32_to_f16     conversions (round to nearest even)
//   warp_shfl_xor(v, m)         butterfly shuffle among the lanes of a warp (float / u32)
//   warp_sync()                 converge the warp (after per-warp shared-memory writes)
//   lc0_exp2 / lc0_rsqrt / lc0_rcp  fast special functions (ex2 / rsqrt / rcp .approx; rel err ~2^-22)
//   lc0_fence_device / lc0_atomic_add  __threadfence / atomicAdd on a u32 (a grid's last-block hand-off)
//   lc0_load_global_cg          a float another block wrote, read past L1 (ld.global.cg)
//   lc0_load_volatile_u32       a u32 other blocks are changing (a grid barrier's spin); lc0_spin_pause
//   lc0_weights_before_wait()   marks a kernel that loads weights before lc0_grid_dependency_sync():
//                               only what no kernel writes (the net's weights), never the previous
//                               kernel's outputs and no store (tests/kernels/test_dependent_launch.py)
//   lc0_grid_dependency_sync()  every kernel's first statement: waits for the kernel before it in
//                               the stream (programmatic dependent launch, sm_90+), then lets the
//                               next one launch; a no-op on AMD, before sm_90 and without the attribute
//   LC0_DEVICE / LC0_RESTRICT   spelled the same on both vendors
//   async_copy16(smem, gmem)    16-byte global->shared copy that does not wait (cp.async on
//   async_commit()              sm_80+; a plain copy where the vendor has none); commit closes
//   async_wait<N>()             a group, wait<N> waits until at most N groups are pending
//
// We do NOT include <cuda_fp16.h>: NVRTC needs the toolkit's include folder for it, which an
// installed wheel (nvidia-cuda-nvrtc) does not ship. A storage-only half type plus two PTX `cvt`
// conversions is all the kernels need, and keeps the compile free of file-system lookups.
#pragma once

#define LC0_NVIDIA 1
#define WARP_SIZE 32
#define LC0_DEVICE __device__ __forceinline__
#define LC0_RESTRICT __restrict__

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct __align__(2) f16 {
    u16 x;
};

LC0_DEVICE float f16_to_f32(f16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
    return f;
}

LC0_DEVICE f16 f32_to_f16(float f) {
    f16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}

// Two floats -> one 32-bit register holding (lo, hi) halves: the operand format of mma.sync.
LC0_DEVICE u32 pack_f16x2(float lo, float hi) {
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

LC0_DEVICE float warp_shfl_xor(float v, int lane_mask) {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask, WARP_SIZE);
}
LC0_DEVICE u32 warp_shfl_xor(u32 v, int lane_mask) {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask, WARP_SIZE);
}
LC0_DEVICE void warp_sync() { __syncwarp(); }

LC0_DEVICE float lc0_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
LC0_DEVICE float lc0_rsqrt(float x) { return rsqrtf(x); }

// A block's global writes made visible to the whole device before what follows (the "last block"
// hand-off of dense_rows.hip), and an atomic add on a u32 in global memory (returns the old value).
LC0_DEVICE void lc0_fence_device() { __threadfence(); }
LC0_DEVICE u32 lc0_atomic_add(u32* p, u32 v) { return atomicAdd(p, v); }
// A float another block wrote, read at L2 (ld.global.cg: past this multiprocessor's L1); asm volatile
// keeps it after the fence before it.
LC0_DEVICE float lc0_load_global_cg(const float* p) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
// A counter other blocks are raising, read from L2 on every call (a grid barrier's spin loop).
LC0_DEVICE u32 lc0_load_volatile_u32(const u32* p) {
    u32 v;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
LC0_DEVICE void lc0_spin_pause() {}

// Programmatic dependent launch (Hopper+). A kernel the platform launches with the attribute
// (Platform.dependent_launch) may be scheduled while the kernel before it in the stream still runs,
// so its launch and block set-up overlap that kernel's tail. `griddepcontrol.wait` then holds it
// until the previous grid has finished and its writes are visible; it must come before any read of
// that grid's outputs and before any write (the previous grid may still read what we would
// overwrite). `launch_dependents` lets the next kernel be scheduled once every block of this one
// has started. Every __global__ function calls this first, or after loading only weights where its
// first statement is lc0_weights_before_wait() (tests/kernels/test_dependent_launch.py).
LC0_DEVICE void lc0_grid_dependency_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// A kernel's first statement where it loads weights before its lc0_grid_dependency_sync(): does
// nothing; it names the contract (loads of weights only, no store) for readers and the test.
LC0_DEVICE void lc0_weights_before_wait() {}
LC0_DEVICE float lc0_rcp(float x) {  // 1/x to about 1 ulp (one MUFU.RCP); 1/inf = 0
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Shared-memory address as the 32-bit value ldmatrix/cp.async want.
LC0_DEVICE u32 lc0_smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }

#if __CUDA_ARCH__ >= 800
LC0_DEVICE void async_copy16(void* smem, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(lc0_smem_addr(smem)), "l"(gmem));
}
LC0_DEVICE void async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
LC0_DEVICE void async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
#else  // before sm_80 (Volta, Turing): a plain 16-byte copy, complete when it returns
LC0_DEVICE void async_copy16(void* smem, const void* gmem) {
    *reinterpret_cast<uint4*>(smem) = *reinterpret_cast<const uint4*>(gmem);
}
LC0_DEVICE void async_commit() {}
template <int N>
LC0_DEVICE void async_wait() {}
#endif
