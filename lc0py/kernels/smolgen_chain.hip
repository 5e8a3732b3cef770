// smolgen_chain.hip -- smolgen's whole per-position network for a few positions, in ONE kernel:
//
//   c[r]   = flatten_t( x[r, t, :] . Wc^T )                    compress: SEQ tokens x HC, no bias
//   s1[r]  = LN1( act(c[r] . W1^T + b1) ) * g1 + be1           dense 1 + LayerNorm: HS values
//   out[r] = LN2( act(s1[r] . W2^T + b2) ) * g2 + be2          dense 2 + LayerNorm: N2 = heads x gs
//
// for r < rows <= LC0_SC_ROWS. At a batch of one position the unfused chain is four kernels on the
// critical path of every encoder layer (compress GEMM 3.9 us, then two dense_rows_layernorm of
// 6.1 us on an H200; the QKV GEMM beside them takes 3.9): latency, not work -- T82's three weight
// matrices are 6 MB, a few microseconds of HBM, and the arithmetic is ~2.6 MFLOP a position.
// Here one grid does the three steps one after another, separated by grid barriers, so the chain
// pays one launch and keeps every step's loads in flight across all its blocks:
//
//   step 0: every warp takes compress outputs (token, channel), all lanes splitting E; the fp32
//           results go to scratch `c`;                                           grid barrier 1
//   step 1: each block copies c into shared memory; every warp takes dense-1 outputs (all rows
//           at once: each weight row is read once for every position) -> act -> scratch `pre1`;
//                                                                                 grid barrier 2
//   step 2: each block copies pre1, normalises it (LN1, fp32, two-pass) in shared memory; every
//           warp takes groups of dense-2 outputs -> act -> scratch `pre2`;        grid barrier 3
//   step 3: each block computes LN2's mean and variance of every row (all of pre2) and writes its
//           own slice of the normalised outputs to `out` (T).
//
// The grid barrier: a block arrives by a device-scope fence and an atomic increment of sync[0],
// then spins until the counter reaches (barrier number) x (blocks). The blocks must all be
// resident at once: the host launches at most a quarter of the multiprocessors' worth of blocks
// (ops.smolgen_chain_blocks), so several chains at once (lanes on one GPU) and the kernels beside
// them never keep a block from starting. On the way out each block takes a ticket on sync[1]; the
// last one puts both counters back to 0 for the next launch (or a CUDA graph's replay). They must
// be 0 before the first launch (the runner zeroes them when it allocates them).
//
// Intermediate values stay fp32 (the GEMM path rounds c, s1 and the dense outputs to T), so the
// two paths differ by T's rounding (fp16: ~1e-3 relative), not more.
//
// Compile defines: LC0_SC_SEQ (tokens, 64), LC0_SC_E, LC0_SC_HC, LC0_SC_HS, LC0_SC_N2, LC0_SC_ROWS
// (most rows a launch takes), LC0_SC_WARPS (warps a block), LC0_SC_C0 / LC0_SC_G2 (outputs a warp
// has in flight in steps 0 and 2). Dynamic shared memory:
// sc::SMEM_BYTES. scratch: float[LC0_SC_ROWS * (SEQ*HC + HS + N2)]; sync: two u32.
#include "common.h"
#include "activations.h"

#ifndef LC0_SC_SEQ
#define LC0_SC_SEQ 64
#endif
#ifndef LC0_SC_E
#define LC0_SC_E 768
#endif
#ifndef LC0_SC_HC
#define LC0_SC_HC 32
#endif
#ifndef LC0_SC_HS
#define LC0_SC_HS 256
#endif
#ifndef LC0_SC_N2
#define LC0_SC_N2 6144
#endif
#ifndef LC0_SC_ROWS
#define LC0_SC_ROWS 4
#endif
#ifndef LC0_SC_WARPS
#define LC0_SC_WARPS 8
#endif
// The block's dynamic shared memory (the CPU emulator, whose blocks run at the same time, gives
// each block its own).
#ifndef LC0_SC_SHARED
#define LC0_SC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

