// flash_attention.hip -- fused multi-head attention on lc0's interleaved layout:
//
//   O[b, s, h*d + j] = sum_t softmax_t( (Q_bh[s].K_bh[t]) * scale + G[b, h, s, t] ) * V_bh[t][j]
//
// Q, K, V are [B, seq, *] token rows with a row stride `ld` (D for separate buffers, 3D for the
// fused QKV GEMM output) and head h at column offset h*d. G is the smolgen bias [B, H, seq, seq]
// (fp16 or fp32; nullptr = no bias). The seq x seq logits never leave the chip: scores, softmax
// and P.V happen per KV tile in registers with an online (running max / running sum) softmax in
// fp32 (Milakov & Gimelshein; FlashAttention).
//
// Biases: bq is added to Q while it is staged (Q is read once). The K bias adds the same
// constant (Q_s . bk) to every logit of row s, which softmax cancels exactly, so it is not applied
// at all. The V bias passes through softmax unchanged because each row of P sums to 1, so it is
// added once to the output. This saves the full extra pass over the QKV buffer that a bias kernel
// (or GEMM epilogue) would cost.
//
// Two kernels, one per storage type (LC0_FP16):
//   flash_attention_f16: tensor cores through mma.h (one warp = 16 query rows), fp32 accumulate.
//   flash_attention_f32: fp32 CUDA-core FMAs (one thread = one query row), for the fp32 backend
//                        whose accuracy target (1e-4) fp16 operands cannot meet.
//
// Run-time parameters (compile defines, chosen by lc0py/backends/gpu/kernels.py + tuning.py):
//   LC0_FA_DEPTH       head depth d (multiple of 16 for f16)
//   LC0_FA_WARPS       warps per block; the block handles 16*WARPS query rows (f16)
//   LC0_FA_KV_TILE     keys per shared-memory tile (multiple of 16)
//   LC0_FA_STAGES      1: load, wait, compute; 2: prefetch tile t+1 while computing tile t
//   LC0_FA_Q_REGS      1: Q fragments stay in registers for all KV tiles; 0: re-read from smem
//                      (fewer registers for large d)
//   LC0_FA_MIN_BLOCKS  occupancy target for __launch_bounds__ (blocks per SM)
//   LC0_FA_BIAS_F32    the bias G is fp32 (else fp16)
//   LC0_FA32_THREADS   (f32) query rows = threads per block
// Grid (both): x = ceil(seq / rows per block), y = heads, z = batch.
#include "common.h"
#include "mma.h"

#ifndef LC0_FA_DEPTH
#error "LC0_FA_DEPTH must be defined"
#endif
#ifndef LC0_FA_WARPS
#define LC0_FA_WARPS 4
#endif
#ifndef LC0_FA_KV_TILE
#define LC0_FA_KV_TILE 64
#endif
#ifndef LC0_FA_STAGES
#define LC0_FA_STAGES 1
#endif
#ifndef LC0_FA_Q_REGS
#define LC0_FA_Q_REGS 1
#endif
#ifndef LC0_FA_MIN_BLOCKS
#define LC0_FA_MIN_BLOCKS 1
#endif
#ifndef LC0_FA_BIAS_F32
#define LC0_FA_BIAS_F32 0
#endif
#ifndef LC0_FA32_THREADS
#define LC0_FA32_THREADS 64
#endif

#if LC0_FA_BIAS_F32
typedef float GT;
#else
typedef f16 GT;
#endif

