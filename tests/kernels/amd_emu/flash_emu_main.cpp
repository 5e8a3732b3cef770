// Runs the real kernels/flash_attention.hip (flash_attention_f16, AMD branch of mma.h) on the CPU
// wave emulator: whole blocks of WARPS waves, __syncthreads, dynamic shared memory.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_FA_...=... -I kernels -I tests/kernels/amd_emu
// Usage: flash_emu B S H scale dir [blocks]   (dir holds qkv.bin, g.bin, bq.bin, bv.bin; writes o.bin)
//   blocks: with LC0_FA_PERSIST=1, the persistent grid's y (default 4; more than B*H leaves blocks
//   with no pair, as a small batch on a large GPU does)
//   qkv: [B, S, 3*D] f16 (the fused QKV GEMM output: Q, K, V at column 0, D, 2D, ld = 3D)
//   g:   [B, H, S, S] f16 smolgen bias; bq, bv: [D] f16; o: [B, S, D] f16.
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#include "flash_attention.hip"
// clang-format on

#include "emu_io.h"

alignas(16) unsigned char smem[1 << 17];  // the kernel's `extern __shared__ smem[]`

int main(int argc, char** argv) {
    if (argc != 6 && argc != 7) {
        std::fprintf(stderr, "usage: %s B S H scale dir [blocks]\n", argv[0]);
        return 2;
    }
    const int B = std::atoi(argv[1]), S = std::atoi(argv[2]), H = std::atoi(argv[3]);
    const float scale = (float)std::atof(argv[4]);
    const std::string dir = argv[5];
    const int D = H * fa::DEPTH;
    auto qkv = read_array<f16>(dir + "/qkv.bin", (size_t)B * S * 3 * D);
    auto g = read_array<f16>(dir + "/g.bin", (size_t)B * H * S * S);
    auto bq = read_array<f16>(dir + "/bq.bin", (size_t)D);
    auto bv = read_array<f16>(dir + "/bv.bin", (size_t)D);
    std::vector<f16> o((size_t)B * S * D, f16{0x7e00});  // NaN-poisoned: unwritten outputs show

    const int smem_bytes = fa::Q_BUFS * fa::Q_BYTES + fa::STAGES * fa::STAGE_BYTES + fa::SCRATCH_BYTES;
    if (smem_bytes > (int)sizeof(smem)) return 3;
    std::printf("branch %s, wave %d, depth %d, warps %d, threads %d, heads/block %d, shared %d B\n", LC0_MMA_BRANCH,
                WARP_SIZE, fa::DEPTH, fa::WARPS, fa::THREADS, fa::HEADS, smem_bytes);
#if LC0_FA_PERSIST
    // Persistent grid: x = query-row blocks, y = blocks walking ranges of (position, head) pairs.
    const unsigned blocks = argc == 7 ? (unsigned)std::atoi(argv[6]) : 4u;
    std::printf("persistent blocks %u for %d pairs\n", blocks, B * H);
    const emu_dim3 grid{(unsigned)((S + fa::ROWS - 1) / fa::ROWS), blocks, 1u};
    emu::run_grid(grid, fa::THREADS, [&] {
        flash_attention_persistent_f16(qkv.data(), qkv.data() + D, qkv.data() + 2 * D, 3 * D, g.data(), bq.data(),
                                       bv.data(), o.data(), D, S, H, scale, B);
    });
#else
    // The kernel header's grid: x = query-row blocks, y = groups of LC0_FA_HEADS heads, z = batch.
    const emu_dim3 grid{(unsigned)((S + fa::ROWS - 1) / fa::ROWS), (unsigned)((H + fa::HEADS - 1) / fa::HEADS),
                        (unsigned)B};
    emu::run_grid(grid, fa::THREADS, [&] {
        flash_attention_f16(qkv.data(), qkv.data() + D, qkv.data() + 2 * D, 3 * D, g.data(), bq.data(), bv.data(),
                            o.data(), D, S, H, scale);
    });
#endif
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    write_array(dir + "/o.bin", o);
    return emu::g_errors.empty() ? 0 : 1;
}
