// wave_emu.h -- a lockstep AMD wave on the CPU, so kernels/mma_amd.h can be run without AMD
// hardware. Each lane is a std::thread; every cross-lane builtin is a collective: all lanes post
// their operands, meet at a barrier, each computes its own result from everybody's operands,
// meet again. The builtins are modelled from the ISA documentation, written in the "hardware
// reads operand X from lane L" direction -- independently of how mma_amd.h writes its loads:
//
//   v_wmma_f32_16x16x16_f16 (RDNA3, wave32): A[m][k] is element k of lane m, B[k][n] element k of
//     lane n (lanes 0..15); lanes 16..31 must carry copies (checked: a mismatch is an error, not
//     silently ignored); D element v of lane l is (2v + l/16, l%16).
//     Source: GPUOpen "How to accelerate AI applications on RDNA 3 using WMMA"; RDNA3 ISA 7.9.
//   v_wmma_f32_16x16x16_f16 (RDNA4, wave32, _gfx12 builtin): A[m][k] is element k%8 of lane
//     m + 16*(k/8), B[k][n] element k%8 of lane n + 16*(k/8); D element v of lane l is
//     (8*(l/16) + v, l%16). Source: GPUOpen "Using the Matrix Cores of AMD RDNA 4 architecture GPUs".
//   v_mfma_f32_16x16x16_f16 (CDNA, wave64): A[i][k] is element k%4 of lane i + 16*(k/4), B[k][j]
//     element k%4 of lane j + 16*(k/4); D element v of lane l is (4*(l/16) + v, l%16).
//     Source: AMD Matrix Instruction Calculator (v_mfma_f32_16x16x16f16); CK ck_tile MFMA attrs.
//   DPP (update_dpp): quad_perm:[a,b,c,d] (ctrl 0x00-0xFF, lane 4q+i reads 4q+sel_i),
//     row_mirror (0x140, lane i of 16 reads 15-i), row_half_mirror (0x141, lane i of 8 reads
//     7-i), row_xmask:m (0x160+m, gfx10+, lane i of 16 reads i^m). Anything else is an error.
//     Source: LLVM AMDGPUModifierSyntax, "dpp_ctrl".
//   ds_bpermute(addr, v): lane l reads v of lane addr/4.  mbcnt_lo/hi: the masked popcount of
//     the lanes below this one (V_MBCNT_LO/HI_U32_B32).
//   wave_barrier: all lanes meet (hardware lanes are in lockstep anyway).
// Blocks (run_grid) are several waves plus a block barrier for __syncthreads, enough to run the
// real kernels (flash_attention.hip) with threadIdx/blockIdx/__shared__ as on the device.
#pragma once

#include <array>
#include <barrier>
#include <cmath>
#include <math.h>  // expf, fmaxf, tanhf in the global namespace, as HIP has them
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(EMU_WMMA)
#define __GFX11__ 1
#define __gfx1100__ 1
#define EMU_WAVE 32
#elif defined(EMU_WMMA12)
#define __GFX12__ 1
#define __gfx1201__ 1
#define EMU_WAVE 32
#elif defined(EMU_MFMA)
#define __GFX9__ 1
#define __gfx90a__ 1
#define EMU_WAVE 64
#else
#error "define EMU_WMMA, EMU_WMMA12 or EMU_MFMA"
#endif

#define __device__
#define __global__
#define __shared__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

// The HIP device names the kernels use besides the prelude (hiprtc pre-defines them on a GPU).
struct emu_dim3 {
    unsigned x = 0, y = 0, z = 0;
};
inline thread_local emu_dim3 threadIdx, blockIdx;
inline emu_dim3 blockDim, gridDim;
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline float __int_as_float(int v) { return __builtin_bit_cast(float, v); }
// HIP's device min/max overloads (kernels call them unqualified, as on CUDA).
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }  // HIP's device rsqrtf



