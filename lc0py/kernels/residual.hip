// residual.hip -- classical residual (SE-ResNet) bodies on activations in NHWC = [B*64, C] rows
// (row b*64 + s, s = rank*8 + file), so 1x1 convolutions and dense layers are plain GEMMs.
//
//   im2col3x3    a same-padded 3x3 convolution becomes ONE GEMM [B*64, 9C] x [Cout, 9C]^T:
//                cols[r, t*C + c] = x[neighbour(r, t), c] (0 off the board), t = dr*3 + df,
//                neighbour = (rank + dr - 1, file + df - 1). The host packs the weights
//                [Cout, Cin, 3, 3] as [Cout, 3, 3, Cin] to match (weights.py ConvWeights).
//   se_residual  after a block's second convolution, one block per position:
//                y += b; [SE: p = mean_s y; h = act(W1 p + b1); z = W2 h + b2;
//                y = sigmoid(z[:C]) * y + z[C:]]; out = act(y + skip). lc0's SE layout: the
//                first C outputs of fc2 are the (sigmoid) scale, the second C the bias. fc2 is
//                packed transposed, w2t [S, 2C]: consecutive threads read consecutive outputs.
#include "common.h"
#include "activations.h"

extern "C" __global__ void im2col3x3(const T* LC0_RESTRICT x, T* LC0_RESTRICT cols, int rows, int c) {
    lc0_grid_dependency_sync();
    const int vec = (c % LC0_VEC == 0) ? LC0_VEC : 1;
    const unsigned cpt = (unsigned)(c / vec);  // chunks per tap
    const unsigned per_row = 9u * cpt;
    const unsigned total = (unsigned)rows * per_row;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const unsigned r = i / per_row, rem = i - r * per_row;
        const unsigned t = rem / cpt, k = (rem - t * cpt) * (unsigned)vec;
        const int s = (int)(r & 63u);
        const int rank = (s >> 3) + (int)(t / 3u) - 1, file = (s & 7) + (int)(t % 3u) - 1;
        const bool on = rank >= 0 && rank < 8 && file >= 0 && file < 8;
        T* dst = cols + (size_t)i * vec;
        const size_t src_row = (size_t)(r - (unsigned)s) + (size_t)(on ? rank * 8 + file : 0);
        const T* src = x + src_row * (size_t)c + k;
        if (vec == LC0_VEC) {
            uint4 v;
            v.x = v.y = v.z = v.w = 0u;
            if (on) v = *reinterpret_cast<const uint4*>(src);
            *reinterpret_cast<uint4*>(dst) = v;
        } else {
            store_f32(dst, on ? to_f32(*src) : 0.f);
        }
    }
}

// Dynamic shared memory: (3C + S) floats when w1 != nullptr (pooled[C], hidden[S], gate[2C]).
// w1 == nullptr: a block without SE, out = act(y + b + skip). out may alias skip (same element).
extern "C" __global__ void se_residual(const T* LC0_RESTRICT y, const T* LC0_RESTRICT bias, const T* skip,
                                       T* out, const T* LC0_RESTRICT w1, const T* LC0_RESTRICT b1,
                                       const T* LC0_RESTRICT w2t, const T* LC0_RESTRICT b2, int c, int se,
                                       int act) {
    lc0_grid_dependency_sync();
    extern __shared__ float se_smem[];
    const int b = blockIdx.x;
    const size_t base = (size_t)b * 64 * c;
    const T* yb = y + base;
    const bool has_se = w1 != nullptr;
    float* pooled = se_smem;
    float* hidden = se_smem + c;
    float* gate = hidden + se;
    if (has_se) {
        for (int ch = threadIdx.x; ch < c; ch += blockDim.x) {
            float acc = 0.f;
            for (int s = 0; s < 64; ++s) acc += to_f32(yb[s * c + ch]);
            pooled[ch] = acc * (1.f / 64.f) + to_f32(bias[ch]);
        }
        __syncthreads();
        const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
        const int warps = blockDim.x / WARP_SIZE;
        for (int o = warp; o < se; o += warps) {  // fc1: K = C, one warp per output
            float acc = 0.f;
            for (int k = lane; k < c; k += WARP_SIZE) acc += to_f32(w1[(size_t)o * c + k]) * pooled[k];
            acc = warp_sum(acc);
            if (lane == 0) hidden[o] = activate_fast(acc + to_f32(b1[o]), act);
        }
        __syncthreads();
        for (int o = threadIdx.x; o < 2 * c; o += blockDim.x) {  // fc2: K = S, one thread per output
            float acc = to_f32(b2[o]);
            for (int k = 0; k < se; ++k) acc += to_f32(w2t[(size_t)k * 2 * c + o]) * hidden[k];
            gate[o] = o < c ? activate_fast(acc, LC0_ACT_SIGMOID) : acc;
        }
        __syncthreads();
    }
    const int vec = (c % LC0_VEC == 0) ? LC0_VEC : 1;
    const int chunks = 64 * c / vec;
    for (int i = threadIdx.x; i < chunks; i += blockDim.x) {
        const int e = i * vec, ch = e % c;
        float v[LC0_VEC], sk[LC0_VEC];
        if (vec == LC0_VEC) {
            load_vec(yb + e, v);
            load_vec(skip + base + e, sk);
        } else {
            v[0] = to_f32(yb[e]);
            sk[0] = to_f32(skip[base + e]);
        }
        for (int j = 0; j < vec; ++j) {
            float t = v[j] + to_f32(bias[ch + j]);
            if (has_se) t = gate[ch + j] * t + gate[c + ch + j];
            v[j] = activate_fast(t + sk[j], act);
        }
        if (vec == LC0_VEC) store_vec(out + base + e, v);
        else store_f32(out + base + e, v[0]);
    }
}