#if LC0_FP16
// ============================================================================ fp16, mma ======
namespace fa {
constexpr int WARPS = LC0_FA_WARPS;
constexpr int THREADS = WARPS * WARP_SIZE;
constexpr int ROWS = WARPS * 16;  // query rows per block
constexpr int KV = LC0_FA_KV_TILE;
constexpr int DEPTH = LC0_FA_DEPTH;
constexpr int DT = DEPTH / 16;  // 16-wide tiles along d
constexpr int NT = KV / 16;     // 16-wide tiles along the keys
constexpr int STAGES = LC0_FA_STAGES;
// Row pitches padded by 16 bytes: consecutive rows then start in different 16-byte bank groups,
// so the 8 row addresses of one ldmatrix hit 8 distinct groups (no bank conflicts) for every d
// that is a multiple of 16.
constexpr int PQ = DEPTH + 8;                  // f16 elements
constexpr int PG = KV + 16 / (int)sizeof(GT);  // GT elements
constexpr int Q_BYTES = ROWS * PQ * 2;
constexpr int K_BYTES = KV * PQ * 2;
constexpr int G_BYTES = ROWS * PG * (int)sizeof(GT);
constexpr int STAGE_BYTES = 2 * K_BYTES + G_BYTES;
constexpr int SCRATCH_BYTES = WARPS * lc0mma::SCRATCH_ELEMS * 2;
static_assert(DEPTH % 16 == 0, "depth must be a multiple of 16");
static_assert(KV % 16 == 0, "KV tile must be a multiple of 16");
static_assert(STAGES == 1 || STAGES == 2, "1 or 2 stages");
static_assert(Q_BYTES % 16 == 0 && K_BYTES % 16 == 0 && G_BYTES % 16 == 0, "16-byte aligned regions");

// Stage one KV tile (keys kv0 .. kv0+KV-1) of K, V and the bias rows of this block. Rows past
// seq are zero-filled: their logits are masked to -inf and zero V rows keep P.V finite.
LC0_DEVICE void load_kv_tile(f16* ks, f16* vs, GT* gs, const f16* kb, const f16* vb, long long ld,
                             const GT* gb, int seq, int kv0, int q0, bool g_vec) {
    constexpr int CH = DEPTH / 8;  // 16-byte chunks per K/V row
    for (int c = threadIdx.x; c < KV * CH; c += THREADS) {
        const int r = c / CH, col = (c % CH) * 8;
        f16* kd = ks + r * PQ + col;
        f16* vd = vs + r * PQ + col;
        if (kv0 + r < seq) {
            async_copy16(kd, kb + (long long)(kv0 + r) * ld + col);
            async_copy16(vd, vb + (long long)(kv0 + r) * ld + col);
        } else {
            *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
        }
    }
    constexpr int GV = 16 / (int)sizeof(GT);  // bias elements per chunk
    constexpr int GCH = KV / GV;
    if (gb == nullptr) return;
    if (g_vec) {
        for (int c = threadIdx.x; c < ROWS * GCH; c += THREADS) {
            const int r = c / GCH, col = (c % GCH) * GV;
            GT* gd = gs + r * PG + col;
            if (q0 + r < seq && kv0 + col < seq)
                async_copy16(gd, gb + (long long)(q0 + r) * seq + kv0 + col);
            else
                *reinterpret_cast<uint4*>(gd) = make_uint4(0, 0, 0, 0);
        }
    } else {  // seq not a multiple of the vector width: rows are not 16-byte aligned
        for (int c = threadIdx.x; c < ROWS * KV; c += THREADS) {
            const int r = c / KV, col = c % KV;
            GT val;
            if (q0 + r < seq && kv0 + col < seq) val = gb[(long long)(q0 + r) * seq + kv0 + col];
            else store_f32(&val, 0.f);
            gs[r * PG + col] = val;
        }
    }
}
}  // namespace fa