namespace sc {
constexpr int SEQ = LC0_SC_SEQ;
constexpr int E = LC0_SC_E;
constexpr int HC = LC0_SC_HC;
constexpr int HS = LC0_SC_HS;
constexpr int N2 = LC0_SC_N2;
constexpr int ROWS = LC0_SC_ROWS;
constexpr int WARPS = LC0_SC_WARPS;
constexpr int THREADS = WARPS * WARP_SIZE;
constexpr int K1 = SEQ * HC;  // dense 1's inputs
// elements of a 16-byte chunk of a row of each length (one element when it is not a multiple)
constexpr int VE = (E % LC0_VEC == 0) ? LC0_VEC : 1;
constexpr int VK1 = (K1 % LC0_VEC == 0) ? LC0_VEC : 1;
constexpr int VHS = (HS % LC0_VEC == 0) ? LC0_VEC : 1;
constexpr int PE = (E / VE + WARP_SIZE - 1) / WARP_SIZE;     // chunks of an E row per lane
constexpr int PK1 = (K1 / VK1 + WARP_SIZE - 1) / WARP_SIZE;  // ... of a dense-1 weight row
constexpr int PHS = (HS / VHS + WARP_SIZE - 1) / WARP_SIZE;  // ... of a dense-2 weight row
#ifndef LC0_SC_C0
#define LC0_SC_C0 8
#endif
#ifndef LC0_SC_G2
#define LC0_SC_G2 8
#endif
// Outputs a warp has in flight: compress outputs of one token (its row of x loaded once for them
// when they divide HC), dense-2 outputs. (All 24 of a warp's share at once with 32 blocks was no
// faster on an H200: a multiprocessor does not keep more of its loads in flight.)
constexpr int C0 = LC0_SC_C0;
constexpr int G2 = LC0_SC_G2;
constexpr bool C0_ONE_TOKEN = HC % C0 == 0;
constexpr int STAGE = ROWS * (K1 > HS ? K1 : HS);  // floats: the rows a step reads from shared memory
// values a thread copies from scratch at once (all loads in flight before any is used: a load
// whose value is needed before the next is issued would wait ~0.2 us for L2, one after another)
constexpr int S1 = (ROWS * K1 + THREADS - 1) / THREADS;
constexpr int S2 = (ROWS * HS + THREADS - 1) / THREADS;
constexpr int S3 = (N2 + THREADS - 1) / THREADS;
constexpr int SMEM_BYTES = (STAGE + WARPS + 2 * ROWS) * 4;
static_assert(ROWS >= 1, "at least one row");
}  // namespace sc

template <int V>
LC0_DEVICE float sc_dot_f32(const uint4& a, const float* y) {  // y: V floats of shared memory
    const T* x = reinterpret_cast<const T*>(&a);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < V; ++i) s += to_f32(x[i]) * y[i];
    return s;
}

// stage[0, n) = src[0, n) (written by other blocks: read past L1), every load in flight at once.
template <int PER>
LC0_DEVICE void sc_copy_in(float* stage, const float* src, int n) {
    float v[PER];
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int i = threadIdx.x + j * sc::THREADS;
        v[j] = i < n ? lc0_load_global_cg(src + i) : 0.f;
    }
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int i = threadIdx.x + j * sc::THREADS;
        if (i < n) stage[i] = v[j];
    }
}

// Every block has arrived at barrier `number` (1, 2, 3) and everything written before it is visible.
LC0_DEVICE void sc_grid_barrier(u32* counter, u32 number) {
    __syncthreads();  // the block's writes are done
    if (threadIdx.x == 0) {
        lc0_fence_device();  // ... and visible to the device before the arrival is
        lc0_atomic_add(counter, 1u);
        const u32 target = number * gridDim.x;
        while (lc0_load_volatile_u32(counter) < target) lc0_spin_pause();
        lc0_fence_device();
    }
    __syncthreads();
}

// Mean and 1/std of `n` values (fp32, two-pass) that the block reads with `get(i)`; every thread
// gets them.
template <class Get>
LC0_DEVICE void sc_row_stats(int n, float eps, float* red, Get get, float& mean, float& rstd) {
    float sum = 0.f;
    for (int i = threadIdx.x; i < n; i += sc::THREADS) sum += get(i);
    mean = block_sum<sc::WARPS>(sum, red) / n;
    float var = 0.f;
    for (int i = threadIdx.x; i < n; i += sc::THREADS) {
        const float d = get(i) - mean;
        var += d * d;
    }
    var = block_sum<sc::WARPS>(var, red) / n;
    rstd = rsqrtf(var + eps);
}

