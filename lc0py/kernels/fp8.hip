// fp8.hip -- FP8 (e4m3) activations for the FP8 GEMMs, and those GEMMs' epilogue.
//
// The FP8 path (lc0py/backends/gpu/fp8.py) runs the big GEMMs of an attention body as
//   D[M,N] (fp16) = a_scale * w_ref * (Xq[M,K] . Wq[N,K]^T)      cuBLASLt, e4m3 inputs, fp32 accumulation
// where Xq is the activation quantized per tensor with a scale from the running batch (these
// kernels, on the device: no host sync, graph-capturable) and Wq the weight quantized per output
// channel at load (fp8_quant.py). cuBLASLt takes only per-tensor scales, so the per-channel part
// of the weight scale (col_scale[n] = s_w[n] / w_ref) is applied by fp8_epilogue, which also adds
// the bias, the activation and the residual.
//
// Per-tensor amax without atomics: a fixed grid of LC0_FP8_PARTIALS blocks writes one maximum per
// block (fp8_amax, or fp8_epilogue for the tensor it produces), and every block of fp8_quantize
// first reduces those partials itself. Two launches, no memset, deterministic, and nothing for a
// captured graph to reset.
//
// Per-row scales (fp8_scales=outer, the default): fp8_quantize_rows, or fused into the kernel that
// produces the activation: the LayerNorms (kernels/layernorm.hip, LC0_LN_FP8) and FFN1's
// bias + activation (fp8_bias_act_rows, which writes only the codes: the hidden layer has no other
// reader). cuBLASLt then applies the row and channel scales itself (outer-vector scaling).
//
// Formats and the conversion: kernels/fp8.h. The AMD side is compiled in CI only; it has never run.
//
// Storage of everything that is not FP8 is fp16 (LC0_FP16 = 1); arithmetic is fp32.
#include "common.h"
#include "activations.h"
#include "fp8.h"

#ifndef LC0_FP8_PARTIALS
#define LC0_FP8_PARTIALS 512  // blocks of the amax grid (lc0py/backends/gpu/fp8.py FP8_PARTIALS)
#endif
#ifndef LC0_FP8_THREADS
#define LC0_FP8_THREADS 256  // threads of every block here (ops.THREADS)
#endif

static_assert(LC0_FP16 == 1, "the FP8 path keeps its activations in fp16");
static_assert(LC0_FP8_THREADS % WARP_SIZE == 0, "blocks are whole warps");

extern __shared__ float fp8_reduce[];  // LC0_FP8_THREADS / WARP_SIZE floats (the launch's dynamic smem)

// Maximum of v over the block (v >= 0). Every thread gets it. Reuses fp8_reduce.
LC0_DEVICE float fp8_block_max(float v) {
    v = warp_max(v);
    const int warp = (int)threadIdx.x / WARP_SIZE, lane = (int)threadIdx.x % WARP_SIZE;
    __syncthreads();  // earlier readers of fp8_reduce are done
    if (lane == 0) fp8_reduce[warp] = v;
    __syncthreads();
    float m = 0.f;
    for (int w = 0; w < LC0_FP8_THREADS / WARP_SIZE; ++w) m = fmaxf(m, fp8_reduce[w]);
    return m;
}

// The per-tensor maximum from the partials of the grid before (each block reduces them itself).
LC0_DEVICE float fp8_tensor_amax(const float* LC0_RESTRICT partial) {
    float m = 0.f;
    for (int i = (int)threadIdx.x; i < LC0_FP8_PARTIALS; i += LC0_FP8_THREADS) m = fmaxf(m, partial[i]);
    return fp8_block_max(m);
}

