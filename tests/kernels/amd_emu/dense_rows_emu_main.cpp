// Runs the real kernels/dense_rows.hip (dense_rows_layernorm: out[r, :] = LN(act(x[r, :] . W^T + bias))
// * gamma + beta for a few rows, the last block normalising) on the CPU wave emulator, launched as
// ops.GpuOps.dense_rows_layernorm launches it: ceil(N / (WARPS * OUT)) blocks of WARPS * wave
// threads. Blocks run one after another, so the last block is the last to take its ticket, as on a
// device it is whichever finishes last; the kernel's __shared__ variables become static ones.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_FP16=0|1 -DLC0_DR_N=n -DLC0_DR_K=k
//        -DLC0_DR_ROWS=r -DLC0_DR_WARPS=w -DLC0_DR_OUT=o -I kernels -I tests/kernels/amd_emu
// Usage: dense_rows_emu rows act eps bias launches dir
//   dir holds x.bin [rows, K], w.bin [N, K], gamma.bin [N], beta.bin [N], with bias bias.bin [N],
//   all of the kernel's T. The kernel runs `launches` times on the same buffers (the counter must
//   come back to 0 each time). Writes out.bin [rows, N] (NaN where nothing wrote) and counter.bin.
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#undef __shared__
#define __shared__ static
#include "dense_rows.hip"
// clang-format on

#include "emu_io.h"

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s rows act eps bias launches dir\n", argv[0]);
        return 2;
    }
    const int rows = std::atoi(argv[1]), act = std::atoi(argv[2]);
    const float eps = std::strtof(argv[3], nullptr);
    const bool has_bias = std::atoi(argv[4]) != 0;
    const int launches = std::atoi(argv[5]);
    const std::string dir = argv[6];
    const size_t n = (size_t)LC0_DR_N, k = (size_t)LC0_DR_K;
    T nan;
    store_f32(&nan, __builtin_nanf(""));
    auto x = read_array<T>(dir + "/x.bin", (size_t)rows * k);
    auto w = read_array<T>(dir + "/w.bin", n * k);
    auto gamma = read_array<T>(dir + "/gamma.bin", n);
    auto beta = read_array<T>(dir + "/beta.bin", n);
    std::vector<T> bias = has_bias ? read_array<T>(dir + "/bias.bin", n) : std::vector<T>{};
    std::vector<T> out((size_t)rows * n, nan);
    std::vector<float> pre((size_t)LC0_DR_ROWS * n, __builtin_nanf(""));
    std::vector<u32> counter(1, 0u);
    const unsigned per_block = (unsigned)(LC0_DR_WARPS * LC0_DR_OUT);
    const unsigned blocks = (unsigned)((n + per_block - 1) / per_block);
    for (int l = 0; l < launches; ++l) {
        emu::run_grid(emu_dim3{blocks, 1, 1}, emu_dim3{LC0_DR_WARPS * EMU_WAVE, 1, 1}, [&] {
            dense_rows_layernorm(x.data(), w.data(), has_bias ? bias.data() : nullptr, gamma.data(), beta.data(),
                                 out.data(), pre.data(), counter.data(), rows, eps, act);
        });
    }
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    write_array(dir + "/out.bin", out);
    write_array(dir + "/counter.bin", counter);
    return emu::g_errors.empty() ? 0 : 1;
}
