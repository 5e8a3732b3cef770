// Runs the real kernels/fp8.hip on the CPU wave emulator (the software e4m3fn conversion, which is
// what the host encoder and NVIDIA's cvt.rn.satfinite compute): per-tensor amax over a grid of
// partial maxima, quantization, and the FP8 GEMM epilogue with its fused partial maxima.
// Build: clang++ -std=c++20 -DEMU_WMMA|-DEMU_MFMA -DLC0_FP16=1 -DLC0_FP8_PARTIALS=P -DLC0_FP8_THREADS=T
// Usage: fp8_emu codes n dir        f.bin [n] f32 -> codes.bin [n] u8 (e4m3 of each float)
//        fp8_emu quant n dir        x.bin [n] f16 -> q.bin [n] u8, scale.bin [1] f32, partial.bin [P] f32
//        fp8_emu epi rows cols act alpha beta bias res dir
//              d.bin [rows*cols] f16, cs.bin [cols] f32, bias.bin [cols] f16, res.bin f16 ->
//              out.bin f16 (written over res when res is on, as the backend does), partial.bin,
//              then fp8_quantize of out from those partials: q.bin, scale.bin
//        fp8_emu rows rows n dir    x.bin [rows*n] f16 -> q.bin u8, rs.bin [rows] f32 (fp8_quantize_rows)
//        fp8_emu hidden rows n act dir   d.bin [rows*n] f16, bias.bin [n] f16 -> FFN1's hidden layer
//              two ways: fused (fp8_bias_act_rows: qf.bin, rsf.bin) and separate (fp8_epilogue with
//              factor 1, then fp8_quantize_rows: h.bin f16, q.bin, rs.bin)
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#include "fp8.hip"
// clang-format on

#include "emu_io.h"

alignas(16) float fp8_reduce[256];  // the kernels' extern __shared__ (blocks run one after another)

static const emu_dim3 GRID{LC0_FP8_PARTIALS, 1, 1};

static int finish() {
    for (auto& e : emu::g_errors) std::printf("emulator: %s\n", e.c_str());
    return emu::g_errors.empty() ? 0 : 1;
}