// Winograd F(4x4, 3x3) on the 8x8 board (lc0's cuda backend computes its convolutions this way):
// 2x2 tiles of 4x4 outputs per position, each from a 6x6 input patch (rows 4ty-1 .. 4ty+4, zero
// off the board). Per channel: V = B^T d B (input), M[k] = sum_c V[k][., c] U[k][o, c] (36 batched
// GEMMs, U = G g G^T packed on the host), Y = A^T M A (output). Layouts: V tile-major [B*4, 36, Cin],
// M element-major [36, B*4, Cout] (k = 6*row + col of the 6x6 transform), tile index b*4 + ty*2 +
// tx. GEMM k reads V's rows k, 36 + k, ... (leading dimension 36C, batch stride C), so a tile's 36 V
// rows are contiguous and a step stores them at constant offsets from one address; the GEMM writes
// M as contiguous matrices (written tile-major too, the GEMM took 3 % longer on an H100).
// B^T rows: (4,0,-5,0,1,0) (0,-4,-4,1,1,0) (0,4,-4,-1,1,0) (0,-2,-1,2,1,0) (0,2,-1,-2,1,0) (0,4,0,-5,0,1)
// A^T rows: (1,1,1,1,1,0) (0,1,-1,2,-2,0) (0,1,1,4,4,0) (0,1,-1,8,-8,1)
// Both with their common terms shared and every multiply fused (14 and 10 instructions): the fused
// steps run 12 and 10 of them per thread and position, and the plain expressions compiled to ~19
// and ~14 (Nsight Compute source counters, docs/performance.md).
LC0_DEVICE void wino_bt6(const float* d, int s, float* o, int t) {  // o[i*t] = (B^T d)[i], d stride s
    const float d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s];
    const float a = d4 - d2, b = d1 - d3;
    o[0] = fmaf(4.f, d0, fmaf(-5.f, d2, d4));
    o[t] = fmaf(-4.f, d1 + d2, d3 + d4);
    o[2 * t] = fmaf(4.f, d1 - d2, d4 - d3);
    o[3 * t] = fmaf(-2.f, b, a);
    o[4 * t] = fmaf(2.f, b, a);
    o[5 * t] = fmaf(4.f, d1, fmaf(-5.f, d3, d5));
}
LC0_DEVICE void wino_at6(const float* m, int s, float* o, int t) {  // o[i*t] = (A^T m)[i], 4 outputs
    const float m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s], m5 = m[5 * s];
    const float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
    o[0] = m0 + s12 + s34;
    o[t] = fmaf(2.f, d34, d12);
    o[2 * t] = fmaf(4.f, s34, s12);
    o[3 * t] = fmaf(8.f, d34, d12) + m5;
}

// SE gates computed outside the step (backend option se_gates; lc0py/backends/gpu/se_fold.py):
// a block's first convolution writes, per position, tile and channel, four sums of its output h
// (the quadrant, its rank on the board's edge, its file on the board's edge, their square) to
// stats [B][16][c] (row tile * 4 + sum); a GEMM and se_gates turn them into the second
// convolution's gates [B][2c] (sigmoid scale | shift), which its step applies in place of the SE.
// q: a tile's 4x4 quadrant (q[r*4 + f] = square (4ty + r, 4tx + f)); st: the tile's first row.
LC0_DEVICE void store_tile_stats(const float* q, int ty, int tx, T* st, int c) {
    float quad = 0.f, rank = 0.f, file = 0.f;
#pragma unroll
    for (int i = 0; i < 16; ++i) quad += q[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        rank += ty ? q[12 + j] : q[j];
        file += tx ? q[j * 4 + 3] : q[j * 4];
    }
    const float corner = ty ? (tx ? q[15] : q[12]) : (tx ? q[3] : q[0]);
    store_f32(st, quad);
    store_f32(st + c, rank);
    store_f32(st + 2 * (size_t)c, file);
    store_f32(st + 3 * (size_t)c, corner);
}

// One thread per (position, tile, channel): channels fastest, so reads and writes coalesce.
extern "C" __global__ void winograd_input(const T* LC0_RESTRICT x, T* LC0_RESTRICT v, int batch, int c) {
    lc0_grid_dependency_sync();
    const unsigned tiles = (unsigned)batch * 4u;
    const unsigned total = tiles * (unsigned)c;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const unsigned bt = i / (unsigned)c, ch = i - bt * (unsigned)c;
        const unsigned b = bt >> 2, ty = (bt >> 1) & 1u, tx = bt & 1u;
        float d[36], tmp[36], out[36];
        for (int r = 0; r < 6; ++r) {
            const int rank = (int)(4 * ty) - 1 + r;
            for (int f = 0; f < 6; ++f) {
                const int file = (int)(4 * tx) - 1 + f;
                const bool on = rank >= 0 && rank < 8 && file >= 0 && file < 8;
                d[r * 6 + f] = on ? to_f32(x[((size_t)b * 64 + rank * 8 + file) * c + ch]) : 0.f;
            }
        }
        for (int f = 0; f < 6; ++f) wino_bt6(d + f, 6, tmp + f, 6);       // columns: B^T d
        for (int r = 0; r < 6; ++r) wino_bt6(tmp + r * 6, 1, out + r * 6, 1);  // rows: (B^T d) B
        for (int k = 0; k < 36; ++k) store_f32(&v[((size_t)bt * 36 + k) * c + ch], out[k]);
    }
}