// LC0_SC_CLOCKS (scripts/bench/smolgen_chain_probe.py, NVIDIA): block 0's thread 0 writes the
// global timer at each step's start and end to sync[2..] (u64s), so a probe can see where a launch
// spends its time. Never defined by the backend.
#if defined(LC0_SC_CLOCKS) && defined(LC0_NVIDIA)
#define SC_STAMP(k)                                                                  \
    do {                                                                             \
        if (blockIdx.x == 0 && threadIdx.x == 0) {                                   \
            unsigned long long t_;                                                   \
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_));                   \
            reinterpret_cast<unsigned long long*>(sync + 2)[k] = t_;                 \
        }                                                                            \
    } while (0)
#else
#define SC_STAMP(k) \
    do {            \
    } while (0)
#endif

extern "C" __global__ void __launch_bounds__(LC0_SC_WARPS * WARP_SIZE)
smolgen_chain(const T* LC0_RESTRICT x, const T* LC0_RESTRICT wc, const T* LC0_RESTRICT w1,
              const T* LC0_RESTRICT b1, const T* LC0_RESTRICT g1, const T* LC0_RESTRICT be1,
              const T* LC0_RESTRICT w2, const T* LC0_RESTRICT b2, const T* LC0_RESTRICT g2,
              const T* LC0_RESTRICT be2, T* LC0_RESTRICT out, float* scratch, u32* sync, int rows,
              float eps1, float eps2, int act) {
    lc0_grid_dependency_sync();
    using namespace sc;
    LC0_SC_SHARED(smem_raw);
    float* stage = reinterpret_cast<float*>(smem_raw);
    float* red = stage + STAGE;
    float* stats = red + WARPS;  // mean, rstd per row
    float* cbuf = scratch;
    float* pre1 = cbuf + ROWS * K1;
    float* pre2 = pre1 + ROWS * HS;
    const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
    const int gw = blockIdx.x * WARPS + warp, tw = gridDim.x * WARPS;  // this warp, all warps

    SC_STAMP(0);
    // ---- step 0: compress. Output o = (token row, channel j); C0 of them in flight a warp.
    const int n_c = rows * SEQ * HC;
    for (int o0 = gw * C0; o0 < n_c; o0 += tw * C0) {
        constexpr int XR = C0_ONE_TOKEN ? 1 : C0;  // rows of x this group reads
        uint4 xr[XR][PE], wr[C0][PE];
#pragma unroll
        for (int q = 0; q < C0; ++q) {
            const int o = o0 + q, tok = o / HC, j = o % HC;
#pragma unroll
            for (int c = 0; c < PE; ++c) {
                const int idx = (lane + c * WARP_SIZE) * VE;
                const bool in = o < n_c && idx < E;
                if (q < XR) xr[q][c] = in ? raw_chunk<VE>(x + (long long)tok * E + idx) : make_uint4(0, 0, 0, 0);
                wr[q][c] = in ? raw_chunk<VE>(wc + (long long)j * E + idx) : make_uint4(0, 0, 0, 0);
            }
        }
#pragma unroll
        for (int q = 0; q < C0; ++q) {
            float acc = 0.f;
#pragma unroll
            for (int c = 0; c < PE; ++c) acc += dot_raw_chunks<VE>(xr[C0_ONE_TOKEN ? 0 : q][c], wr[q][c]);
            acc = warp_sum(acc);
            const int o = o0 + q;
            if (lane == 0 && o < n_c) cbuf[(o / (SEQ * HC)) * K1 + o % (SEQ * HC)] = acc;
        }
    }
    SC_STAMP(1);
    sc_grid_barrier(sync, 1);
    SC_STAMP(2);

    // ---- step 1: dense 1 of every row from shared memory; a weight row is read once for all rows
    sc_copy_in<S1>(stage, cbuf, rows * K1);
    __syncthreads();
    for (int n = gw; n < HS; n += tw) {
        uint4 wr[PK1];
#pragma unroll
        for (int c = 0; c < PK1; ++c) {
            const int idx = (lane + c * WARP_SIZE) * VK1;
            wr[c] = idx < K1 ? raw_chunk<VK1>(w1 + (long long)n * K1 + idx) : make_uint4(0, 0, 0, 0);
        }
        const float bias = b1 != nullptr ? to_f32(b1[n]) : 0.f;
        for (int r = 0; r < rows; ++r) {
            float acc = 0.f;
#pragma unroll
            for (int c = 0; c < PK1; ++c) {
                const int idx = (lane + c * WARP_SIZE) * VK1;
                if (idx < K1) acc += sc_dot_f32<VK1>(wr[c], stage + r * K1 + idx);
            }
            acc = warp_sum(acc);
            if (lane == 0) pre1[r * HS + n] = activate(acc + bias, act);
        }
    }
    SC_STAMP(3);
    sc_grid_barrier(sync, 2);
    SC_STAMP(4);

    // ---- step 2: LN1 in shared memory, then dense 2 (G2 outputs in flight a warp)
    sc_copy_in<S2>(stage, pre1, rows * HS);
    __syncthreads();
    for (int r = 0; r < rows; ++r) {
        float mean, rstd;
        sc_row_stats(HS, eps1, red, [&](int i) { return stage[r * HS + i]; }, mean, rstd);
        __syncthreads();  // every thread has read the row before it is overwritten
        for (int i = threadIdx.x; i < HS; i += THREADS)
            stage[r * HS + i] = (stage[r * HS + i] - mean) * rstd * to_f32(g1[i]) + to_f32(be1[i]);
    }
    __syncthreads();
    for (int n0 = gw * G2; n0 < N2; n0 += tw * G2) {
        uint4 wr[G2][PHS];
#pragma unroll
        for (int q = 0; q < G2; ++q) {
#pragma unroll
            for (int c = 0; c < PHS; ++c) {
                const int idx = (lane + c * WARP_SIZE) * VHS;
                wr[q][c] = (n0 + q < N2 && idx < HS) ? raw_chunk<VHS>(w2 + (long long)(n0 + q) * HS + idx)
                                                     : make_uint4(0, 0, 0, 0);
            }
        }
        for (int r = 0; r < rows; ++r) {
#pragma unroll
            for (int q = 0; q < G2; ++q) {
                float acc = 0.f;
#pragma unroll
                for (int c = 0; c < PHS; ++c) {
                    const int idx = (lane + c * WARP_SIZE) * VHS;
                    if (idx < HS) acc += sc_dot_f32<VHS>(wr[q][c], stage + r * HS + idx);
                }
                acc = warp_sum(acc);  // the whole warp takes part: n0, q and r are the warp's
                const int n = n0 + q;
                if (lane == 0 && n < N2)
                    pre2[r * N2 + n] = activate(acc + (b2 != nullptr ? to_f32(b2[n]) : 0.f), act);
            }
        }
    }
    SC_STAMP(5);
    sc_grid_barrier(sync, 3);
    SC_STAMP(6);

    // ---- step 3: LN2 statistics of every row (all of pre2, held in registers), then this
    //      block's slice of out
    for (int r = 0; r < rows; ++r) {
        float v[S3];
#pragma unroll
        for (int j = 0; j < S3; ++j) {
            const int i = threadIdx.x + j * THREADS;
            v[j] = i < N2 ? lc0_load_global_cg(pre2 + r * N2 + i) : 0.f;
        }
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < S3; ++j) sum += v[j];
        const float mean = block_sum<sc::WARPS>(sum, red) / N2;
        float var = 0.f;
#pragma unroll
        for (int j = 0; j < S3; ++j) {
            const float d = threadIdx.x + j * THREADS < N2 ? v[j] - mean : 0.f;
            var += d * d;
        }
        var = block_sum<sc::WARPS>(var, red) / N2;
        if (threadIdx.x == 0) {
            stats[2 * r] = mean;
            stats[2 * r + 1] = rsqrtf(var + eps2);
        }
    }
    __syncthreads();
    for (int r = 0; r < rows; ++r) {
        const float mean = stats[2 * r], rstd = stats[2 * r + 1];
        for (int i = blockIdx.x * THREADS + threadIdx.x; i < N2; i += gridDim.x * THREADS) {
            const float v = lc0_load_global_cg(pre2 + r * N2 + i);
            store_f32(out + (long long)r * N2 + i, (v - mean) * rstd * to_f32(g2[i]) + to_f32(be2[i]));
        }
    }

    SC_STAMP(7);
    // ---- the last block out puts the counters back to 0 (every block has passed barrier 3, so
    //      nobody reads sync[0] any more)
    __syncthreads();
    if (threadIdx.x == 0) {
        lc0_fence_device();
        if (lc0_atomic_add(sync + 1, 1u) == gridDim.x - 1) {
            sync[0] = 0u;
            sync[1] = 0u;
            lc0_fence_device();
        }
    }
}
