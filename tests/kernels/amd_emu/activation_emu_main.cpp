// Prints kernels/activations.h's activate() and activate_fast() on the host, through the AMD
// prelude (its lc0_exp2 / lc0_rcp fall back to exp2f and 1/x off the GPU), so that the formulas
// -- mish's two branches, the limits at large |x| -- are checked against float64 in CI.
// Usage: activation_emu act x1 x2 ...   -> one line per x: "x activate activate_n activate_fast"
#include "wave_emu.h"
// clang-format off
#include "prelude_hiprtc.h"
#include "activations.h"
// clang-format on

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    const int act = std::atoi(argv[1]);
    for (int i = 2; i < argc; ++i) {
        const float x = std::strtof(argv[i], nullptr);
        float v[1] = {x};
        activate_fast_n<1>(v, act);
        std::printf("%.9g %.9g %.9g %.9g\n", x, activate(x, act), v[0], activate_fast(x, act));
    }
    return 0;
}