extern "C" __global__ void __launch_bounds__(fa::THREADS, LC0_FA_MIN_BLOCKS)
flash_attention_f16(const f16* LC0_RESTRICT q, const f16* LC0_RESTRICT k, const f16* LC0_RESTRICT v,
                    int ld_qkv, const GT* LC0_RESTRICT g, const f16* LC0_RESTRICT bq,
                    const f16* LC0_RESTRICT bv, f16* LC0_RESTRICT o, int ld_o, int seq, int heads,
                    float scale) {
    using namespace fa;
    extern __shared__ __align__(16) unsigned char smem[];
    f16* qs = reinterpret_cast<f16*>(smem);
    unsigned char* stage0 = smem + Q_BYTES;
    f16* scratch = reinterpret_cast<f16*>(smem + Q_BYTES + STAGES * STAGE_BYTES);

    const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * ROWS;
    const int warp = threadIdx.x / WARP_SIZE;
    const long long ld = ld_qkv;
    const long long tok0 = (long long)b * seq;
    const f16* qb = q + tok0 * ld + h * DEPTH;
    const f16* kb = k + tok0 * ld + h * DEPTH;
    const f16* vb = v + tok0 * ld + h * DEPTH;
    const GT* gb = g ? g + ((long long)b * heads + h) * seq * seq : nullptr;
    const bool g_vec = (seq % (16 / (int)sizeof(GT))) == 0;

    const int n_tiles = (seq + KV - 1) / KV;
    auto stage_ptrs = [&](int s, f16*& ks, f16*& vs, GT*& gs) {
        unsigned char* base = stage0 + s * STAGE_BYTES;
        ks = reinterpret_cast<f16*>(base);
        vs = reinterpret_cast<f16*>(base + K_BYTES);
        gs = reinterpret_cast<GT*>(base + 2 * K_BYTES);
    };
    {
        f16 *ks, *vs;
        GT* gs;
        stage_ptrs(0, ks, vs, gs);
        load_kv_tile(ks, vs, gs, kb, vb, ld, gb, seq, 0, q0, g_vec);
        async_commit();
    }

    // ---- stage Q (+ bias) with plain 16-byte loads while the K/V/G copies above are in flight
    //      (issuing those first overlaps the two memory round trips); rows past seq are zeros ----
    {
        constexpr int CH = DEPTH / 8;
        constexpr int IT = (ROWS * CH + THREADS - 1) / THREADS;
        uint4 u[IT], ub[IT];
#pragma unroll
        for (int it = 0; it < IT; ++it) {  // all loads first: one round trip, not IT
            const int c = threadIdx.x + it * THREADS, r = c / CH, col = (c % CH) * 8;
            u[it] = make_uint4(0, 0, 0, 0);
            ub[it] = make_uint4(0, 0, 0, 0);
            if (c < ROWS * CH && q0 + r < seq) {
                u[it] = *reinterpret_cast<const uint4*>(qb + (long long)(q0 + r) * ld + col);
                if (bq != nullptr) ub[it] = *reinterpret_cast<const uint4*>(bq + h * DEPTH + col);
            }
        }
#pragma unroll
        for (int it = 0; it < IT; ++it) {
            const int c = threadIdx.x + it * THREADS, r = c / CH, col = (c % CH) * 8;
            if (c >= ROWS * CH) continue;
            if (bq != nullptr) {
                f16* e = reinterpret_cast<f16*>(&u[it]);
                const f16* eb = reinterpret_cast<const f16*>(&ub[it]);
#pragma unroll
                for (int i = 0; i < 8; ++i) e[i] = f32_to_f16(f16_to_f32(e[i]) + f16_to_f32(eb[i]));
            }
            *reinterpret_cast<uint4*>(qs + r * PQ + col) = u[it];
        }
    }

    lc0mma::frag_a qa[LC0_FA_Q_REGS ? DT : 1];
    lc0mma::frag_c oacc[DT];
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) lc0mma::zero(oacc[dt]);
    float m_run[lc0mma::C_ROWS], l_run[lc0mma::C_ROWS];
#pragma unroll
    for (int j = 0; j < lc0mma::C_ROWS; ++j) {
        m_run[j] = LC0_NEG_INF;
        l_run[j] = 0.f;
    }
    const float scale_log2 = scale * LC0_LOG2E;
    const f16* qw = qs + warp * 16 * PQ;

    for (int t = 0; t < n_tiles; ++t) {
        if (STAGES == 2 && t + 1 < n_tiles) {
            f16 *ks, *vs;
            GT* gs;
            stage_ptrs((t + 1) % STAGES, ks, vs, gs);
            load_kv_tile(ks, vs, gs, kb, vb, ld, gb, seq, (t + 1) * KV, q0, g_vec);
            async_commit();
            async_wait<1>();
        } else {
            async_wait<0>();
        }
        __syncthreads();
        if (LC0_FA_Q_REGS && t == 0) {
#pragma unroll
            for (int kk = 0; kk < DT; ++kk) lc0mma::load_a(qa[kk % (LC0_FA_Q_REGS ? DT : 1)], qw + kk * 16, PQ);
        }
        f16 *ks, *vs;
        GT* gs;
        stage_ptrs(t % STAGES, ks, vs, gs);
        const int kv0 = t * KV;

        // ---- S = Q K^T for this warp's 16 rows x KV keys ----
        lc0mma::frag_c s[NT];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            lc0mma::zero(s[nt]);
#pragma unroll
            for (int kk = 0; kk < DT; ++kk) {
                lc0mma::frag_b bfr;
                lc0mma::load_b_t(bfr, ks + nt * 16 * PQ + kk * 16, PQ);
                if (LC0_FA_Q_REGS) {
                    lc0mma::mma(s[nt], qa[kk % (LC0_FA_Q_REGS ? DT : 1)], bfr);
                } else {
                    lc0mma::frag_a afr;
                    lc0mma::load_a(afr, qw + kk * 16, PQ);
                    lc0mma::mma(s[nt], afr, bfr);
                }
            }
        }

        // ---- scale, bias, mask; per-row running max (log2 domain) ----
        float m_tile[lc0mma::C_ROWS];