// y = act(A^T M A + bias) into NHWC rows; bias == nullptr: no bias (the SE kernel adds it).
extern "C" __global__ void winograd_output(const T* LC0_RESTRICT m, const T* LC0_RESTRICT bias,
                                           T* LC0_RESTRICT y, int batch, int c, int act) {
    lc0_grid_dependency_sync();
    const unsigned tiles = (unsigned)batch * 4u;
    const unsigned total = tiles * (unsigned)c;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const unsigned bt = i / (unsigned)c, ch = i - bt * (unsigned)c;
        const unsigned b = bt >> 2, ty = (bt >> 1) & 1u, tx = bt & 1u;
        float mm[36], tmp[24], out[16];
        for (int k = 0; k < 36; ++k) mm[k] = to_f32(m[((size_t)k * tiles + bt) * c + ch]);
        for (int f = 0; f < 6; ++f) wino_at6(mm + f, 6, tmp + f, 6);       // A^T M: [4, 6]
        for (int r = 0; r < 4; ++r) wino_at6(tmp + r * 6, 1, out + r * 4, 1);  // (A^T M) A: [4, 4]
        const float bb = bias != nullptr ? to_f32(bias[ch]) : 0.f;
        for (int r = 0; r < 4; ++r)
            for (int f = 0; f < 4; ++f) {
                const unsigned sq = (4 * ty + r) * 8 + 4 * tx + f;
                store_f32(&y[((size_t)b * 64 + sq) * c + ch], activate_fast(out[r * 4 + f] + bb, act));
            }
    }
}

// The whole Winograd output step of a convolution in one kernel (lc0's cuda backend fuses it the
// same way, its OutputInputTransform): one thread per channel (blockDim.x == c, c % WARP_SIZE == 0,
// c <= 512), blockDim.y positions per block, the channel's whole 8x8 board in registers, so the
// next convolution's input transform (whose 6x6 patches straddle the 4x4 tiles) needs no trip
// through memory:
//   y = A^T M A + bias  ->  [SE: y = sigmoid(z[:C]) * y + z[C:], z = W2 act(W1 mean(y) + b1) + b2]
//   ->  [+ skip]  ->  act  ->  out (NHWC rows; optional)  ->  v = B^T d B of the 4 tiles (optional)
// Per block: conv1's step writes only V for conv2 (h never reaches memory); conv2's step writes
// the new residual stream x (the next skip and the heads' input) and V for the next block.
// w1 == nullptr: no SE. SE fc2 is packed transposed, w2t [se, 2c], so a warp's reads coalesce.
// out may alias skip (each thread reads its own element before writing it).
//
// Three kernels do this step:
//   winograd_output_fused               one thread per channel, M and skip straight from global
//                                       memory (any precision, c <= 512);
//   winograd_output_fused_split         a position's four tiles on four threads (c <= 256), the
//                                       default where it applies (backend option winograd_split);
//   winograd_output_fused_split_staged  the split step in persistent blocks that copy the NEXT
//                                       position's M (and this one's skip) into shared memory with
//                                       cp.async while computing (backend option winograd_staged).
// (A staged form of the direct kernel was measured 21 % slower and removed: docs/performance.md.)
#ifndef LC0_SE_OUTSIDE  // 1: the fused steps' stats / gates pointers are honoured (ops compiles both)
#define LC0_SE_OUTSIDE 0
#endif
// Without LC0_SE_OUTSIDE the three fused kernels drop their stats / gates pointers on entry, so the
// compiler removes the sums and the gating: the plain steps keep their instruction count (the
// pointers tested at run time cost the plain steps ~3 % of their instructions on an H100).
#define LC0_SE_OUTSIDE_ONLY(stats, gates) \
    do {                                   \
        if (!LC0_SE_OUTSIDE) {             \
            stats = nullptr;               \
            gates = nullptr;               \
        }                                  \
    } while (0)

// The body's channel count at compile time (the host compiles the fused steps for its net's width,
// ops.prepare_residual; 0: taken from the c argument). With c a constant, every row stride is one:
// a tile's 36 V stores and its shared-memory M loads take immediate offsets from one address
// instead of a 64-bit add each. A kernel built for one width must not be launched for another
// (the host asserts it; steps_channels() returns the one to use).
#ifndef LC0_STEP_C
#define LC0_STEP_C 0
#endif
LC0_DEVICE int steps_channels(int c_arg) { return LC0_STEP_C > 0 ? LC0_STEP_C : c_arg; }

#ifndef LC0_FUSED_MAX_C  // the host passes ops.FUSED_WINOGRAD_MAX_C
#define LC0_FUSED_MAX_C 512
#endif

// board = A^T M A + bias of one position's 4 tiles; M element (k, tile) at mk[k*kstride + tile*tstride].
LC0_DEVICE void fused_board(const T* mk, size_t kstride, size_t tstride, float bb, bool live, float* board) {
#pragma unroll
    for (int tt = 0; tt < 4; ++tt) {
        const int ty = tt >> 1, tx = tt & 1;
        float mm[36], tmp[24], o[16];
#pragma unroll
        for (int k = 0; k < 36; ++k) mm[k] = live ? to_f32(mk[k * kstride + tt * tstride]) : 0.f;
#pragma unroll
        for (int f = 0; f < 6; ++f) wino_at6(mm + f, 6, tmp + f, 6);
#pragma unroll
        for (int r = 0; r < 4; ++r) wino_at6(tmp + r * 6, 1, o + r * 4, 1);
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int f = 0; f < 4; ++f) board[(4 * ty + r) * 8 + 4 * tx + f] = o[r * 4 + f] + bb;
    }
}

