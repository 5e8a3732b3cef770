// Runs the real kernels/smolgen_chain.hip (compress -> dense 1 -> act -> LN1 -> dense 2 -> act -> LN2
// for a few positions, one grid with grid barriers) on the CPU wave emulator. Its blocks wait for
// each other, so they run at the same time here (emu::run_grid_concurrent), each with its own
// shared memory, and the barrier's counters are real atomics on the host.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_FP16=0|1 -DLC0_SC_SEQ=.. -DLC0_SC_E=..
//        -DLC0_SC_HC=.. -DLC0_SC_HS=.. -DLC0_SC_N2=.. -DLC0_SC_ROWS=.. -DLC0_SC_WARPS=..
//        -I kernels -I tests/kernels/amd_emu
// Usage: smolgen_chain_emu rows blocks act eps1 eps2 bias launches dir
//   dir holds x.bin [rows*SEQ, E], wc.bin [HC, E], w1.bin [HS, SEQ*HC], g1/be1.bin [HS],
//   w2.bin [N2, HS], g2/be2.bin [N2], with bias b1.bin [HS] and b2.bin [N2], all of the kernel's T.
//   The kernel runs `launches` times on the same buffers (the counters must come back to 0 each
//   time). Writes out.bin [rows, N2] (NaN where nothing wrote) and sync.bin (the two counters).
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#define LC0_SC_SHARED(name) unsigned char* name = emu::t_smem
#include "smolgen_chain.hip"
// clang-format on

#include "emu_io.h"

int main(int argc, char** argv) {
    if (argc != 9) {
        std::fprintf(stderr, "usage: %s rows blocks act eps1 eps2 bias launches dir\n", argv[0]);
        return 2;
    }
    const int rows = std::atoi(argv[1]), blocks = std::atoi(argv[2]), act = std::atoi(argv[3]);
    const float eps1 = std::strtof(argv[4], nullptr), eps2 = std::strtof(argv[5], nullptr);
    const bool has_bias = std::atoi(argv[6]) != 0;
    const int launches = std::atoi(argv[7]);
    const std::string dir = argv[8];
    using namespace sc;
    T nan;
    store_f32(&nan, __builtin_nanf(""));
    auto x = read_array<T>(dir + "/x.bin", (size_t)rows * SEQ * E);
    auto wc = read_array<T>(dir + "/wc.bin", (size_t)HC * E);
    auto w1 = read_array<T>(dir + "/w1.bin", (size_t)HS * K1);
    auto g1 = read_array<T>(dir + "/g1.bin", HS);
    auto be1 = read_array<T>(dir + "/be1.bin", HS);
    auto w2 = read_array<T>(dir + "/w2.bin", (size_t)N2 * HS);
    auto g2 = read_array<T>(dir + "/g2.bin", N2);
    auto be2 = read_array<T>(dir + "/be2.bin", N2);
    std::vector<T> b1 = has_bias ? read_array<T>(dir + "/b1.bin", HS) : std::vector<T>{};
    std::vector<T> b2 = has_bias ? read_array<T>(dir + "/b2.bin", N2) : std::vector<T>{};
    std::vector<T> out((size_t)rows * N2, nan);
    std::vector<float> scratch((size_t)ROWS * (K1 + HS + N2), __builtin_nanf(""));
    std::vector<u32> sync(2, 0u);
    for (int l = 0; l < launches; ++l) {
        emu::run_grid_concurrent((unsigned)blocks, WARPS * EMU_WAVE, (size_t)SMEM_BYTES, [&] {
            smolgen_chain(x.data(), wc.data(), w1.data(), has_bias ? b1.data() : nullptr, g1.data(), be1.data(),
                          w2.data(), has_bias ? b2.data() : nullptr, g2.data(), be2.data(), out.data(),
                          scratch.data(), sync.data(), rows, eps1, eps2, act);
        });
    }
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    write_array(dir + "/out.bin", out);
    write_array(dir + "/sync.bin", sync);
    return emu::g_errors.empty() ? 0 : 1;
}