// partial[block] = max |x| over the block's grid-stride share of x (chunks of LC0_VEC fp16).
// Launch: LC0_FP8_PARTIALS blocks of LC0_FP8_THREADS.
extern "C" __global__ void __launch_bounds__(LC0_FP8_THREADS)
fp8_amax(const T* LC0_RESTRICT x, unsigned chunks, float* LC0_RESTRICT partial) {
    lc0_grid_dependency_sync();
    float m = 0.f;
    for (unsigned i = blockIdx.x * LC0_FP8_THREADS + threadIdx.x; i < chunks; i += LC0_FP8_PARTIALS * LC0_FP8_THREADS) {
        float v[LC0_VEC];
        load_vec(x + (size_t)i * LC0_VEC, v);
#pragma unroll
        for (int j = 0; j < LC0_VEC; ++j) m = fmaxf(m, fmaxf(v[j], -v[j]));
    }
    m = fp8_block_max(m);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;
}

// q = fp8(x * LC0_FP8_MAX / amax) and *scale = amax / LC0_FP8_MAX (the dequantization scale
// cuBLASLt reads through its B_SCALE pointer); amax == 0 (an all-zero tensor): scale 1.
// Launch: LC0_FP8_PARTIALS blocks of LC0_FP8_THREADS.
extern "C" __global__ void __launch_bounds__(LC0_FP8_THREADS)
fp8_quantize(const T* LC0_RESTRICT x, unsigned chunks, const float* LC0_RESTRICT partial,
             fp8_t* LC0_RESTRICT q, float* LC0_RESTRICT scale) {
    lc0_grid_dependency_sync();
    const float amax = fp8_tensor_amax(partial);
    const float inv = amax > 0.f ? LC0_FP8_MAX / amax : 1.f;
    if (blockIdx.x == 0 && threadIdx.x == 0) *scale = amax > 0.f ? amax / LC0_FP8_MAX : 1.f;
    for (unsigned i = blockIdx.x * LC0_FP8_THREADS + threadIdx.x; i < chunks; i += LC0_FP8_PARTIALS * LC0_FP8_THREADS) {
        float v[LC0_VEC];
        load_vec(x + (size_t)i * LC0_VEC, v);
        u32 w[LC0_VEC / 4];
#pragma unroll
        for (int j = 0; j < LC0_VEC / 4; ++j)
            w[j] = fp8x2(v[4 * j] * inv, v[4 * j + 1] * inv) | (fp8x2(v[4 * j + 2] * inv, v[4 * j + 3] * inv) << 16);
        u32* dst = reinterpret_cast<u32*>(q + (size_t)i * LC0_VEC);
#pragma unroll
        for (int j = 0; j < LC0_VEC / 4; ++j) dst[j] = w[j];
    }
}

// The FP8 GEMM's epilogue, per element of the [rows, n] GEMM output d (fp16):
//   y = act(d * col_scale[c] + bias[c]) ;  out = alpha * y + beta * res
// (bias, res: nullptr for none; out may be d or res). With partial != nullptr each block also
// writes max |out| of its share, for the fp8_quantize of out that follows (the FFN's hidden layer).
// n is a multiple of LC0_VEC. Launch: LC0_FP8_PARTIALS blocks of LC0_FP8_THREADS.
extern "C" __global__ void __launch_bounds__(LC0_FP8_THREADS)
fp8_epilogue(const T* d, unsigned rows, unsigned n, const float* LC0_RESTRICT col_scale,
             const T* LC0_RESTRICT bias, int act, float alpha, float beta, const T* res, T* out,
             float* LC0_RESTRICT partial) {
    lc0_grid_dependency_sync();
    const unsigned cpr = n / LC0_VEC, chunks = rows * cpr;
    float m = 0.f;
    for (unsigned i = blockIdx.x * LC0_FP8_THREADS + threadIdx.x; i < chunks; i += LC0_FP8_PARTIALS * LC0_FP8_THREADS) {
        const unsigned c = (i % cpr) * LC0_VEC;
        float v[LC0_VEC], b[LC0_VEC], r[LC0_VEC];
        load_vec(d + (size_t)i * LC0_VEC, v);
        if (bias != nullptr) {
            load_vec(bias + c, b);
        } else {
#pragma unroll
            for (int j = 0; j < LC0_VEC; ++j) b[j] = 0.f;
        }
        if (res != nullptr && beta != 0.f) {
            load_vec(res + (size_t)i * LC0_VEC, r);
        } else {
#pragma unroll
            for (int j = 0; j < LC0_VEC; ++j) r[j] = 0.f;
        }
#pragma unroll
        for (int j = 0; j < LC0_VEC; ++j) v[j] = v[j] * col_scale[c + j] + b[j];
        activate_fast_n<LC0_VEC>(v, act);  // lc0's fast form, as bias_act and fp8_bias_act_rows
#pragma unroll
        for (int j = 0; j < LC0_VEC; ++j) {
            v[j] = f16_to_f32(f32_to_f16(alpha * v[j] + beta * r[j]));
            m = fmaxf(m, fmaxf(v[j], -v[j]));  // of the value as stored: what fp8_quantize will read
        }
        store_vec(out + (size_t)i * LC0_VEC, v);
    }
    if (partial != nullptr) {
        m = fp8_block_max(m);
        if (threadIdx.x == 0) partial[blockIdx.x] = m;
    }
}

