// amd_devlib_stubs.h -- stand-ins for the few ROCm device-library functions (ockl/ocml bitcode)
// the kernels reach through hiprtc's header, for the CI compile only (amd_compile.py).
//
// Why: on a real GPU hiprtc links ROCm's device libraries, so threadIdx, fmaxf, expf, tanhf are
// inlined. Our CI compile has no ROCm; left undefined they become calls, and a call makes the
// backend save registers around it -- the assembly then shows spills that hiprtc would never
// produce, and VGPR counts/occupancy read from it are meaningless. These definitions are what the
// device libraries boil down to (work-item builtins, the hardware min/max/rsq, exp), so the
// assembly stays close to a hiprtc build. Accuracy of tanhf here is irrelevant: nothing runs.
#pragma once

extern "C" {
__attribute__((device)) __SIZE_TYPE__ __ockl_get_local_id(unsigned d) {
    return d == 0 ? __builtin_amdgcn_workitem_id_x() : d == 1 ? __builtin_amdgcn_workitem_id_y()
                                                              : __builtin_amdgcn_workitem_id_z();
}
__attribute__((device)) __SIZE_TYPE__ __ockl_get_group_id(unsigned d) {
    return d == 0 ? __builtin_amdgcn_workgroup_id_x() : d == 1 ? __builtin_amdgcn_workgroup_id_y()
                                                               : __builtin_amdgcn_workgroup_id_z();
}
__attribute__((device)) __SIZE_TYPE__ __ockl_get_local_size(unsigned d) {
    return d == 0 ? __builtin_amdgcn_workgroup_size_x() : d == 1 ? __builtin_amdgcn_workgroup_size_y()
                                                                 : __builtin_amdgcn_workgroup_size_z();
}
__attribute__((device)) __SIZE_TYPE__ __ockl_get_global_size(unsigned d) {
    return d == 0 ? __builtin_amdgcn_grid_size_x() : d == 1 ? __builtin_amdgcn_grid_size_y()
                                                            : __builtin_amdgcn_grid_size_z();
}
__attribute__((device)) __SIZE_TYPE__ __ockl_get_num_groups(unsigned d) {
    return __ockl_get_global_size(d) / __ockl_get_local_size(d);
}
__attribute__((device)) float __ocml_fmax_f32(float a, float b) { return __builtin_fmaxf(a, b); }
__attribute__((device)) float __ocml_fmin_f32(float a, float b) { return __builtin_fminf(a, b); }
__attribute__((device)) float __ocml_exp_f32(float x) { return __builtin_expf(x); }
__attribute__((device)) float __ocml_native_exp_f32(float x) { return __builtin_amdgcn_exp2f(x * 1.442695041f); }
__attribute__((device)) float __ocml_rsqrt_f32(float x) { return __builtin_amdgcn_rsqf(x); }
__attribute__((device)) float __ocml_sqrt_f32(float x) { return __builtin_sqrtf(x); }
__attribute__((device)) float __ocml_tanh_f32(float x) {
    const float t = __builtin_expf(-2.f * __builtin_fabsf(x));
    return __builtin_copysignf((1.f - t) / (1.f + t), x);
}

#if defined(LC0_CI_HIPRTC_HEADER)  // declared (with these enum types) only in hiprtc's header
// __syncthreads' fences: workgroup scope for the barrier's acquire/release, agent otherwise.
__attribute__((device)) void __atomic_work_item_fence(__cl_mem_fence_flags, __memory_order o, __memory_scope s) {
    if (s == __memory_scope_work_group) {
        if (o == __memory_order_acquire) __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
        else if (o == __memory_order_release) __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
        else __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup");
    } else {
        __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent");
    }
}
#endif
}
