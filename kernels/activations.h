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
