// hiprtc_min.h -- a stand-in for the runtime header hiprtc pre-defines, used by
// test_compile_amd.py ONLY when the real one is not available. The real one is extracted from
// Debian's libhiprtc-builtins5 (ROCm 5.2's hiprtc, section .hipRTC_header) and is preferred:
// it has every HIP device name with ROCm's own definitions. This file covers just what the
// kernels use besides kernels/prelude_hiprtc.h; __global__, __shared__ and the math functions
// come from clang's __clang_hip_runtime_wrapper.h (compiled with -D__HIPCC_RTC__, as hiprtc does).
#pragma once

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
