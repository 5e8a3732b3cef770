// Runs the real input and policy-output kernels on the CPU wave emulator, on grids of (positions,
// parts) as ops.GpuOps launches them: expand_planes (kernels/elementwise.hip), policy_gather and
// gather_bias (kernels/policy_map.hip); and bias_act and embed_epilogue (kernels/elementwise.hip) on
// the grid and block ops.rows_grid gives. policy_gather's `__shared__ off[][]` becomes one static
// array: blocks run one after another, so it is exactly the block's shared memory.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_FP16=0|1 -I kernels -I tests/kernels/amd_emu
// Usage: io_kernels_emu planes B parts dir      masks.bin u64 [B,112], values.bin f32 [B,112]
//                                               -> out.bin T [B*64,112]
//        io_kernels_emu policy B parts pd ld dir lg.bin T [B,4096], kp.bin T [B,64,ld],
//                                               wpromo.bin T [4,pd], gather.bin i32 [1858]
//                                               -> out.bin f32 [B,1858]
//        io_kernels_emu conv B parts stride dir  src.bin T [B,stride], gather.bin i32 [1858],
//                                               bias.bin T [1858] -> out.bin f32 [B,1858]
//        io_kernels_emu bias_act rows 1 n act gx gy tx ty dir
//                                               y.bin T [rows,n], bias.bin T [n] -> out.bin T [rows,n]
//        io_kernels_emu embed rows gated n act gx gy tx ty dir
//                                               y.bin T [rows,n], sqbias.bin T [64,n], and when gated
//                                               mult.bin, add.bin T [64,n] -> out.bin T [rows,n]
// Outputs nothing wrote stay NaN.
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#undef __shared__
#define __shared__ static
#include "elementwise.hip"
#include "policy_map.hip"
// clang-format on

#include <cstring>

#include "emu_io.h"

static constexpr int kPlanes = 112, kPolicy = 1858, kThreads = 256;

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s planes|policy|conv B parts ... dir\n", argv[0]);
        return 2;
    }
    const std::string mode = argv[1];
    const unsigned bsz = (unsigned)std::atoi(argv[2]), parts = (unsigned)std::atoi(argv[3]);
    const std::string dir = argv[argc - 1];
    const emu_dim3 grid{bsz, parts, 1};
    if (mode == "planes") {
        auto masks = read_array<u64>(dir + "/masks.bin", (size_t)bsz * kPlanes);
        auto values = read_array<float>(dir + "/values.bin", (size_t)bsz * kPlanes);
        T nan;
        store_f32(&nan, __builtin_nanf(""));
        std::vector<T> out((size_t)bsz * 64 * kPlanes, nan);
        emu::run_grid(grid, kThreads, [&] { expand_planes(masks.data(), values.data(), out.data(), kPlanes); });
        write_array(dir + "/out.bin", out);
    } else if (mode == "policy" && argc == 7) {
        const int pd = std::atoi(argv[4]), ld = std::atoi(argv[5]);
        auto lg = read_array<T>(dir + "/lg.bin", (size_t)bsz * 4096);
        auto kp = read_array<T>(dir + "/kp.bin", (size_t)bsz * 64 * ld);
        auto wpromo = read_array<T>(dir + "/wpromo.bin", (size_t)4 * pd);
        auto gather = read_array<int>(dir + "/gather.bin", kPolicy);
        std::vector<float> out((size_t)bsz * kPolicy, __builtin_nanf(""));
        emu::run_grid(grid, kThreads, [&] {
            policy_gather(lg.data(), kp.data(), ld, wpromo.data(), pd, gather.data(), kPolicy, out.data());
        });
        write_array(dir + "/out.bin", out);
    } else if (mode == "conv" && argc == 6) {
        const int stride = std::atoi(argv[4]);
        auto src = read_array<T>(dir + "/src.bin", (size_t)bsz * stride);
        auto gather = read_array<int>(dir + "/gather.bin", kPolicy);
        auto bias = read_array<T>(dir + "/bias.bin", kPolicy);
        std::vector<float> out((size_t)bsz * kPolicy, __builtin_nanf(""));
        emu::run_grid(grid, kThreads, [&] {
            gather_bias(src.data(), stride, gather.data(), bias.data(), kPolicy, out.data());
        });
        write_array(dir + "/out.bin", out);
    } else if (mode == "bias_act" && argc == 11) {
        const int rows = (int)bsz, n = std::atoi(argv[4]), act = std::atoi(argv[5]);
        const emu_dim3 g{(unsigned)std::atoi(argv[6]), (unsigned)std::atoi(argv[7]), 1};
        const emu_dim3 b{(unsigned)std::atoi(argv[8]), (unsigned)std::atoi(argv[9]), 1};
        auto y = read_array<T>(dir + "/y.bin", (size_t)rows * n);
        auto bias = read_array<T>(dir + "/bias.bin", (size_t)n);
        emu::run_grid(g, b, [&] { bias_act(y.data(), bias.data(), rows, n, act); });
        write_array(dir + "/out.bin", y);
    } else if (mode == "embed" && argc == 11) {
        const int rows = (int)bsz, gated = (int)parts, n = std::atoi(argv[4]), act = std::atoi(argv[5]);
        const emu_dim3 g{(unsigned)std::atoi(argv[6]), (unsigned)std::atoi(argv[7]), 1};
        const emu_dim3 b{(unsigned)std::atoi(argv[8]), (unsigned)std::atoi(argv[9]), 1};
        auto y = read_array<T>(dir + "/y.bin", (size_t)rows * n);
        auto sqbias = read_array<T>(dir + "/sqbias.bin", (size_t)64 * n);
        std::vector<T> mult, add;
        if (gated) {
            mult = read_array<T>(dir + "/mult.bin", (size_t)64 * n);
            add = read_array<T>(dir + "/add.bin", (size_t)64 * n);
        }
        emu::run_grid(g, b, [&] {
            embed_epilogue(y.data(), sqbias.data(), gated ? mult.data() : nullptr, gated ? add.data() : nullptr,
                           rows, n, act);
        });
        write_array(dir + "/out.bin", y);
    } else {
        std::fprintf(stderr, "bad arguments for %s\n", mode.c_str());
        return 2;
    }
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    return emu::g_errors.empty() ? 0 : 1;
}
