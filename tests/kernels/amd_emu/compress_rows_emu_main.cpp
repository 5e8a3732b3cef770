// Runs the real kernels/compress_rows.hip (compress_rows_layernorm: smolgen's compress and first
// dense layer + bias + activation + LayerNorm for a few rows, split by token, the last block of each
// row adding the shares) on the CPU wave emulator, launched as ops.GpuOps.compress_rows_layernorm
// launches it: rows * SEQ blocks of WARPS * wave threads. Blocks run one after another, so the last
// block of a row is the last to take its ticket, as on a device it is whichever finishes last; the
// kernel's __shared__ variables become static ones.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_FP16=0|1 -DLC0_CR_SEQ=s -DLC0_CR_E=e
//        -DLC0_CR_HC=hc -DLC0_CR_N=n -DLC0_CR_ROWS=r -DLC0_CR_WARPS=w -I kernels -I tests/kernels/amd_emu
// Usage: compress_rows_emu rows act eps bias launches dir [pre_eps]
//   dir holds x.bin [rows, SEQ, E], wc.bin [HC, E], w1.bin [N, SEQ * HC], gamma.bin [N], beta.bin [N],
//   with bias bias.bin [N], all of the kernel's T. The kernel runs `launches` times on the same
//   buffers (the counters must come back to 0 each time). Writes out.bin [rows, N] (NaN where
//   nothing wrote) and counter.bin [ROWS].
//   With pre_eps the kernel is compress_rows_prenorm: x.bin is the FFN output y before the previous
//   layer's LayerNorm, and dir also holds skip.bin [rows, SEQ, E], pre_bias.bin, pre_gamma.bin and
//   pre_beta.bin [E].
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#undef __shared__
#define __shared__ static
#include "compress_rows.hip"
// clang-format on

#include "emu_io.h"

int main(int argc, char** argv) {
    if (argc != 7 && argc != 8) {
        std::fprintf(stderr, "usage: %s rows act eps bias launches dir [pre_eps]\n", argv[0]);
        return 2;
    }
    const int rows = std::atoi(argv[1]), act = std::atoi(argv[2]);
    const float eps = std::strtof(argv[3], nullptr);
    const bool has_bias = std::atoi(argv[4]) != 0;
    const int launches = std::atoi(argv[5]);
    const std::string dir = argv[6];
    const bool prenorm = argc == 8;
    const float pre_eps = prenorm ? std::strtof(argv[7], nullptr) : 0.f;
    const size_t seq = (size_t)LC0_CR_SEQ, e = (size_t)LC0_CR_E, hc = (size_t)LC0_CR_HC, n = (size_t)LC0_CR_N;
    T nan;
    store_f32(&nan, __builtin_nanf(""));
    auto x = read_array<T>(dir + "/x.bin", (size_t)rows * seq * e);
    auto wc = read_array<T>(dir + "/wc.bin", hc * e);
    auto w1 = read_array<T>(dir + "/w1.bin", n * seq * hc);
    auto gamma = read_array<T>(dir + "/gamma.bin", n);
    auto beta = read_array<T>(dir + "/beta.bin", n);
    std::vector<T> bias = has_bias ? read_array<T>(dir + "/bias.bin", n) : std::vector<T>{};
    std::vector<T> skip, pre_bias, pre_gamma, pre_beta;
    if (prenorm) {
        skip = read_array<T>(dir + "/skip.bin", (size_t)rows * seq * e);
        pre_bias = read_array<T>(dir + "/pre_bias.bin", e);
        pre_gamma = read_array<T>(dir + "/pre_gamma.bin", e);
        pre_beta = read_array<T>(dir + "/pre_beta.bin", e);
    }
    std::vector<T> out((size_t)rows * n, nan);
    std::vector<float> part((size_t)LC0_CR_ROWS * seq * n, __builtin_nanf(""));
    std::vector<u32> counter(LC0_CR_ROWS, 0u);
    const unsigned blocks = (unsigned)(rows * seq);
    for (int l = 0; l < launches; ++l) {
        emu::run_grid(emu_dim3{blocks, 1, 1}, emu_dim3{LC0_CR_WARPS * EMU_WAVE, 1, 1}, [&] {
            if (prenorm) {
                compress_rows_prenorm(x.data(), skip.data(), pre_bias.data(), pre_gamma.data(), pre_beta.data(),
                                      pre_eps, wc.data(), w1.data(), has_bias ? bias.data() : nullptr, gamma.data(),
                                      beta.data(), out.data(), part.data(), counter.data(), eps, act);
            } else {
                compress_rows_layernorm(x.data(), wc.data(), w1.data(), has_bias ? bias.data() : nullptr,
                                        gamma.data(), beta.data(), out.data(), part.data(), counter.data(), eps, act);
            }
        });
    }
    for (auto& err : emu::g_errors) std::printf("emulator: %s\n", err.c_str());
    write_array(dir + "/out.bin", out);
    write_array(dir + "/counter.bin", counter);
    return emu::g_errors.empty() ? 0 : 1;
}
