// elementwise.hip -- input expansion, embedding epilogue, bias + activation.
#include "common.h"
#include "activations.h"

// Rows a thread of the (chunk, row) grids loads before it stores any: GpuOps compiles this module
// with ops.ROWS_GRID_UNROLL (the default is for the emulator tests, which use ops.rows_grid too).
#ifndef LC0_ROWS_UNROLL
#define LC0_ROWS_UNROLL 2
#endif

// Planes from the compact encoding: tokens[b*64 + s, p] = bit s of masks[b, p] ? values[b, p] : 0.
// The host uploads 12 bytes per plane (mask + value) instead of 64 floats: 21x less H2D traffic.
// Blocks: (position, part of its squares); threads walk (square, plane) with the plane fastest so
// stores coalesce.
extern "C" __global__ void expand_planes(const u64* LC0_RESTRICT masks, const float* LC0_RESTRICT values,
                                         T* LC0_RESTRICT tokens, int planes) {
    lc0_grid_dependency_sync();
    // blocks (position, part): part p of gridDim.y expands squares [p * 64 / parts, (p + 1) * ...)
    // (one block a position was 28 dependent rounds a thread: ~5 us at batch 1)
    const int b = blockIdx.x;
    const int begin = blockIdx.y * 64 / gridDim.y * planes, end = (blockIdx.y + 1) * 64 / gridDim.y * planes;
    for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
        const int s = i / planes, p = i % planes;
        const u64 m = masks[(long long)b * planes + p];
        const float val = ((m >> s) & 1ull) ? values[(long long)b * planes + p] : 0.f;
        store_f32(&tokens[((long long)b * 64 + s) * planes + p], val);
    }
}

// Embedding epilogue (PE_MAP): h[b,s,c] = act(y[b,s,c] + sq_bias[s,c]) * mult[s,c] + add[s,c].
// sq_bias folds ip_emb_b and the constant positional-encoding columns (PE[s] . W_pe[c]) computed
// once on the host, so the GEMM only multiplies the 112 plane features. Gates are pre-transposed
// to [64][E] at upload so these reads coalesce; mult == nullptr means no gating. The grid is
// bias_act's (chunks x rows, ops.rows_grid) and so is the activation (activate_fast_n): the 1-D
// grid's division a chunk and the IEEE activation took 127 us at 65,536 x 768 (H200), 2.5x a copy.
extern "C" __global__ void embed_epilogue(T* LC0_RESTRICT y, const T* LC0_RESTRICT sq_bias,
                                          const T* LC0_RESTRICT mult, const T* LC0_RESTRICT add,
                                          int rows, int n, int act) {
    lc0_grid_dependency_sync();
    if (n % LC0_VEC == 0) {
        const unsigned cpr = (unsigned)n / LC0_VEC;  // chunks a row
        const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
        if (c >= cpr) return;
        const unsigned step = gridDim.y * blockDim.y;
        for (unsigned r0 = blockIdx.y * blockDim.y + threadIdx.y; r0 < (unsigned)rows; r0 += LC0_ROWS_UNROLL * step) {
            float x[LC0_ROWS_UNROLL][LC0_VEC], sb[LC0_ROWS_UNROLL][LC0_VEC];
#pragma unroll
            for (int u = 0; u < LC0_ROWS_UNROLL; ++u) {
                const unsigned r = r0 + u * step;
                if (r < (unsigned)rows) {
                    load_vec(y + ((size_t)r * cpr + c) * LC0_VEC, x[u]);
                    load_vec(sq_bias + ((r % 64u) * cpr + c) * LC0_VEC, sb[u]);
                }
            }
#pragma unroll
            for (int u = 0; u < LC0_ROWS_UNROLL; ++u) {
                const unsigned r = r0 + u * step;
                if (r >= (unsigned)rows) break;
#pragma unroll
                for (int j = 0; j < LC0_VEC; ++j) x[u][j] += sb[u][j];
                activate_fast_n<LC0_VEC>(x[u], act);
                if (mult != nullptr) {
                    float mu[LC0_VEC], ad[LC0_VEC];
                    load_vec(mult + ((r % 64u) * cpr + c) * LC0_VEC, mu);
                    load_vec(add + ((r % 64u) * cpr + c) * LC0_VEC, ad);
#pragma unroll
                    for (int j = 0; j < LC0_VEC; ++j) x[u][j] = x[u][j] * mu[j] + ad[j];
                }
                store_vec(y + ((size_t)r * cpr + c) * LC0_VEC, x[u]);
            }
        }
    } else {  // a 1-D grid (ops.rows_grid)
        const unsigned total = (unsigned)rows * (unsigned)n;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
            const unsigned sc = (i / (unsigned)n % 64u) * (unsigned)n + i % (unsigned)n;
            float val = activate_fast(to_f32(y[i]) + to_f32(sq_bias[sc]), act);
            if (mult != nullptr) val = val * to_f32(mult[sc]) + to_f32(add[sc]);
            store_f32(&y[i], val);
        }
    }
}