namespace emu {

struct Wave {
    std::barrier<> bar;
    std::vector<std::array<unsigned char, 128>> slot;
    explicit Wave(int lanes) : bar(lanes), slot(lanes) {}
};
inline thread_local Wave* t_wave = nullptr;
inline thread_local int t_lane = -1;
inline thread_local std::barrier<>* t_block_bar = nullptr;
inline std::mutex g_err_mu;
inline std::vector<std::string> g_errors;

inline void error(const std::string& msg) {
    std::lock_guard<std::mutex> g(g_err_mu);
    if (g_errors.size() < 20) g_errors.push_back(msg);
}

// All lanes of a wave call it together; f(get, lane) computes this lane's result from every
// lane's input.
template <class In, class F>
auto collective(const In& mine, F f) {
    static_assert(sizeof(In) <= 128, "collective operand too large");
    Wave* w = t_wave;
    std::memcpy(w->slot[t_lane].data(), &mine, sizeof(In));
    w->bar.arrive_and_wait();
    auto get = [w](int lane) {
        In v;
        std::memcpy(&v, w->slot[lane].data(), sizeof(In));
        return v;
    };
    auto out = f(get, t_lane);
    w->bar.arrive_and_wait();
    return out;
}

// Run body() for every thread of every block of a grid: blocks one after another, the threads of
// a block concurrently (waves of EMU_WAVE consecutive linear thread ids, x fastest, as on the
// hardware).
inline void run_grid(emu_dim3 grid, emu_dim3 block, const std::function<void()>& body) {
    const int threads = (int)(block.x * block.y * block.z);
    if (threads % EMU_WAVE) error("block size is not a multiple of the wave size");
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                std::barrier<> block_bar(threads);
                std::vector<std::unique_ptr<Wave>> waves;
                for (int w = 0; w < threads / EMU_WAVE; ++w) waves.push_back(std::make_unique<Wave>(EMU_WAVE));
                std::vector<std::thread> th;
                for (int t = 0; t < threads; ++t)
                    th.emplace_back([&, t] {
                        const unsigned u = (unsigned)t;
                        threadIdx = emu_dim3{u % block.x, (u / block.x) % block.y, u / (block.x * block.y)};
                        blockIdx = emu_dim3{bx, by, bz};
                        t_lane = t % EMU_WAVE;
                        t_wave = waves[t / EMU_WAVE].get();
                        t_block_bar = &block_bar;
                        body();
                    });
                for (auto& x : th) x.join();
            }
}
inline void run_grid(emu_dim3 grid, int threads, const std::function<void()>& body) {
    run_grid(grid, emu_dim3{(unsigned)threads, 1, 1}, body);
}

// Every block of a 1-D grid at once, each with its own `smem_bytes` of dynamic shared memory
// (t_smem): for kernels whose blocks wait for each other (a grid barrier), which blocks run one
// after another could never pass.
inline thread_local unsigned char* t_smem = nullptr;
inline void run_grid_concurrent(unsigned blocks, int threads, size_t smem_bytes, const std::function<void()>& body) {
    if (threads % EMU_WAVE) error("block size is not a multiple of the wave size");
    gridDim = emu_dim3{blocks, 1, 1};
    blockDim = emu_dim3{(unsigned)threads, 1, 1};
    std::vector<std::unique_ptr<std::barrier<>>> bars;
    std::vector<std::unique_ptr<Wave>> waves;
    std::vector<std::vector<unsigned char>> smem(blocks, std::vector<unsigned char>(smem_bytes + 16));
    for (unsigned b = 0; b < blocks; ++b) {
        bars.push_back(std::make_unique<std::barrier<>>(threads));
        for (int w = 0; w < threads / EMU_WAVE; ++w) waves.push_back(std::make_unique<Wave>(EMU_WAVE));
    }
    std::vector<std::thread> th;
    for (unsigned b = 0; b < blocks; ++b)
        for (int t = 0; t < threads; ++t)
            th.emplace_back([&, b, t] {
                threadIdx = emu_dim3{(unsigned)t, 0, 0};
                blockIdx = emu_dim3{b, 0, 0};
                t_lane = t % EMU_WAVE;
                t_wave = waves[b * (threads / EMU_WAVE) + t / EMU_WAVE].get();
                t_block_bar = bars[b].get();
                unsigned char* base = smem[b].data();
                t_smem = base + ((16 - (reinterpret_cast<uintptr_t>(base) & 15)) & 15);
                body();
            });
    for (auto& x : th) x.join();
}

// One wave: body(lane).
inline void run_wave(const std::function<void(int)>& body) {
    run_grid(emu_dim3{1, 1, 1}, EMU_WAVE, [&body] { body(t_lane); });
}

}  // namespace emu

inline void __syncthreads() { emu::t_block_bar->arrive_and_wait(); }

// ------------------------------------------------------------------ modelled builtins --------
typedef _Float16 emu_h4 __attribute__((ext_vector_type(4)));
typedef _Float16 emu_h8 __attribute__((ext_vector_type(8)));
typedef _Float16 emu_h16 __attribute__((ext_vector_type(16)));
typedef float emu_f4 __attribute__((ext_vector_type(4)));
typedef float emu_f8 __attribute__((ext_vector_type(8)));

inline unsigned __builtin_amdgcn_mbcnt_lo(unsigned mask, unsigned base) {
    const int l = emu::t_lane;
    const unsigned below = l >= 32 ? 0xffffffffu : ((1u << l) - 1u);
    return base + (unsigned)__builtin_popcount(mask & below);
}
inline unsigned __builtin_amdgcn_mbcnt_hi(unsigned mask, unsigned base) {
    const int l = emu::t_lane;
    const unsigned below = l <= 32 ? 0u : ((1u << (l - 32)) - 1u);
    return base + (unsigned)__builtin_popcount(mask & below);
}

