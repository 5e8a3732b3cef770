// Runs the real kernels/residual.hip on the CPU wave emulator: the fused Winograd output step
// (winograd_output_fused: 2-D blocks of c channels x per positions; winograd_output_fused_split and
// its staged form: (c, 4) blocks, one position each; __syncthreads, the SE's warp reductions,
// dynamic shared memory) and, with `other`, the unfused kernels (im2col3x3, winograd_input,
// winograd_output, se_residual). On AMD the staged kernel's async copies are plain copies
// (prelude_hiprtc.h), so this checks its stage layout and its persistent loop over positions
// (fewer blocks than positions), not cp.async timing.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_FP16=0|1 -I kernels -I tests/kernels/amd_emu
// Usage: residual_emu staged|direct|split batch c se act skip out v grid stats gates dir
//   dir holds m.bin [36, batch*4, c], bias.bin [c], and with skip skip.bin [batch*64, c], with
//   se > 0 w1.bin [se, c], b1.bin [se], w2t.bin [se, 2c], b2.bin [2c], all of the kernel's T.
//   Writes out.bin [batch*64, c] (out aliases skip when both are on, as in the backend) and
//   v.bin [batch*4, 36, c] (tile-major); unwritten elements stay NaN. grid: the staged kernel's block count.
//   stats: also writes stats.bin [batch, 16, c] (the per-tile sums for the next block's SE);
//   gates: reads gates.bin [batch, 2c] and applies them in place of the SE.
// Usage: residual_emu segates batch c se act dir
//   dir holds hpre.bin [batch, se], b1f.bin [se], w2t.bin, b2.bin; writes gates.bin [batch, 2c]
//   (blocks of LC0_SE_GATES_POS positions by 128 outputs, as the backend launches it).
// Usage: residual_emu other batch c se act dir
//   dir holds x.bin [batch*64, c], m.bin, bias.bin, skip.bin and (se > 0) the SE weights; writes
//   cols.bin (im2col3x3 of x), vin.bin (winograd_input of x), y.bin (winograd_output of m, bias,
//   act), se.bin (se_residual of x as y, bias, skip, SE, act).
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#include "residual.hip"
// clang-format on

#include "emu_io.h"

// the kernels' `extern __shared__` arrays (blocks run one after another)
alignas(16) float fused_smem[1 << 14];
alignas(16) float se_smem[1 << 14];  // se_residual (compiled with the file, not run here)
alignas(16) uint4 staged_smem[(512 << 10) / sizeof(uint4)];  // fp32 stages too (the device has 227 KiB)
alignas(16) float gates_hidden[1 << 12];  // se_gates

// SE weights (empty with se == 0: the kernels get nullptr for w1 and skip SE).
struct SeWeights {
    std::vector<T> w1, b1, w2t, b2;
};
static SeWeights read_se(const std::string& dir, int se, int c) {
    SeWeights w;
    if (se > 0) {
        w.w1 = read_array<T>(dir + "/w1.bin", (size_t)se * c);
        w.b1 = read_array<T>(dir + "/b1.bin", (size_t)se);
        w.w2t = read_array<T>(dir + "/w2t.bin", (size_t)se * 2 * c);
        w.b2 = read_array<T>(dir + "/b2.bin", (size_t)2 * c);
    }
    return w;
}

// NaN in the kernel's T: outputs start poisoned, so an element no thread wrote shows.
static T nan_t() {
    T nan;
    store_f32(&nan, __builtin_nanf(""));
    return nan;
}

static int run_other(int batch, int c, int se, int act, const std::string& dir) {
    const size_t rows = (size_t)batch * 64 * c, mv = (size_t)36 * batch * 4 * c;
    const T nan = nan_t();
    auto x = read_array<T>(dir + "/x.bin", rows);
    auto m = read_array<T>(dir + "/m.bin", mv);
    auto bias = read_array<T>(dir + "/bias.bin", (size_t)c);
    auto skip = read_array<T>(dir + "/skip.bin", rows);
    const SeWeights sew = read_se(dir, se, c);
    std::vector<T> cols(rows * 9, nan), vin(mv, nan), y(rows, nan), out(rows, nan);
    const emu_dim3 few{3, 1, 1};  // fewer blocks than work: the grid-stride loops run
    emu::run_grid(few, 256, [&] { im2col3x3(x.data(), cols.data(), batch * 64, c); });
    emu::run_grid(few, 256, [&] { winograd_input(x.data(), vin.data(), batch, c); });
    emu::run_grid(few, 256, [&] { winograd_output(m.data(), bias.data(), y.data(), batch, c, act); });
    if ((size_t)(3 * c + se) * 4 > sizeof(se_smem)) return 3;
    emu::run_grid(emu_dim3{(unsigned)batch, 1, 1}, 256, [&] {
        se_residual(x.data(), bias.data(), skip.data(), out.data(), se > 0 ? sew.w1.data() : nullptr,
                    sew.b1.data(), sew.w2t.data(), sew.b2.data(), c, se, act);
    });
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    write_array(dir + "/cols.bin", cols);
    write_array(dir + "/vin.bin", vin);
    write_array(dir + "/y.bin", y);
    write_array(dir + "/se.bin", out);
    return emu::g_errors.empty() ? 0 : 1;
}