#pragma unroll
        for (int j = 0; j < lc0mma::C_ROWS; ++j) m_tile[j] = LC0_NEG_INF;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int i = 0; i < lc0mma::C_ELEMS; ++i) {
                const int col = nt * 16 + lc0mma::c_col(i);
                float x = s[nt].x[i] * scale_log2;
                if (gb != nullptr) x += to_f32(gs[(warp * 16 + lc0mma::c_row(i)) * PG + col]) * LC0_LOG2E;
                if (kv0 + col >= seq) x = LC0_NEG_INF;
                s[nt].x[i] = x;
                const int sl = lc0mma::c_slot(i);
                m_tile[sl] = fmaxf(m_tile[sl], x);
            }
        }
        float corr[lc0mma::C_ROWS];
#pragma unroll
        for (int j = 0; j < lc0mma::C_ROWS; ++j) {
            const float mt = lc0mma::row_max(m_tile[j]);
            const float m_new = fmaxf(m_run[j], mt);  // finite: tile 0 always has key 0
            corr[j] = lc0_exp2(m_run[j] - m_new);     // exp2(-inf) = 0 on the first tile
            m_run[j] = m_new;
            l_run[j] *= corr[j];
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int i = 0; i < lc0mma::C_ELEMS; ++i) {
                const int sl = lc0mma::c_slot(i);
                const float p = lc0_exp2(s[nt].x[i] - m_run[sl]);
                s[nt].x[i] = p;
                l_run[sl] += p;  // this lane's partial row sum; reduced across lanes at the end
            }
        }
#pragma unroll
        for (int dt = 0; dt < DT; ++dt)
#pragma unroll
            for (int i = 0; i < lc0mma::C_ELEMS; ++i) oacc[dt].x[i] *= corr[lc0mma::c_slot(i)];

        // ---- O += P V ----
#pragma unroll
        for (int kt = 0; kt < NT; ++kt) {
            lc0mma::frag_a pa;
            lc0mma::a_from_c(pa, s[kt], scratch + warp * lc0mma::SCRATCH_ELEMS);
#pragma unroll
            for (int dt = 0; dt < DT; ++dt) {
                lc0mma::frag_b bfr;
                lc0mma::load_b(bfr, vs + kt * 16 * PQ + dt * 16, PQ);
                lc0mma::mma(oacc[dt], pa, bfr);
            }
        }
        __syncthreads();  // this stage's buffers are overwritten next
    }

    // ---- normalise, add the V bias, stage the warp's 16 rows in its Q rows, store 16 B wide ----
    float inv[lc0mma::C_ROWS];
#pragma unroll
    for (int j = 0; j < lc0mma::C_ROWS; ++j) inv[j] = 1.f / lc0mma::row_sum(l_run[j]);
    f16* ow = qs + warp * 16 * PQ;  // only this warp ever reads these rows
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
#pragma unroll
        for (int i = 0; i < lc0mma::C_ELEMS; ++i) {
            const int col = dt * 16 + lc0mma::c_col(i);
            float val = oacc[dt].x[i] * inv[lc0mma::c_slot(i)];
            if (bv != nullptr) val += f16_to_f32(bv[h * DEPTH + col]);
            ow[lc0mma::c_row(i) * PQ + col] = f32_to_f16(val);
        }
    }
    warp_sync();
    {
        constexpr int CH = DEPTH / 8;
        const int lane = threadIdx.x % WARP_SIZE;
        f16* ob = o + tok0 * (long long)ld_o + h * DEPTH;
        for (int c = lane; c < 16 * CH; c += WARP_SIZE) {
            const int r = c / CH, col = (c % CH) * 8;
            const int row = q0 + warp * 16 + r;
            if (row < seq)
                *reinterpret_cast<uint4*>(ob + (long long)row * ld_o + col) =
                    *reinterpret_cast<const uint4*>(ow + r * PQ + col);
        }
    }
}