int main(int argc, char** argv) {
    if (argc < 4) return 2;
    const std::string mode = argv[1];
    if (mode == "codes") {
        const size_t n = (size_t)std::atol(argv[2]);
        const std::string dir = argv[3];
        auto f = read_array<float>(dir + "/f.bin", n);
        std::vector<unsigned char> codes(n);
        for (size_t i = 0; i + 1 < n; i += 2) {
            const u32 two = fp8x2(f[i], f[i + 1]);
            codes[i] = (unsigned char)(two & 0xff);
            codes[i + 1] = (unsigned char)(two >> 8);
        }
        if (n % 2) codes[n - 1] = (unsigned char)e4m3_soft(f[n - 1]);
        write_array(dir + "/codes.bin", codes);
        return 0;
    }
    std::vector<float> partial(LC0_FP8_PARTIALS, __builtin_nanf("")), scale(1, __builtin_nanf(""));
    if (mode == "quant") {
        const size_t n = (size_t)std::atol(argv[2]);
        const std::string dir = argv[3];
        auto x = read_array<T>(dir + "/x.bin", n);
        std::vector<unsigned char> q(n, 0xAA);
        emu::run_grid(GRID, LC0_FP8_THREADS, [&] { fp8_amax(x.data(), (unsigned)(n / LC0_VEC), partial.data()); });
        emu::run_grid(GRID, LC0_FP8_THREADS, [&] {
            fp8_quantize(x.data(), (unsigned)(n / LC0_VEC), partial.data(), q.data(), scale.data());
        });
        write_array(dir + "/q.bin", q);
        write_array(dir + "/scale.bin", scale);
        write_array(dir + "/partial.bin", partial);
        return finish();
    }
    if (mode == "epi" && argc == 10) {
        const unsigned rows = (unsigned)std::atoi(argv[2]), cols = (unsigned)std::atoi(argv[3]);
        const int act = std::atoi(argv[4]);
        const float alpha = std::strtof(argv[5], nullptr), beta = std::strtof(argv[6], nullptr);
        const bool has_bias = std::atoi(argv[7]) != 0, has_res = std::atoi(argv[8]) != 0;
        const std::string dir = argv[9];
        const size_t n = (size_t)rows * cols;
        auto d = read_array<T>(dir + "/d.bin", n);
        auto cs = read_array<float>(dir + "/cs.bin", cols);
        std::vector<T> bias = has_bias ? read_array<T>(dir + "/bias.bin", cols) : std::vector<T>();
        std::vector<T> res = has_res ? read_array<T>(dir + "/res.bin", n) : std::vector<T>();
        std::vector<T> own(has_res ? 0 : n);
        T* out = has_res ? res.data() : own.data();
        std::vector<unsigned char> q(n, 0xAA);
        emu::run_grid(GRID, LC0_FP8_THREADS, [&] {
            fp8_epilogue(d.data(), rows, cols, cs.data(), has_bias ? bias.data() : nullptr, act, alpha, beta,
                         has_res ? res.data() : nullptr, out, partial.data());
        });
        emu::run_grid(GRID, LC0_FP8_THREADS, [&] {
            fp8_quantize(out, (unsigned)(n / LC0_VEC), partial.data(), q.data(), scale.data());
        });
        write_array(dir + "/out.bin", has_res ? res : own);
        write_array(dir + "/partial.bin", partial);
        write_array(dir + "/q.bin", q);
        write_array(dir + "/scale.bin", scale);
        return finish();
    }
    if (mode == "rows" && argc == 5) {
        const unsigned rows = (unsigned)std::atoi(argv[2]), n = (unsigned)std::atoi(argv[3]);
        const std::string dir = argv[4];
        auto x = read_array<T>(dir + "/x.bin", (size_t)rows * n);
        std::vector<unsigned char> q((size_t)rows * n, 0xAA);
        std::vector<float> rs(rows, __builtin_nanf(""));
        const unsigned per = LC0_FP8_THREADS / WARP_SIZE;
        emu::run_grid(emu_dim3{(rows + per - 1) / per, 1, 1}, LC0_FP8_THREADS,
                      [&] { fp8_quantize_rows(x.data(), rows, n, q.data(), rs.data()); });
        write_array(dir + "/q.bin", q);
        write_array(dir + "/rs.bin", rs);
        return finish();
    }
    if (mode == "hidden" && argc == 6) {
        const unsigned rows = (unsigned)std::atoi(argv[2]), n = (unsigned)std::atoi(argv[3]);
        const int act = std::atoi(argv[4]);
        const std::string dir = argv[5];
        const size_t total = (size_t)rows * n;
        auto d = read_array<T>(dir + "/d.bin", total);
        auto bias = read_array<T>(dir + "/bias.bin", n);
        std::vector<float> ones(n, 1.f), rs(rows, __builtin_nanf("")), rsf(rows, __builtin_nanf(""));
        std::vector<T> h(total);
        std::vector<unsigned char> q(total, 0xAA), qf(total, 0xAA);
        const unsigned per = LC0_FP8_THREADS / WARP_SIZE;
        const emu_dim3 row_grid{(rows + per - 1) / per, 1, 1};
        emu::run_grid(row_grid, LC0_FP8_THREADS,
                      [&] { fp8_bias_act_rows(d.data(), rows, n, bias.data(), act, qf.data(), rsf.data()); });
        emu::run_grid(GRID, LC0_FP8_THREADS, [&] {
            fp8_epilogue(d.data(), rows, n, ones.data(), bias.data(), act, 1.f, 0.f, nullptr, h.data(), nullptr);
        });
        emu::run_grid(row_grid, LC0_FP8_THREADS, [&] { fp8_quantize_rows(h.data(), rows, n, q.data(), rs.data()); });
        write_array(dir + "/qf.bin", qf);
        write_array(dir + "/rsf.bin", rsf);
        write_array(dir + "/h.bin", h);
        write_array(dir + "/q.bin", q);
        write_array(dir + "/rs.bin", rs);
        return finish();
    }
    std::fprintf(stderr, "usage: %s codes|quant|epi|rows|hidden ...\n", argv[0]);
    return 2;
}