// SE on the board: every thread of the block calls it (two __syncthreads); pooled[c] and hidden[se]
// are this position's shared-memory floats.
LC0_DEVICE void fused_se(float* board, float* pooled, float* hidden, const T* LC0_RESTRICT w1,
                         const T* LC0_RESTRICT b1, const T* LC0_RESTRICT w2t, const T* LC0_RESTRICT b2,
                         int ch, int c, int se, int act) {
    float sum = 0.f;
#pragma unroll
    for (int s = 0; s < 64; ++s) sum += board[s];
    pooled[ch] = sum * (1.f / 64.f);
    __syncthreads();
    const int lane = ch % WARP_SIZE, warp = ch / WARP_SIZE, warps = c / WARP_SIZE;
    for (int o = warp; o < se; o += warps) {  // fc1: one warp per output, K = c
        float acc = 0.f;
        for (int k = lane; k < c; k += WARP_SIZE) acc += to_f32(w1[(size_t)o * c + k]) * pooled[k];
        acc = warp_sum(acc);
        if (lane == 0) hidden[o] = activate_fast(acc + to_f32(b1[o]), act);
    }
    __syncthreads();
    float scale = to_f32(b2[ch]), shift = to_f32(b2[c + ch]);
#pragma unroll 8
    for (int k = 0; k < se; ++k) {  // fc2: this channel's scale and shift, K = se
        const float h = hidden[k];
        scale += to_f32(w2t[(size_t)k * 2 * c + ch]) * h;
        shift += to_f32(w2t[(size_t)k * 2 * c + c + ch]) * h;
    }
    scale = activate_fast(scale, LC0_ACT_SIGMOID);
#pragma unroll
    for (int s = 0; s < 64; ++s) board[s] = scale * board[s] + shift;
}

// board += skip (square s at sk[s*c]; nullptr: none), act, then out (NHWC, at out[s*c]; nullptr:
// not stored) and the 4 tiles' input transform (tile t's element k at v[(t*36 + k)*c]; nullptr:
// not stored).
LC0_DEVICE void fused_finish(float* board, const T* sk, T* out, T* LC0_RESTRICT v, int c, int act,
                             T* stats) {
    if (sk != nullptr) {
        // Every skip load before the first store to out: out may alias skip, so a load after a
        // store could not be moved above it, and 64 dependent round trips to memory would follow.
#pragma unroll
        for (int s0 = 0; s0 < 64; s0 += 16) {
            float t[16];
#pragma unroll
            for (int s = 0; s < 16; ++s) t[s] = to_f32(sk[(size_t)(s0 + s) * c]);
#pragma unroll
            for (int s = 0; s < 16; ++s) board[s0 + s] += t[s];
        }
    }
    activate_fast_n<64>(board, act);
    if (stats != nullptr) {
#pragma unroll
        for (int tt = 0; tt < 4; ++tt) {
            const int ty = tt >> 1, tx = tt & 1;
            float q[16];
#pragma unroll
            for (int i = 0; i < 16; ++i) q[i] = board[(4 * ty + (i >> 2)) * 8 + 4 * tx + (i & 3)];
            store_tile_stats(q, ty, tx, stats + (size_t)tt * 4 * c, c);
        }
    }
    if (out != nullptr) {
#pragma unroll
        for (int s = 0; s < 64; ++s) store_f32(&out[(size_t)s * c], board[s]);
    }
    if (v == nullptr) return;
#pragma unroll
    for (int tt = 0; tt < 4; ++tt) {
        const int ty = tt >> 1, tx = tt & 1;
        float d[36], tmp[36], o[36];
#pragma unroll
        for (int r = 0; r < 6; ++r)
#pragma unroll
            for (int f = 0; f < 6; ++f) {
                const int rank = 4 * ty - 1 + r, file = 4 * tx - 1 + f;
                d[r * 6 + f] = (rank >= 0 && rank < 8 && file >= 0 && file < 8) ? board[rank * 8 + file] : 0.f;
            }
#pragma unroll
        for (int f = 0; f < 6; ++f) wino_bt6(d + f, 6, tmp + f, 6);
#pragma unroll
        for (int r = 0; r < 6; ++r) wino_bt6(tmp + r * 6, 1, o + r * 6, 1);
#pragma unroll
        for (int k = 0; k < 36; ++k) store_f32(&v[((size_t)tt * 36 + k) * c], o[k]);
    }
}

// Dynamic shared memory with SE: blockDim.y * (c + se) floats (pooled[c], hidden[se]).
extern "C" __global__ void __launch_bounds__(LC0_FUSED_MAX_C)
winograd_output_fused(const T* LC0_RESTRICT m, const T* LC0_RESTRICT bias, const T* skip, T* out,
                      T* LC0_RESTRICT v, const T* LC0_RESTRICT w1, const T* LC0_RESTRICT b1,
                      const T* LC0_RESTRICT w2t, const T* LC0_RESTRICT b2, int batch, int c_arg, int se,
                      int act, T* LC0_RESTRICT stats, const T* LC0_RESTRICT gates) {
    lc0_grid_dependency_sync();
    LC0_SE_OUTSIDE_ONLY(stats, gates);
    const int c = steps_channels(c_arg);
    extern __shared__ float fused_smem[];
    const int ch = threadIdx.x;
    const int b = blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = b < batch;  // tail positions still reach every __syncthreads
    float board[64];
    fused_board(m + (size_t)b * 4 * c + ch, (size_t)batch * 4 * c, c, to_f32(bias[ch]), live, board);
    if (gates != nullptr) {
        if (!live) return;  // no barrier follows
        const float scale = to_f32(gates[(size_t)b * 2 * c + ch]), shift = to_f32(gates[(size_t)b * 2 * c + c + ch]);
#pragma unroll
        for (int i = 0; i < 64; ++i) board[i] = scale * board[i] + shift;
    } else if (w1 != nullptr) {
        float* pooled = fused_smem + threadIdx.y * (c + se);
        fused_se(board, pooled, pooled + c, w1, b1, w2t, b2, ch, c, se, act);
    }
    if (!live) return;
    const size_t base = (size_t)b * 64 * c + ch;
    fused_finish(board, skip != nullptr ? skip + base : nullptr, out != nullptr ? out + base : nullptr,
                 v != nullptr ? v + (size_t)b * 144 * c + ch : nullptr, c, act,
                 stats != nullptr ? stats + (size_t)b * 16 * c + ch : nullptr);
}

