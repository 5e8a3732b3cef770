// activations.h -- lc0's activation functions (docs/attention-body.md §7) in fp32.
//
// Codes are lc0's ActivationFunction proto numbers (lc0py.weights.network.Activation), passed
// as a run-time kernel argument: the switch is uniform across the grid, so it costs a few
// instructions and saves compiling one module per activation.
#pragma once

#define LC0_ACT_MISH 1
#define LC0_ACT_RELU 2
#define LC0_ACT_NONE 3
#define LC0_ACT_TANH 4
#define LC0_ACT_SIGMOID 5
#define LC0_ACT_SELU 6
#define LC0_ACT_SWISH 7
#define LC0_ACT_RELU_2 8

LC0_DEVICE float activate(float x, int act) {
    switch (act) {
        case LC0_ACT_RELU: return fmaxf(x, 0.f);
        case LC0_ACT_RELU_2: { float r = fmaxf(x, 0.f); return r * r; }
        case LC0_ACT_MISH: {
            // x * tanh(softplus(x)) = x * n / (n + 2), n = e^2x + 2e^x (lc0's stable CPU form);
            // past x = 20 tanh(softplus) is 1 in fp32 and n would overflow.
            if (x > 20.f) return x;
            float e = expf(x);
            float n = e * e + 2.f * e;
            return x * n / (n + 2.f);
        }
        case LC0_ACT_SWISH: return x / (1.f + expf(-x));
        case LC0_ACT_SELU: {
            const float alpha = 1.6732632423543772f, lambda = 1.0507009873554805f;
            return x > 0.f ? lambda * x : lambda * alpha * (expf(x) - 1.f);
        }
        case LC0_ACT_TANH: return tanhf(x);
        case LC0_ACT_SIGMOID: return 1.f / (1.f + expf(-x));
        default: return x;  // NONE
    }
}

// The same functions through the fast special functions (lc0_exp2, lc0_rcp: ~2^-22 relative),
// as lc0's own CUDA backend computes them in its residual kernels. The residual body's fused
// steps apply an activation to every value they write, and the IEEE expf and division of
// activate() were ~40 of a thread's instructions per value there (Nsight Compute, H200): this
// form is ~10. Relative error about 1e-6, far inside the fp32 path's 1e-4.
LC0_DEVICE float lc0_fast_exp(float x) { return lc0_exp2(x * 1.4426950408889634f); }

LC0_DEVICE float mish_fast(float x) {
    // x * tanh(softplus(x)) = x * n / (n + 2), n = e^2x + 2e^x. For x > -0.6 it is taken as
    // x - 2x / (n + 2), which needs no test for large x (n -> inf gives x); below, n * x / (n + 2),
    // which does not cancel where n is small.
    const float e = lc0_fast_exp(x);
    const float n = e * (e + 2.f);
    const float d = x * lc0_rcp(n + 2.f);
    return x <= -0.6f ? n * d : x - 2.f * d;
}
LC0_DEVICE float sigmoid_fast(float x) { return lc0_rcp(1.f + lc0_fast_exp(-x)); }
LC0_DEVICE float selu_fast(float x) {
    const float alpha = 1.6732632423543772f, lambda = 1.0507009873554805f;
    return x > 0.f ? lambda * x : lambda * alpha * (lc0_fast_exp(x) - 1.f);
}

#define LC0_FAST_ACT_CASES(APPLY)                                     \
    case LC0_ACT_RELU: APPLY(fmaxf(x, 0.f)); break;                   \
    case LC0_ACT_RELU_2: APPLY(fmaxf(x, 0.f) * fmaxf(x, 0.f)); break; \
    case LC0_ACT_MISH: APPLY(mish_fast(x)); break;                    \
    case LC0_ACT_SWISH: APPLY(x * sigmoid_fast(x)); break;            \
    case LC0_ACT_SELU: APPLY(selu_fast(x)); break;                    \
    case LC0_ACT_TANH: APPLY(tanhf(x)); break;                        \
    case LC0_ACT_SIGMOID: APPLY(sigmoid_fast(x)); break;              \
    default: break; /* NONE */

LC0_DEVICE float activate_fast(float x, int act) {
#define LC0_APPLY_ONE(e) x = (e)
    switch (act) { LC0_FAST_ACT_CASES(LC0_APPLY_ONE) }
#undef LC0_APPLY_ONE
    return x;
}

// activate_fast on N values of a register array: one switch for all of them, so each case is
// straight-line code (a switch per value kept the array out of registers in the fused steps).
template <int N>
LC0_DEVICE void activate_fast_n(float* v, int act) {
#define LC0_APPLY_N(e)                          \
    _Pragma("unroll") for (int i = 0; i < N; ++i) { \
        const float x = v[i];                   \
        v[i] = (e);                             \
    }
    switch (act) { LC0_FAST_ACT_CASES(LC0_APPLY_N) }
#undef LC0_APPLY_N
}