// y[r, :] = act(y[r, :] + bias) in place; rows * n < 2^31. Rows of whole 16-byte chunks (every
// lc0 width): threadIdx.x walks a row's chunks and threadIdx.y the rows (ops.rows_grid), so a
// thread loads its bias chunk once and needs no division; it loads LC0_ROWS_UNROLL rows before it
// stores any (bytes in flight: the pass is pure bandwidth). The activation is activate_fast_n (one
// switch a chunk, lc0_exp2/lc0_rcp, the form of lc0's CUDA kernels): the IEEE expf and division of
// activate() were ~40 instructions a value, more issue time than the copy takes (H200, T82's FFN).
extern "C" __global__ void bias_act(T* LC0_RESTRICT y, const T* LC0_RESTRICT bias, int rows, int n, int act) {
    lc0_grid_dependency_sync();
    if (n % LC0_VEC == 0) {
        const unsigned cpr = (unsigned)n / LC0_VEC;  // chunks a row
        const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
        if (c >= cpr) return;
        float b[LC0_VEC];
        load_vec(bias + c * LC0_VEC, b);
        const unsigned step = gridDim.y * blockDim.y;
        for (unsigned r0 = blockIdx.y * blockDim.y + threadIdx.y; r0 < (unsigned)rows; r0 += LC0_ROWS_UNROLL * step) {
            float x[LC0_ROWS_UNROLL][LC0_VEC];
#pragma unroll
            for (int u = 0; u < LC0_ROWS_UNROLL; ++u) {
                const unsigned r = r0 + u * step;
                if (r < (unsigned)rows) load_vec(y + ((size_t)r * cpr + c) * LC0_VEC, x[u]);
            }
#pragma unroll
            for (int u = 0; u < LC0_ROWS_UNROLL; ++u) {
                const unsigned r = r0 + u * step;
                if (r >= (unsigned)rows) break;
#pragma unroll
                for (int j = 0; j < LC0_VEC; ++j) x[u][j] += b[j];
                activate_fast_n<LC0_VEC>(x[u], act);
                store_vec(y + ((size_t)r * cpr + c) * LC0_VEC, x[u]);
            }
        }
    } else {  // a 1-D grid (ops.rows_grid)
        const unsigned total = (unsigned)rows * (unsigned)n;
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x)
            store_f32(&y[i], activate_fast(to_f32(y[i]) + to_f32(bias[i % (unsigned)n]), act));
    }
}

// dst[r, j] = src[r * ld + col0 + j] for j < n: the smolgen compress columns of the fused
// projection output gathered into the contiguous [B, 64*hc] matrix dense1 multiplies (4 MB at
// batch 1024, instead of a separate compress GEMM re-reading the 100 MB layer input).
extern "C" __global__ void copy_columns(const T* LC0_RESTRICT src, int ld, int col0, T* LC0_RESTRICT dst,
                                        int rows, int n) {
    lc0_grid_dependency_sync();
    const bool vec = (n % LC0_VEC == 0) && (ld % LC0_VEC == 0) && (col0 % LC0_VEC == 0);
    const unsigned w = vec ? LC0_VEC : 1;
    const unsigned cpr = (unsigned)n / w;
    const unsigned chunks = (unsigned)rows * cpr;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < chunks; i += gridDim.x * blockDim.x) {
        const unsigned r = i / cpr, c = (i - r * cpr) * w;
        const T* s = src + (size_t)r * ld + col0 + c;
        T* d = dst + (size_t)r * n + c;
        if (vec) *reinterpret_cast<uint4*>(d) = *reinterpret_cast<const uint4*>(s);
        else *d = *s;
    }
}