// ---- the same step with a position's four tiles on four threads (backend option winograd_split) ----
// blockDim (c, 4): x = channel, y = tile (ty = y >> 1, tx = y & 1); one position per block. Each thread
// holds its tile's 4x4 quadrant of the board (16 floats where the direct kernel holds 64), so its
// live state is a quarter: Nsight Compute found the direct kernel issue-bound at 16 warps per SM,
// held there by 128 registers a thread. The SE pools through shared memory, and the next
// convolution's 6x6 input patches take their halo from the neighbouring quadrants' row and column
// next to the board's centre, exchanged through shared memory.
// Dynamic shared memory: 36*c + se floats (partial sums [4][c], hidden [se], edges [4][8][c]).
#ifndef LC0_SPLIT_MAX_THREADS
#define LC0_SPLIT_MAX_THREADS 1024
#endif

// The 6x6 patch of tile (ty, tx) from its quadrant q and the other quadrants' exported edges
// (edges + tile*8*c: that tile's row next to the centre [4], then its column [4], stride c).
// Rows 1-4 x columns 1-4 are q; the outer row on the centre's side is the vertical neighbour's
// row (its end on the centre's side: the diagonal neighbour's corner), the outer column on that
// side the horizontal neighbour's column; the two sides off the board are zero. Every index into
// q and d is a constant and the tile enters only through selects: an index that depended on the
// tile put q in local memory.
LC0_DEVICE void split_patch(const float* q, const float* edges, int ty, int tx, int c, float* d) {
    const int tile = ty * 2 + tx;
    const float* vert = edges + (size_t)(tile ^ 2) * 8 * c;
    const float* horz = edges + (size_t)(tile ^ 1) * 8 * c + (size_t)4 * c;
    const float corner = edges[(size_t)(tile ^ 3) * 8 * c + (size_t)(tx ? 3 : 0) * c];
    float row[6];
    row[0] = tx ? corner : 0.f;
    row[5] = tx ? 0.f : corner;
#pragma unroll
    for (int j = 0; j < 4; ++j) row[1 + j] = vert[(size_t)j * c];
#pragma unroll
    for (int f = 0; f < 6; ++f) {
        d[f] = ty ? row[f] : 0.f;
        d[30 + f] = ty ? 0.f : row[f];
    }
#pragma unroll
    for (int r = 1; r < 5; ++r) {
        const float h = horz[(size_t)(r - 1) * c];
        d[r * 6] = tx ? h : 0.f;
        d[r * 6 + 5] = tx ? 0.f : h;
#pragma unroll
        for (int f = 1; f < 5; ++f) d[r * 6 + f] = q[(r - 1) * 4 + f - 1];
    }
}

// A position's gates for one channel, loaded (not converted) where the step starts: their trip to
// memory then overlaps the M loads and the barrier instead of stalling the step where it applies
// them (20 % of the gated step's stall samples, Nsight Compute, docs/performance.md).
struct StepGates {
    bool on;
    T scale, shift;
    LC0_DEVICE static StepGates load(const T* gates, int ch, int c) {  // gates: the position's [2c]
        StepGates g;
        g.on = gates != nullptr;
        if (g.on) {
            g.scale = gates[ch];
            g.shift = gates[c + ch];
        }
        return g;
    }
};