static int run_segates(int batch, int c, int se, int act, const std::string& dir) {
    const T nan = nan_t();
    auto hpre = read_array<T>(dir + "/hpre.bin", (size_t)batch * se);
    auto b1f = read_array<T>(dir + "/b1f.bin", (size_t)se);
    const SeWeights sew = read_se(dir, se, c);
    std::vector<T> gates((size_t)batch * 2 * c, nan);
    const size_t kp = (size_t)(se + LC0_SE_GATES_KC - 1) / LC0_SE_GATES_KC * LC0_SE_GATES_KC;
    if (kp * LC0_SE_GATES_POS > sizeof(gates_hidden) / sizeof(float)) return 3;
    const unsigned blocks = (unsigned)((batch + LC0_SE_GATES_POS - 1) / LC0_SE_GATES_POS);
    const int threads = 128;  // ops.SE_GATES_THREADS
    emu::run_grid(emu_dim3{blocks, (unsigned)((2 * c + threads - 1) / threads), 1}, threads, [&] {
        se_gates(hpre.data(), b1f.data(), sew.w2t.data(), sew.b2.data(), gates.data(), batch, c, se, act);
    });
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    write_array(dir + "/gates.bin", gates);
    return emu::g_errors.empty() ? 0 : 1;
}

int main(int argc, char** argv) {
    if (argc == 7 && std::string(argv[1]) == "other")
        return run_other(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), argv[6]);
    if (argc == 7 && std::string(argv[1]) == "segates")
        return run_segates(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), argv[6]);
    if (argc != 13) {
        std::fprintf(stderr, "usage: %s staged|direct|split batch c se act skip out v grid stats gates dir\n", argv[0]);
        return 2;
    }
    const bool staged = std::string(argv[1]) == "staged", split = std::string(argv[1]) == "split";
    const int batch = std::atoi(argv[2]), c = std::atoi(argv[3]), se = std::atoi(argv[4]), act = std::atoi(argv[5]);
    const bool has_skip = std::atoi(argv[6]) != 0, has_out = std::atoi(argv[7]) != 0, has_v = std::atoi(argv[8]) != 0;
    const int grid = std::atoi(argv[9]);
    const bool has_stats = std::atoi(argv[10]) != 0, has_gates = std::atoi(argv[11]) != 0;
    const std::string dir = argv[12];
    const size_t rows = (size_t)batch * 64 * c, mv = (size_t)36 * batch * 4 * c;
    const T nan = nan_t();
    auto m = read_array<T>(dir + "/m.bin", mv);
    auto bias = read_array<T>(dir + "/bias.bin", (size_t)c);
    std::vector<T> skip = has_skip ? read_array<T>(dir + "/skip.bin", rows) : std::vector<T>();
    const SeWeights sew = read_se(dir, se, c);
    std::vector<T> out_own(has_out && !has_skip ? rows : 0, nan), v(has_v ? mv : 0, nan);
    std::vector<T> stats(has_stats ? (size_t)batch * 16 * c : 0, nan);
    std::vector<T> gates = has_gates ? read_array<T>(dir + "/gates.bin", (size_t)batch * 2 * c) : std::vector<T>();
    T* out = !has_out ? nullptr : has_skip ? skip.data() : out_own.data();
    const bool four = split || staged;  // (c, 4) blocks, one position each
    const int per = four ? 1 : c >= 256 ? 1 : 256 / c;  // GpuOps.fused_positions_per_block
    const size_t split_smem = (size_t)(36 * c + se) * 4;
    // GpuOps.split_staged_smem: the split kernel's floats (16-byte aligned), 2 stages of M, skip rows
    const size_t smem = staged ? (split_smem + 15) / 16 * 16 + (size_t)(2 * 144 + 64) * c * sizeof(T)
                        : split ? split_smem : (se > 0 ? (size_t)per * (c + se) * 4 : 0);
    if (smem > sizeof(staged_smem) || (!staged && smem > sizeof(fused_smem))) return 3;
    const int groups = (batch + per - 1) / per;
    std::printf("%s: wave %d, T %zu bytes, c %d, %d positions/block, %d blocks, shared %zu B\n", argv[1],
                WARP_SIZE, sizeof(T), c, per, staged ? grid : groups, smem);
    auto* kernel = staged ? winograd_output_fused_split_staged : split ? winograd_output_fused_split : winograd_output_fused;
    const T* sk = has_skip ? skip.data() : nullptr;
    T* pv = has_v ? v.data() : nullptr;
    const T* pw1 = se > 0 ? sew.w1.data() : nullptr;
    const emu_dim3 block{(unsigned)c, (unsigned)(four ? 4 : per), 1};  // split: x = channel, y = tile
    emu::run_grid(emu_dim3{(unsigned)(staged ? grid : groups), 1, 1}, block, [&] {
        kernel(m.data(), bias.data(), sk, out, pv, pw1, sew.b1.data(), sew.w2t.data(), sew.b2.data(), batch, c, se, act,
               has_stats ? stats.data() : nullptr, has_gates ? gates.data() : nullptr);
    });
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    if (has_out) write_array(dir + "/out.bin", has_skip ? skip : out_own);
    if (has_v) write_array(dir + "/v.bin", v);
    if (has_stats) write_array(dir + "/stats.bin", stats);
    return emu::g_errors.empty() ? 0 : 1;
}
