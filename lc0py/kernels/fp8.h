// fp8.h -- the e4m3 conversion shared by kernels/fp8.hip and the FP8 outputs of kernels/layernorm.hip.
//
// Formats: NVIDIA (and every software path) e4m3fn, the OCP format cuBLASLt calls CUDA_R_8F_E4M3
// (bias 7, max 448, no infinity, NaN = S.1111.111). AMD gfx940/941/942 have the "fnuz" variant
// (bias 8, max 240, NaN = 0x80): there the hardware conversion is used and LC0_FP8_MAX is 240.
// Needs common.h first (u32, u16, LC0_DEVICE).
#ifndef LC0_FP8_H
#define LC0_FP8_H

#if defined(LC0_AMD) && (defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
#define LC0_FP8_FNUZ 1
#define LC0_FP8_MAX 240.0f
#else
#define LC0_FP8_FNUZ 0
#define LC0_FP8_MAX 448.0f
#endif

typedef unsigned char fp8_t;

#if defined(LC0_NVIDIA)
LC0_DEVICE u32 fp8_float_bits(float f) { return __float_as_uint(f); }
#else
LC0_DEVICE u32 fp8_float_bits(float f) { return __builtin_bit_cast(u32, f); }
#endif

// e4m3fn of one float by integer arithmetic: round to nearest even, saturating at +-448, NaN ->
// 0x7f | sign. Bit-exact with the host's lc0py/backends/gpu/fp8_quant.py e4m3_encode (and with
// ml_dtypes' float8_e4m3fn below 448), checked on the CPU by tests/kernels/test_fp8_emulated.py.
LC0_DEVICE u32 e4m3_soft(float x) {
    const u32 bits = fp8_float_bits(x);
    const u32 sign = (bits >> 24) & 0x80u;
    u32 a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7fu;  // NaN
    if (a > 0x43e00000u) a = 0x43e00000u;      // saturate at 448 (+inf too)
    if (a < 0x3c800000u) {                     // below 2^-6: subnormal, steps of 2^-9
        const int e = (int)(a >> 23);          // biased exponent, <= 120
        if (e < 127 - 10) return sign;         // below 2^-10: rounds to zero (2^-10 itself: tie, even)
        const u32 mant = (a & 0x7fffffu) | 0x800000u;
        const int shift = 14 + 127 - e;        // value * 2^9 = mant * 2^(e - 127 - 23 + 9)
        u32 k = mant >> shift;
        const u32 rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (k & 1u))) ++k;
        return sign | k;  // k == 8 is 2^-6, the smallest normal: the same code
    }
    const u32 r = (a + 0x7ffffu + ((a >> 20) & 1u)) & 0xfff00000u;  // 3 mantissa bits, RNE
    const u32 e = (r >> 23) - 120u;  // rebias 127 -> 7
    return sign | (e << 3) | ((r >> 20) & 7u);
}

// Two floats -> two FP8 bytes (lo in bits 0-7, hi in 8-15), saturating.
LC0_DEVICE u32 fp8x2(float lo, float hi) {
#if defined(LC0_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    u16 r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    return (u32)r;
#elif LC0_FP8_FNUZ
    // v_cvt_pk_fp8_f32 (gfx94x: fnuz e4m3); clamp first, the conversion does not saturate
    lo = fminf(fmaxf(lo, -LC0_FP8_MAX), LC0_FP8_MAX);
    hi = fminf(fmaxf(hi, -LC0_FP8_MAX), LC0_FP8_MAX);
    return (u32)__builtin_amdgcn_cvt_pk_fp8_f32(lo, hi, 0, false) & 0xffffu;
#else
    return e4m3_soft(lo) | (e4m3_soft(hi) << 8);
#endif
}

// The per-row scaling every per-row quantizer shares (fp8_quantize_rows, the fused LayerNorm,
// fp8_bias_act_rows): amax = max |v| of the row's values as stored (fp16), scale = amax / max
// (1 for an all-zero row) is what cuBLASLt multiplies back, inv = max / amax what the codes are
// scaled by. fp8_emulation.fake_quantize_rows computes the same on the host.
LC0_DEVICE float fp8_row_inv(float amax) { return amax > 0.f ? LC0_FP8_MAX / amax : 1.f; }
LC0_DEVICE float fp8_row_scale(float amax) { return amax > 0.f ? amax / LC0_FP8_MAX : 1.f; }

// Eight values (already scaled by the row's inverse scale) -> eight codes at dst (8-byte aligned:
// rows and chunks start at multiples of 8 elements), one 8-byte store; byte i = value i.
LC0_DEVICE void fp8x8_store(fp8_t* dst, const float* v) {
    const u32 lo = fp8x2(v[0], v[1]) | (fp8x2(v[2], v[3]) << 16);
    const u32 hi = fp8x2(v[4], v[5]) | (fp8x2(v[6], v[7]) << 16);
    *reinterpret_cast<unsigned long long*>(dst) = (unsigned long long)lo | ((unsigned long long)hi << 32);
}

#endif  // LC0_FP8_H