inline void __builtin_amdgcn_wave_barrier() { emu::t_wave->bar.arrive_and_wait(); }
inline void __builtin_amdgcn_fence(int, const char*) {}  // the barrier above orders memory
inline void __builtin_amdgcn_s_sleep(int) { std::this_thread::yield(); }  // a spinning lane lets others run
inline float __builtin_amdgcn_rsqf(float x) { return 1.0f / std::sqrt(x); }

inline int __builtin_amdgcn_ds_bpermute(int addr, int v) {
    return emu::collective(v, [addr](auto get, int lane) {
        const int src = addr / 4;
        if (addr % 4 != 0 || src < 0 || src >= EMU_WAVE) {
            emu::error("ds_bpermute: lane " + std::to_string(lane) + " address " + std::to_string(addr));
            return 0;
        }
        return get(src);
    });
}

inline int emu_dpp_source(int lane, int ctrl) {
    const int in16 = lane & 15, row = lane & ~15;
    if (ctrl >= 0x00 && ctrl <= 0xFF) return (lane & ~3) | ((ctrl >> (2 * (lane & 3))) & 3);
    if (ctrl == 0x140) return row | (15 - in16);
    if (ctrl == 0x141) return (lane & ~7) | (7 - (lane & 7));
#if EMU_WAVE == 32
    if (ctrl >= 0x160 && ctrl <= 0x16F) return row | (in16 ^ (ctrl & 15));
#endif
    return -1;
}

inline int __builtin_amdgcn_update_dpp(int old, int src, int ctrl, int row_mask, int bank_mask,
                                        bool bound_ctrl) {
    (void)old;
    (void)bound_ctrl;
    if (row_mask != 0xF || bank_mask != 0xF) emu::error("update_dpp: partial row/bank masks are not modelled");
    return emu::collective(src, [ctrl](auto get, int lane) {
        const int s = emu_dpp_source(lane, ctrl);
        if (s < 0) {
            emu::error("update_dpp: dpp_ctrl " + std::to_string(ctrl) + " is not modelled");
            return 0;
        }
        return get(s);
    });
}

struct emu_wmma_in {
    emu_h16 a, b;
    emu_f8 c;
};
inline emu_f8 __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(emu_h16 a, emu_h16 b, emu_f8 c) {
    return emu::collective(emu_wmma_in{a, b, c}, [](auto get, int lane) {
        if (lane >= 16) {  // RDNA3: the upper half-wave must replicate the lower one
            const emu_wmma_in hi = get(lane), lo = get(lane - 16);
            for (int e = 0; e < 16; ++e)
                if (hi.a[e] != lo.a[e] || hi.b[e] != lo.b[e])
                    emu::error("wmma: lane " + std::to_string(lane) + " does not replicate lane " +
                               std::to_string(lane - 16) + " (element " + std::to_string(e) + ")");
        }
        emu_f8 d;
        for (int v = 0; v < 8; ++v) {
            const int m = 2 * v + lane / 16, n = lane % 16;
            double acc = 0.0;
            for (int k = 0; k < 16; ++k) acc += (double)get(m).a[k] * (double)get(n).b[k];
            d[v] = (float)((double)get(lane).c[v] + acc);
        }
        return d;
    });
}

// D = A·B + C of a 16x16x16 f16 instruction whose operands are spread in groups of 16 lanes, each
// lane holding V values: lane l has A row (B column) l % 16 at K = V·(l / 16) + i (i < V) and C/D
// rows V·(l / 16) + i of column l % 16. That is RDNA4's WMMA (V = 8, wave32) and CDNA's MFMA
// 16x16x16 (V = 4, wave64).
template <int V, class Acc, class In>
inline Acc emu_grouped_mma(const In& in) {
    return emu::collective(in, [](auto get, int lane) {
        Acc d;
        for (int v = 0; v < V; ++v) {
            const int m = V * (lane / 16) + v, n = lane % 16;
            double acc = 0.0;
            for (int k = 0; k < 16; ++k)
                acc += (double)get(m + 16 * (k / V)).a[k % V] * (double)get(n + 16 * (k / V)).b[k % V];
            d[v] = (float)((double)get(lane).c[v] + acc);
        }
        return d;
    });
}

struct emu_wmma12_in {
    emu_h8 a, b;
    emu_f8 c;
};
inline emu_f8 __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(emu_h8 a, emu_h8 b, emu_f8 c) {
    return emu_grouped_mma<8, emu_f8>(emu_wmma12_in{a, b, c});
}

struct emu_mfma_in {
    emu_h4 a, b;
    emu_f4 c;
};
inline emu_f4 __builtin_amdgcn_mfma_f32_16x16x16f16(emu_h4 a, emu_h4 b, emu_f4 c, int cbsz, int abid,
                                                      int blgp) {
    if (cbsz || abid || blgp) emu::error("mfma: cbsz/abid/blgp broadcasts are not modelled");
    return emu_grouped_mma<4, emu_f4>(emu_mfma_in{a, b, c});
}