#else
// ============================================================================ fp32, SIMT =====
namespace fa32 {
constexpr int THREADS = LC0_FA32_THREADS;
constexpr int DEPTH = LC0_FA_DEPTH;
constexpr int KV = LC0_FA_KV_TILE;
constexpr int PQ = DEPTH + 1;  // odd pitch: thread r reads its own Q row without bank conflicts
constexpr int PG = KV + 1;
}  // namespace fa32

extern "C" __global__ void __launch_bounds__(fa32::THREADS, LC0_FA_MIN_BLOCKS)
flash_attention_f32(const float* LC0_RESTRICT q, const float* LC0_RESTRICT k, const float* LC0_RESTRICT v,
                    int ld_qkv, const GT* LC0_RESTRICT g, const float* LC0_RESTRICT bq,
                    const float* LC0_RESTRICT bv, float* LC0_RESTRICT o, int ld_o, int seq, int heads,
                    float scale) {
    using namespace fa32;
    extern __shared__ __align__(16) unsigned char smem[];
    float* qs = reinterpret_cast<float*>(smem);  // [THREADS][PQ], pre-scaled
    float* ks = qs + THREADS * PQ;                // [KV][DEPTH] (read as broadcasts)
    float* vs = ks + KV * DEPTH;                  // [KV][DEPTH]
    float* gs = vs + KV * DEPTH;                  // [THREADS][PG]

    const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * THREADS;
    const int r = threadIdx.x;
    const long long ld = ld_qkv;
    const long long tok0 = (long long)b * seq;
    const GT* gb = g ? g + ((long long)b * heads + h) * seq * seq : nullptr;

    for (int c = threadIdx.x; c < THREADS * DEPTH; c += THREADS) {
        const int rr = c / DEPTH, j = c % DEPTH;
        float x = 0.f;
        if (q0 + rr < seq) {
            x = q[(tok0 + q0 + rr) * ld + h * DEPTH + j];
            if (bq != nullptr) x += bq[h * DEPTH + j];
        }
        qs[rr * PQ + j] = x * scale;
    }
    float acc[DEPTH];
#pragma unroll
    for (int j = 0; j < DEPTH; ++j) acc[j] = 0.f;
    float m_run = LC0_NEG_INF, l_run = 0.f;

    for (int kv0 = 0; kv0 < seq; kv0 += KV) {
        __syncthreads();  // previous tile fully consumed (and Q staged on the first pass)
        for (int c = threadIdx.x; c < KV * DEPTH; c += THREADS) {
            const int t = c / DEPTH, j = c % DEPTH;
            const bool in = kv0 + t < seq;
            ks[c] = in ? k[(tok0 + kv0 + t) * ld + h * DEPTH + j] : 0.f;
            vs[c] = in ? v[(tok0 + kv0 + t) * ld + h * DEPTH + j] : 0.f;
        }
        for (int c = threadIdx.x; c < THREADS * KV; c += THREADS) {
            const int rr = c / KV, t = c % KV;
            float x = 0.f;
            if (gb != nullptr && q0 + rr < seq && kv0 + t < seq) x = to_f32(gb[(long long)(q0 + rr) * seq + kv0 + t]);
            gs[rr * PG + t] = x;
        }
        __syncthreads();
        const int n = min(KV, seq - kv0);
        for (int t = 0; t < n; ++t) {
            float s = gs[r * PG + t];
#pragma unroll
            for (int j = 0; j < DEPTH; ++j) s += qs[r * PQ + j] * ks[t * DEPTH + j];
            if (s > m_run) {  // rescale what was accumulated under the old maximum
                const float corr = expf(m_run - s);
                l_run *= corr;
#pragma unroll
                for (int j = 0; j < DEPTH; ++j) acc[j] *= corr;
                m_run = s;
            }
            const float p = expf(s - m_run);
            l_run += p;
#pragma unroll
            for (int j = 0; j < DEPTH; ++j) acc[j] += p * vs[t * DEPTH + j];
        }
    }
    if (q0 + r < seq) {
        const float inv = 1.f / l_run;
        float* orow = o + (tok0 + q0 + r) * (long long)ld_o + h * DEPTH;
#pragma unroll
        for (int j = 0; j < DEPTH; ++j) orow[j] = acc[j] * inv + (bv != nullptr ? bv[h * DEPTH + j] : 0.f);
    }
}
#endif