// One position's fused step on the block's (c, 4) threads (x = channel, y = tile). This thread's M
// element k at mk[k * kstride] and its channel's bias bb; the position's skip rows (NHWC, square s
// at sk[s*c]; nullptr: none) and its out rows (out: nullptr, none) at the same indexing; the V rows
// of its tile at vt[k*c] (tile-major).
// stats: this position's [16][c] sums to write (nullptr: none); gates: its channel's gates to
// apply in place of the SE (StepGates::load). STAGED: mk and sk are in shared memory and the skip
// rows' async copies are waited for (they are the newest group but one: the next position's M was
// committed after them).
template <bool STAGED>
LC0_DEVICE void split_position(const T* mk, size_t kstride, float bb, const T* sk, T* out, T* vt,
                               const T* LC0_RESTRICT w1, const T* LC0_RESTRICT b1,
                               const T* LC0_RESTRICT w2t, const T* LC0_RESTRICT b2, int c, int se,
                               int act, float* smem, T* stats, StepGates gates) {
    const int ch = threadIdx.x, tt = threadIdx.y, ty = tt >> 1, tx = tt & 1;
    float* part = smem;            // [4][c]: this position's per-tile channel sums, then the pooled mean
    float* hidden = part + 4 * c;  // [se]
    float* edges = hidden + se;    // [4][8][c]
    float q[16];
    {
        float mm[36], tmp[24];
#pragma unroll
        for (int k = 0; k < 36; ++k) mm[k] = to_f32(mk[(size_t)k * kstride]);
#pragma unroll
        for (int f = 0; f < 6; ++f) wino_at6(mm + f, 6, tmp + f, 6);
#pragma unroll
        for (int r = 0; r < 4; ++r) wino_at6(tmp + r * 6, 1, q + r * 4, 1);
#pragma unroll
        for (int i = 0; i < 16; ++i) q[i] += bb;
    }
    if (gates.on) {
        const float scale = to_f32(gates.scale), shift = to_f32(gates.shift);
#pragma unroll
        for (int i = 0; i < 16; ++i) q[i] = scale * q[i] + shift;
    } else if (w1 != nullptr) {
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < 16; ++i) sum += q[i];
        part[tt * c + ch] = sum;
        __syncthreads();
        if (tt == 0) part[ch] = (part[ch] + part[c + ch] + part[2 * c + ch] + part[3 * c + ch]) * (1.f / 64.f);
        __syncthreads();
        // fc1: one warp per output over all 4*c threads (c is a multiple of the warp: a warp
        // never spans two tiles), K = c
        const int lin = tt * c + ch, lane = lin % WARP_SIZE, warp = lin / WARP_SIZE, warps = 4 * c / WARP_SIZE;
        for (int o = warp; o < se; o += warps) {
            float acc = 0.f;
            for (int k = lane; k < c; k += WARP_SIZE) acc += to_f32(w1[(size_t)o * c + k]) * part[k];
            acc = warp_sum(acc);
            if (lane == 0) hidden[o] = activate_fast(acc + to_f32(b1[o]), act);
        }
        __syncthreads();
        // fc2: the channel's four threads each take a quarter of K = se, and add the partial
        // scales and shifts through shared memory (one thread doing all of K was ~15 % of the
        // kernel's instructions, repeated on all four)
        float scale = 0.f, shift = 0.f;
        const int k0 = tt * se / 4, k1 = (tt + 1) * se / 4;
#pragma unroll 4
        for (int k = k0; k < k1; ++k) {
            const float h = hidden[k];
            scale += to_f32(w2t[(size_t)k * 2 * c + ch]) * h;
            shift += to_f32(w2t[(size_t)k * 2 * c + c + ch]) * h;
        }
        float* partial = edges + (size_t)tt * 2 * c + ch;  // edges is free until the halo exchange
        partial[0] = scale;
        partial[c] = shift;
        __syncthreads();
        scale = to_f32(b2[ch]);
        shift = to_f32(b2[c + ch]);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
            scale += edges[(size_t)t * 2 * c + ch];
            shift += edges[(size_t)t * 2 * c + c + ch];
        }
        scale = activate_fast(scale, LC0_ACT_SIGMOID);
#pragma unroll
        for (int i = 0; i < 16; ++i) q[i] = scale * q[i] + shift;
        __syncthreads();  // every partial is read before the halo exchange overwrites edges
    }
    // square (4*ty + r, 4*tx + f) of the position: row 8*(4*ty + r) + 4*tx + f (NHWC)
    // square i of the quadrant at quad + sq(i): with c a compile-time constant (LC0_STEP_C) every
    // sq(i) is an immediate offset from one address (an unsigned index added before widening
    // cannot be folded, and cost a 64-bit add per load and store)
    const int quad = (32 * ty + 4 * tx) * c + ch;
    const auto sq = [c](int i) { return ((i >> 2) * 8 + (i & 3)) * c; };
    if (sk != nullptr) {
        if (STAGED) {
            async_wait<1>();
            __syncthreads();
        }
        float t[16];  // every skip load before the first store: out may alias skip
#pragma unroll
        for (int i = 0; i < 16; ++i) t[i] = to_f32(sk[quad + sq(i)]);  // sk + quad: one address
#pragma unroll
        for (int i = 0; i < 16; ++i) q[i] += t[i];
    }
    activate_fast_n<16>(q, act);
    if (stats != nullptr) store_tile_stats(q, ty, tx, stats + (size_t)tt * 4 * c + ch, c);
    if (out != nullptr) {
        T* oq = out + quad;
#pragma unroll
        for (int i = 0; i < 16; ++i) store_f32(&oq[sq(i)], q[i]);
    }
    if (vt == nullptr) return;  // uniform: no barrier follows for anyone
    {
        // the row and column next to the centre (rank 3 or 4, file 3 or 4), chosen by selects
        float* mine = edges + (size_t)tt * 8 * c + ch;
#pragma unroll
        for (int j = 0; j < 4; ++j) mine[(size_t)j * c] = ty ? q[j] : q[12 + j];
#pragma unroll
        for (int j = 0; j < 4; ++j) mine[(size_t)(4 + j) * c] = tx ? q[j * 4] : q[j * 4 + 3];
    }
    __syncthreads();
    float d[36], tmp[36], o[36];
    split_patch(q, edges + ch, ty, tx, c, d);
#pragma unroll
    for (int f = 0; f < 6; ++f) wino_bt6(d + f, 6, tmp + f, 6);
#pragma unroll
    for (int r = 0; r < 6; ++r) wino_bt6(tmp + r * 6, 1, o + r * 6, 1);
#pragma unroll
    for (int k = 0; k < 36; ++k) store_f32(&vt[(size_t)k * c], o[k]);
}

