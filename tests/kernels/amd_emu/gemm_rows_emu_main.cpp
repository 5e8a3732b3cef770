// Runs the real kernels/gemm_rows.hip (out = act(alpha * x . W^T + bias), the small batches' GEMM on
// the matrix-core tiles of mma.h, AMD branch) on the CPU wave emulator, launched as
// ops.GpuOps.gemm_rows launches it: a grid of (ceil(N / NT), ceil(M / 64)) blocks of 4 waves with
// gemm_rows_shared_bytes of dynamic shared memory.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_GR_NT=16|32 -I kernels -I tests/kernels/amd_emu
// Usage: gemm_rows_emu m n k lda ldo alpha act bias dir
//   dir holds x.bin [m, lda] and w.bin [n, k] (f16), with bias bias.bin [n]. Writes out.bin
//   [m, ldo] (f16; NaN wherever the kernel did not write: the columns past n must stay so).
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#include "gemm_rows.hip"
// clang-format on

#include "emu_io.h"

alignas(16) unsigned char smem[1 << 18];  // the kernel's `extern __shared__ smem[]`

int main(int argc, char** argv) {
    if (argc != 10) {
        std::fprintf(stderr, "usage: %s m n k lda ldo alpha act bias dir\n", argv[0]);
        return 2;
    }
    const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
    const int lda = std::atoi(argv[4]), ldo = std::atoi(argv[5]);
    const float alpha = std::strtof(argv[6], nullptr);
    const int act = std::atoi(argv[7]);
    const bool has_bias = std::atoi(argv[8]) != 0;
    const std::string dir = argv[9];
    const size_t shared = (size_t)(gr::MT + gr::NT) * (size_t)((k + 15) / 16 * 16 + 8) * 2;
    if (shared > sizeof(smem)) return 3;
    auto x = read_array<f16>(dir + "/x.bin", (size_t)m * lda);
    auto w = read_array<f16>(dir + "/w.bin", (size_t)n * k);
    std::vector<f16> bias = has_bias ? read_array<f16>(dir + "/bias.bin", (size_t)n) : std::vector<f16>{};
    std::vector<f16> out((size_t)m * ldo, f16{0x7e00});  // NaN-poisoned
    const emu_dim3 grid{(unsigned)((n + gr::NT - 1) / gr::NT), (unsigned)((m + gr::MT - 1) / gr::MT), 1u};
    emu::run_grid(grid, gr::THREADS, [&] {
        gemm_rows(x.data(), lda, w.data(), has_bias ? bias.data() : nullptr, out.data(), ldo, m, n, k, alpha, act);
    });
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    write_array(dir + "/out.bin", out);
    return emu::g_errors.empty() ? 0 : 1;
}
