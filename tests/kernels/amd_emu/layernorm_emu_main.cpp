// Runs the real kernels/layernorm.hip (residual_layernorm: out = LN(act(y + bias) * alpha + skip)
// * gamma + beta) on the CPU wave emulator, launched as ops.GpuOps.layernorm launches it: blocks of
// LC0_LN_THREADS * LC0_LN_ROWS threads, ceil(rows / LC0_LN_ROWS) blocks, so the last block may hold
// rows past the end (they must neither read nor write). The kernel's `__shared__ red[][]` (the row
// reduction across warps when a row has several) becomes one static array: blocks run one after
// another, so it is exactly the block's shared memory.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_FP16=0|1 -DLC0_LN_N=n -DLC0_LN_THREADS=t
//        -DLC0_LN_ROWS=r [-DLC0_LN_ACT=a] -I kernels -I tests/kernels/amd_emu
// Usage: layernorm_emu rows act alpha eps bias skip alias dir
//   dir holds y.bin [rows, N], gamma.bin [N], beta.bin [N], with bias bias.bin [N], with skip
//   skip.bin [rows, N], all of the kernel's T. alias: 0 out is its own array, 1 out is y (in place,
//   as the backend's ln_residual and smolgen LayerNorms run it), 2 out is skip. Writes out.bin
//   [rows, N]; an element nothing wrote stays NaN. Built with -DLC0_LN_FP8=1 it runs
//   residual_layernorm_fp8 instead and also writes q.bin [rows, N] u8 and rs.bin [rows] f32 (the
//   output's per-row e4m3 codes and scales).
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#undef __shared__
#define __shared__ static
#include "layernorm.hip"
// clang-format on

#include "emu_io.h"

int main(int argc, char** argv) {
    if (argc != 9) {
        std::fprintf(stderr, "usage: %s rows act alpha eps bias skip alias dir\n", argv[0]);
        return 2;
    }
    const int rows = std::atoi(argv[1]), act = std::atoi(argv[2]);
    const float alpha = std::strtof(argv[3], nullptr), eps = std::strtof(argv[4], nullptr);
    const bool has_bias = std::atoi(argv[5]) != 0, has_skip = std::atoi(argv[6]) != 0;
    const int alias = std::atoi(argv[7]);
    const std::string dir = argv[8];
    const size_t n = (size_t)LC0_LN_N, total = (size_t)rows * n;
    T nan;
    store_f32(&nan, __builtin_nanf(""));
    auto y = read_array<T>(dir + "/y.bin", total);
    auto gamma = read_array<T>(dir + "/gamma.bin", n);
    auto beta = read_array<T>(dir + "/beta.bin", n);
    std::vector<T> bias = has_bias ? read_array<T>(dir + "/bias.bin", n) : std::vector<T>{};
    std::vector<T> skip = has_skip ? read_array<T>(dir + "/skip.bin", total) : std::vector<T>{};
    std::vector<T> own(total, nan);
    T* out = alias == 1 ? y.data() : alias == 2 ? skip.data() : own.data();
    if (alias == 2 && !has_skip) return 3;
    const unsigned blocks = (unsigned)((rows + LC0_LN_ROWS - 1) / LC0_LN_ROWS);
#ifdef LC0_LN_FP8
    std::vector<unsigned char> q(total, 0xAA);
    std::vector<float> rs((size_t)rows, __builtin_nanf(""));
    emu::run_grid(emu_dim3{blocks, 1, 1}, LC0_LN_THREADS * LC0_LN_ROWS, [&] {
        residual_layernorm_fp8(y.data(), has_bias ? bias.data() : nullptr, has_skip ? skip.data() : nullptr, out,
                               gamma.data(), beta.data(), rows, alpha, eps, act, q.data(), rs.data());
    });
    write_array(dir + "/q.bin", q);
    write_array(dir + "/rs.bin", rs);
#else
    emu::run_grid(emu_dim3{blocks, 1, 1}, LC0_LN_THREADS * LC0_LN_ROWS, [&] {
        residual_layernorm(y.data(), has_bias ? bias.data() : nullptr, has_skip ? skip.data() : nullptr, out,
                           gamma.data(), beta.data(), rows, alpha, eps, act);
    });
#endif
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    write_array(dir + "/out.bin", alias == 1 ? y : alias == 2 ? skip : own);
    return emu::g_errors.empty() ? 0 : 1;
}