// Per-row quantization (``fp8_scales=outer``): one warp per row of n fp16 values (n a multiple of
// LC0_VEC): row_scale[r] = amax_r / LC0_FP8_MAX (1 for an all-zero row), q[r] = fp8(x[r] / row_scale[r]).
// The row's maximum is the warp's own reduction, so this is one kernel and one read of x (the row
// is read again from cache to quantize); cuBLASLt applies row_scale as its per-row B scale vector
// (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F). Launch: ceil(rows / (LC0_FP8_THREADS / WARP_SIZE))
// blocks of LC0_FP8_THREADS.
extern "C" __global__ void __launch_bounds__(LC0_FP8_THREADS)
fp8_quantize_rows(const T* LC0_RESTRICT x, unsigned rows, unsigned n, fp8_t* LC0_RESTRICT q,
                  float* LC0_RESTRICT row_scale) {
    lc0_grid_dependency_sync();
    const unsigned warps = LC0_FP8_THREADS / WARP_SIZE;
    const unsigned r = blockIdx.x * warps + threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    if (r >= rows) return;  // whole warps leave together
    const T* xr = x + (size_t)r * n;
    const unsigned chunks = n / LC0_VEC;
    float m = 0.f;
    for (unsigned c = lane; c < chunks; c += WARP_SIZE) {
        float v[LC0_VEC];
        load_vec(xr + (size_t)c * LC0_VEC, v);
#pragma unroll
        for (int j = 0; j < LC0_VEC; ++j) m = fmaxf(m, fmaxf(v[j], -v[j]));
    }
    m = warp_max(m);
    const float inv = fp8_row_inv(m);
    if (lane == 0) row_scale[r] = fp8_row_scale(m);
    fp8_t* qr = q + (size_t)r * n;
    for (unsigned c = lane; c < chunks; c += WARP_SIZE) {
        float v[LC0_VEC];
        load_vec(xr + (size_t)c * LC0_VEC, v);
#pragma unroll
        for (int j = 0; j < LC0_VEC; ++j) v[j] *= inv;
        fp8x8_store(qr + (size_t)c * LC0_VEC, v);
    }
}

// FFN1's epilogue with per-row scales (fp8_scales=outer), fused with the quantization of its
// output, the FFN's hidden layer: per row of d (the [rows, n] fp16 GEMM output, the row and
// channel scales already applied by cuBLASLt), h = fp16(act(d + bias)), row_scale[r] = amax_r(h)
// / LC0_FP8_MAX and q[r] = fp8(h / row_scale[r]). Bit for bit what fp8_epilogue (factor 1, no
// residual) followed by fp8_quantize_rows gives, but h is never stored: one read of d and a write
// of codes instead of a read + write of fp16 and another read + write. A row of up to
// LC0_FP8_ROW_CHUNKS chunks a lane (n <= 1024 fp16: T82's FFN) stays in registers; a longer one is
// read again from cache and its activation computed again. n is a multiple of LC0_VEC. Launch: as
// fp8_quantize_rows.
#ifndef LC0_FP8_ROW_CHUNKS
#define LC0_FP8_ROW_CHUNKS 4
#endif