extern "C" __global__ void __launch_bounds__(LC0_SPLIT_MAX_THREADS)
winograd_output_fused_split(const T* LC0_RESTRICT m, const T* LC0_RESTRICT bias, const T* skip, T* out,
                            T* LC0_RESTRICT v, const T* LC0_RESTRICT w1, const T* LC0_RESTRICT b1,
                            const T* LC0_RESTRICT w2t, const T* LC0_RESTRICT b2, int batch, int c_arg, int se,
                            int act, T* LC0_RESTRICT stats, const T* LC0_RESTRICT gates) {
    lc0_grid_dependency_sync();
    LC0_SE_OUTSIDE_ONLY(stats, gates);
    const int c = steps_channels(c_arg);
    extern __shared__ float fused_smem[];
    const size_t b = blockIdx.x;
    const size_t tile = b * 4 + threadIdx.y;
    const StepGates g = StepGates::load(gates != nullptr ? gates + b * 2 * c : nullptr, threadIdx.x, c);
    split_position<false>(m + tile * c + threadIdx.x, (size_t)batch * 4 * c, to_f32(bias[threadIdx.x]),
                          skip != nullptr ? skip + b * 64 * c : nullptr, out != nullptr ? out + b * 64 * c : nullptr,
                          v != nullptr ? v + tile * 36 * c + threadIdx.x : nullptr, w1, b1, w2t, b2, c, se,
                          act, fused_smem, stats != nullptr ? stats + b * 16 * c : nullptr, g);
}

// ---- the split step with its loads in flight ahead (backend option winograd_staged) ----------
// Persistent blocks of (c, 4) threads: block g takes positions g, g + gridDim.x, ... While it
// computes one position, cp.async copies the next one's M rows (36 rows of 4c, one per element)
// into the other of two shared-memory stages, and the current one's skip rows into a third buffer
// (waited for only after the SE). The split kernel spends its time waiting for its 36 M loads at
// the start of every position, with a single 1,024-thread block per multiprocessor and nothing
// else to run (Nsight Compute, H200).
// Dynamic shared memory: the split kernel's (36c + se) floats rounded up to 16 bytes, two stages of
// 144c elements of T ([36][4][c]), then the skip rows [64][c]. c * sizeof(T) a multiple of 16.
//
// split_copy (the skip rows): ROWS rows of c elements of T by the block's (c, 4) threads, 16-byte
// chunk i on thread i % 4c. Built for one width (LC0_STEP_C) every count is a constant, so the
// loop unrolls into one cp.async a chunk at immediate offsets from two addresses (with run-time
// counts the staged step's two copy loops were ~110 instructions a warp and position: Nsight
// Compute source counters, docs/performance.md).
template <int ROWS>
LC0_DEVICE void split_copy(T* dst, const T* src, int c) {
    const int tid = threadIdx.y * c + threadIdx.x;
#if LC0_STEP_C > 0
    constexpr int chunks = ROWS * LC0_STEP_C / LC0_VEC, threads = 4 * LC0_STEP_C;
    static_assert(LC0_STEP_C % LC0_VEC == 0, "a row is whole 16-byte chunks");
    T* d = dst + tid * LC0_VEC;
    const T* s = src + tid * LC0_VEC;
#pragma unroll
    for (int j = 0; j < (chunks + threads - 1) / threads; ++j)
        if ((j + 1) * threads <= chunks || tid + j * threads < chunks)
            async_copy16(d + j * threads * LC0_VEC, s + j * threads * LC0_VEC);
#else
    for (int i = tid; i < ROWS * c / LC0_VEC; i += 4 * c) async_copy16(dst + (size_t)i * LC0_VEC, src + (size_t)i * LC0_VEC);
#endif
}

// The position's M rows, 36 of 4c elements of T (run = 4c / LC0_VEC 16-byte chunks each). The
// block's 4c threads are exactly LC0_VEC runs, so a thread copies chunk j of rows k0, k0 + LC0_VEC,
// ...: (k0, j) = divmod(thread, run), once per kernel (dividing every chunk's index by a run-time
// run was ~10 % of the V-only step's instructions).
LC0_DEVICE void split_copy_m(T* stage, const T* m, size_t tiles, size_t b, int c, int k0, int j) {
    const T* src = m + (b * 4) * c + (size_t)j * LC0_VEC;
    T* dst = stage + (size_t)j * LC0_VEC;
#pragma unroll
    for (int k = k0; k < 36; k += LC0_VEC) async_copy16(dst + (size_t)k * 4 * c, src + (size_t)k * tiles * c);
}


