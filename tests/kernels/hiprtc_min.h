// hiprtc_min.h -- a stand-in for the runtime header hiprtc pre-defines, used by
// test_compile_amd.py ONLY when the real one is not available. The real one is extracted from
// Debian's libhiprtc-builtins5 (ROCm 5.2's hiprtc, symbol __hipRTC_header) and is preferred:
// it has every HIP device name with ROCm's own definitions. This file covers just what the
// kernels use besides kernels/prelude_hiprtc.h (threadIdx & co, __syncthreads, uint4,
// __launch_bounds__); __global__, __shared__ and the math functions
// come from clang's __clang_hip_runtime_wrapper.h (compiled with -D__HIPCC_RTC__, as hiprtc does).
#pragma once

#define __align__(n) __attribute__((aligned(n)))
// HIP's own spelling (amd_detail/host_defines.h): the second argument becomes waves per EU.
#define __lc0_lb1(t) __attribute__((amdgpu_flat_work_group_size(1, t)))
#define __lc0_lb2(t, m) __attribute__((amdgpu_flat_work_group_size(1, t), amdgpu_waves_per_eu(m)))
#define __lc0_lb_pick(_1, _2, impl, ...) impl
#define __launch_bounds__(...) __lc0_lb_pick(__VA_ARGS__, __lc0_lb2, __lc0_lb1)(__VA_ARGS__)

struct __attribute__((aligned(16))) uint4 {
    unsigned x, y, z, w;
};
static __device__ inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
static __device__ inline float __int_as_float(int v) { return __builtin_bit_cast(float, v); }

struct __lc0_uint3 {
    unsigned x, y, z;
};
#define threadIdx \
    (__lc0_uint3{__builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z()})
#define blockIdx \
    (__lc0_uint3{__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z()})
#define blockDim \
    (__lc0_uint3{__builtin_amdgcn_workgroup_size_x(), __builtin_amdgcn_workgroup_size_y(), __builtin_amdgcn_workgroup_size_z()})
#define gridDim                                                               \
    (__lc0_uint3{__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x(), \
                 __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y(), \
                 __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z()})

static __device__ inline void __syncthreads() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