// fp8_epilogue's alpha * act(d * 1 + b) + beta * 0 with alpha 1, beta 0, which is exactly act(d + b)
// + 0.f (the +0.f turns -0 into +0 as there), through the same activate_fast_n: both kernels write
// the same codes bit for bit.
LC0_DEVICE void fp8_hidden_chunk(const T* dr, const T* bias, unsigned c, int act, float* h) {
    float b[LC0_VEC];
    load_vec(dr + (size_t)c * LC0_VEC, h);
    load_vec(bias + (size_t)c * LC0_VEC, b);
#pragma unroll
    for (int j = 0; j < LC0_VEC; ++j) h[j] += b[j];
    activate_fast_n<LC0_VEC>(h, act);
#pragma unroll
    for (int j = 0; j < LC0_VEC; ++j) h[j] = f16_to_f32(f32_to_f16(h[j] + 0.f));
}

extern "C" __global__ void __launch_bounds__(LC0_FP8_THREADS)
fp8_bias_act_rows(const T* LC0_RESTRICT d, unsigned rows, unsigned n, const T* LC0_RESTRICT bias, int act,
                  fp8_t* LC0_RESTRICT q, float* LC0_RESTRICT row_scale) {
    lc0_grid_dependency_sync();
    const unsigned warps = LC0_FP8_THREADS / WARP_SIZE;
    const unsigned r = blockIdx.x * warps + threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    if (r >= rows) return;  // whole warps leave together
    const T* dr = d + (size_t)r * n;
    fp8_t* qr = q + (size_t)r * n;
    const unsigned chunks = n / LC0_VEC;
    float m = 0.f;
    if (chunks <= LC0_FP8_ROW_CHUNKS * WARP_SIZE) {  // the row in registers
        float h[LC0_FP8_ROW_CHUNKS][LC0_VEC];
#pragma unroll
        for (int i = 0; i < LC0_FP8_ROW_CHUNKS; ++i) {
            const unsigned c = lane + i * WARP_SIZE;
            if (c < chunks) {
                fp8_hidden_chunk(dr, bias, c, act, h[i]);
#pragma unroll
                for (int j = 0; j < LC0_VEC; ++j) m = fmaxf(m, fmaxf(h[i][j], -h[i][j]));
            }
        }
        m = warp_max(m);
        const float inv = fp8_row_inv(m);
        if (lane == 0) row_scale[r] = fp8_row_scale(m);
#pragma unroll
        for (int i = 0; i < LC0_FP8_ROW_CHUNKS; ++i) {
            const unsigned c = lane + i * WARP_SIZE;
            if (c < chunks) {
#pragma unroll
                for (int j = 0; j < LC0_VEC; ++j) h[i][j] *= inv;
                fp8x8_store(qr + (size_t)c * LC0_VEC, h[i]);
            }
        }
        return;
    }
    for (unsigned c = lane; c < chunks; c += WARP_SIZE) {
        float h[LC0_VEC];
        fp8_hidden_chunk(dr, bias, c, act, h);
#pragma unroll
        for (int j = 0; j < LC0_VEC; ++j) m = fmaxf(m, fmaxf(h[j], -h[j]));
    }
    m = warp_max(m);
    const float inv = fp8_row_inv(m);
    if (lane == 0) row_scale[r] = fp8_row_scale(m);
    for (unsigned c = lane; c < chunks; c += WARP_SIZE) {
        float h[LC0_VEC];
        fp8_hidden_chunk(dr, bias, c, act, h);
#pragma unroll
        for (int j = 0; j < LC0_VEC; ++j) h[j] *= inv;
        fp8x8_store(qr + (size_t)c * LC0_VEC, h);
    }
}