extern "C" __global__ void __launch_bounds__(LC0_SPLIT_MAX_THREADS)
winograd_output_fused_split_staged(const T* LC0_RESTRICT m, const T* LC0_RESTRICT bias, const T* skip, T* out,
                                   T* LC0_RESTRICT v, const T* LC0_RESTRICT w1, const T* LC0_RESTRICT b1,
                                   const T* LC0_RESTRICT w2t, const T* LC0_RESTRICT b2, int batch, int c_arg,
                                   int se, int act, T* LC0_RESTRICT stats, const T* LC0_RESTRICT gates) {
    lc0_grid_dependency_sync();
    LC0_SE_OUTSIDE_ONLY(stats, gates);
    const int c = steps_channels(c_arg);
    extern __shared__ uint4 staged_smem[];  // uint4: 16-byte alignment for the async copies
    float* fsmem = reinterpret_cast<float*>(staged_smem);
    const size_t fbytes = ((size_t)(36 * c + se) * 4 + 15) / 16 * 16;
    T* stages = reinterpret_cast<T*>(reinterpret_cast<char*>(staged_smem) + fbytes);
    T* skipbuf = stages + (size_t)2 * 144 * c;
    const size_t tiles = (size_t)batch * 4, stage_off = (size_t)threadIdx.y * c + threadIdx.x;
    const size_t v_off = (size_t)threadIdx.y * 36 * c + threadIdx.x;  // the thread's tile's V rows
    const int run = 4 * c / LC0_VEC, copy_k0 = (int)stage_off / run, copy_j = (int)stage_off - copy_k0 * run;
    const float bb = to_f32(bias[threadIdx.x]);  // the channel's bias: loaded once, not per position
    size_t b = blockIdx.x;
    if (b < (size_t)batch) split_copy_m(stages, m, tiles, b, c, copy_k0, copy_j);
    async_commit();
    for (int s = 0; b < (size_t)batch; b += gridDim.x, s ^= 1) {
        if (skip != nullptr) split_copy<64>(skipbuf, skip + b * 64 * c, c);
        async_commit();
        const size_t next = b + gridDim.x;
        if (next < (size_t)batch) split_copy_m(stages + (size_t)(s ^ 1) * 144 * c, m, tiles, next, c, copy_k0, copy_j);
        async_commit();
        const StepGates g = StepGates::load(gates != nullptr ? gates + b * 2 * c : nullptr, threadIdx.x, c);
        async_wait<2>();  // this thread's copies of this position's M have landed ...
        __syncthreads();  // ... and everyone else's
        split_position<true>(stages + (size_t)s * 144 * c + stage_off, (size_t)4 * c, bb,
                             skip != nullptr ? skipbuf : nullptr, out != nullptr ? out + b * 64 * c : nullptr,
                             v != nullptr ? v + b * 144 * c + v_off : nullptr, w1, b1, w2t, b2, c,
                             se, act, fsmem, stats != nullptr ? stats + b * 16 * c : nullptr, g);
        __syncthreads();  // stage s and the skip rows are read: the next positions' copies go there
    }
}


#ifndef LC0_SE_GATES_POS  // the host passes ops.SE_GATES_POSITIONS
#define LC0_SE_GATES_POS 8
#endif
#ifndef LC0_SE_GATES_KC  // the host passes ops.SE_GATES_K_CHUNK
#define LC0_SE_GATES_KC 16
#endif
static_assert(LC0_SE_GATES_POS % 4 == 0, "se_gates reads a weight's positions as 16-byte vectors");

// The gates of a block's second convolution from fc1's pre-activation hpre [B][se] (the GEMM of
// the first convolution's sums with the folded fc1, se_fold.py): hidden = act(hpre + b1f),
// z = W2 hidden + b2, gates[b] = (sigmoid(z[:c]), z[c:]); w2t [se, 2c] as the SE kernels take it.
// It sits between two GEMMs on the critical path, so it is built for latency, not instructions:
// a block takes LC0_SE_GATES_POS positions (blockIdx.x) and blockDim.x of the 2c outputs
// (blockIdx.y), one a thread; a thread issues its first LC0_SE_GATES_KC weight loads before the
// barrier that waits for the hidden values, so one round trip to L2 serves both (a thread doing
// two outputs with a dependent K loop took 12 us on an H100 at any batch).
// Dynamic shared memory: hidden [kp][POS] floats, kp = se rounded up to LC0_SE_GATES_KC (zeros
// past se, so the K loop needs no bound).
extern "C" __global__ void se_gates(const T* LC0_RESTRICT hpre, const T* LC0_RESTRICT b1f, const T* LC0_RESTRICT w2t,
                                    const T* LC0_RESTRICT b2, T* LC0_RESTRICT gates, int batch, int c, int se,
                                    int act) {
    lc0_grid_dependency_sync();
    constexpr int POS = LC0_SE_GATES_POS, KC = LC0_SE_GATES_KC;
    extern __shared__ float gates_hidden[];
    const int b0 = blockIdx.x * POS;
    const int n = batch - b0 < POS ? batch - b0 : POS;
    const int o = blockIdx.y * blockDim.x + threadIdx.x;
    const bool live = o < 2 * c;
    const int kp = (se + KC - 1) / KC * KC;
    float w[KC];
#pragma unroll
    for (int j = 0; j < KC; ++j) w[j] = live && j < se ? to_f32(w2t[(size_t)j * 2 * c + o]) : 0.f;
    const float bias = live ? to_f32(b2[o]) : 0.f;
    for (int i = threadIdx.x; i < POS * kp; i += blockDim.x) {  // k fastest: hpre rows coalesce
        const int p = i / kp, k = i - p * kp;
        gates_hidden[k * POS + p] =
            p < n && k < se ? activate_fast(to_f32(hpre[(size_t)(b0 + p) * se + k]) + to_f32(b1f[k]), act) : 0.f;
    }
    __syncthreads();
    float z[POS];
#pragma unroll
    for (int p = 0; p < POS; ++p) z[p] = bias;
    for (int k0 = 0; k0 < kp; k0 += KC) {
        if (k0 > 0) {
#pragma unroll
            for (int j = 0; j < KC; ++j) w[j] = live && k0 + j < se ? to_f32(w2t[(size_t)(k0 + j) * 2 * c + o]) : 0.f;
        }
#pragma unroll
        for (int j = 0; j < KC; ++j) {
            const float* h = gates_hidden + (k0 + j) * POS;  // 16-byte aligned: vector loads
#pragma unroll
            for (int p = 0; p < POS; ++p) z[p] += w[j] * h[p];
        }
    }
    if (!live) return;
#pragma unroll
    for (int p = 0; p < POS; ++p)
        if (p < n) store_f32(&gates[(size_t)(b0 + p) * 2 * c + o], o < c ? activate_fast(z[p], LC0_ACT_SIGMOID) : z[p]);
}
