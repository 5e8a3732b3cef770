// flash_attention.hip -- fused multi-head attention on lc0's interleaved layout:
//
//   O[b, s, h*d + j] = sum_t softmax_t( (Q_bh[s].K_bh[t]) * scale + G[b, h, s, t] ) * V_bh[t][j]
//
// The bias G arrives multiplied by log2(e) (the smolgen weights are uploaded pre-scaled) and the
// softmax is computed with exp2 throughout.
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
//   LC0_FA_STAGES      1: load, wait, compute; S >= 2: S shared-memory stages, the copies of work
//                      items i+1 .. i+S-1 are in flight while item i is computed
//   LC0_FA_Q_REGS      1: Q fragments stay in registers for all KV tiles; 0: re-read from smem
//                      (fewer registers for large d)
//   LC0_FA_MIN_BLOCKS  occupancy target for __launch_bounds__ (blocks per SM)
//   LC0_FA_HEADS       heads one block processes in turn (with 2 stages, head j+1 is copied
//                      while head j is computed); grid y = ceil(heads / LC0_FA_HEADS)
//   LC0_FA_BIAS_F32    the bias G is fp32 (else fp16)
//   LC0_FA32_THREADS   (f32) query rows = threads per block
//   LC0_FA_GENERAL     0: the chess entry flash_attention_f16 (interleaved [B, seq, *] rows, one
//                      seq, pre-scaled bias, Q/V biases); 1: the general entry attention_f16 of
//                      lc0py.attention (f16 only): any strides per batch/head/row (interleaved
//                      or [B, H, S, d]), query length != key length, grouped-query heads (K/V
//                      head = h / group), bias [B|1, H|1, Lq, Lk] in natural-log units (a boolean
//                      mask arrives as a 0 / -inf bias), rows with no allowed key give 0
//   LC0_FA_CAUSAL      (general) key j is allowed for query row i iff j <= i (top-left, as
//                      PyTorch's is_causal); tiles past the block's last row are not visited
//   LC0_FA_PERSIST     1: the chess entry flash_attention_persistent_f16 ("flash=v2"): a grid of
//                      about (SMs x LC0_FA_MIN_BLOCKS) blocks, each walking its share of the
//                      B*H (position, head) pairs, with the stage ring running across pairs: the
//                      copies of pair n+1 (Q, K, V, bias) are in flight while pair n is computed,
//                      and no block is launched or retired per head. Why: at seq = 64 a pair is
//                      ~20-60 KB of loads and ~1 us of math, so the one-shot blocks of
//                      LC0_FA_PERSIST=0 (load, wait, compute, store, exit; 6144 of them at batch
//                      256 x 24 heads) leave the memory pipe idle while they compute, launch and
//                      drain, plus a partial last wave.
//   LC0_FA_INTERLEAVE  (persistent) 1: block y takes pairs y, y+Y, y+2Y, ... (head fastest), so the
//                      blocks in step read the neighbouring heads of the same positions at once --
//                      whole token rows of Q/K/V, whole rows of O, as the one-shot grid's
//                      concurrent blocks do (DRAM pages and L2 lines shared by heads h and h+1
//                      are fetched once, together); 0: the contiguous range [y*B*H/Y, (y+1)*B*H/Y)
//                      (consecutive pairs of one block read the neighbouring 64-byte column
//                      pieces of the same rows, but the blocks in step are on far-apart positions)
//   LC0_FA_DESCEND     (persistent) 1: walk the pairs from the last position down. In the forward
//                      pass the smolgen GEMM writes the bias just before this kernel; the part it
//                      wrote last is the part most likely still in L2, so it is read first, before
//                      the kernel's own misses evict it (0: from position 0 up)
//   LC0_FA_COPY_ORDER  0: a Q/K/V tile's 16-byte chunks go to the threads row by row (the chunks of
//                      a row to neighbouring lanes); 1: at head depths below 64, the 8 neighbouring
//                      lanes take one chunk each of 8 rows. A shared-memory store of 16 bytes a lane
//                      is served 8 lanes at a time: with the padded pitch of DEPTH + 8 elements and
//                      4 chunks a row (d = 32), row order puts two of those 8 chunks on the same
//                      banks, column order none. Depth >= 64 is conflict-free in row order (kept)
//   LC0_FA_SHAPE_SEQ, LC0_FA_SHAPE_HEADS, LC0_FA_SHAPE_LD_QKV, LC0_FA_SHAPE_LD_O
//                      (chess entries, optional, all four together) the net's sequence length,
//                      heads and row strides as compile-time constants; the launch passes the
//                      same numbers (see LC0_FA_SHAPE_CONSTANTS below)
// Both entries share one body (attention_body); the defines of the chess path compile to the
// same code as before the general entry existed. Shared memory is Q rows + STAGES x (K, V, bias
// tile): it does not grow with the sequence length (K/V are streamed tile by tile).
// Grid: x = ceil(seq / rows per block), y = heads (f16: ceil(heads / LC0_FA_HEADS)), z = batch;
// persistent: x the same, y = the persistent blocks, z = 1.
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
#ifndef LC0_FA_HEADS
#define LC0_FA_HEADS 1
#endif
#ifndef LC0_FA32_THREADS
#define LC0_FA32_THREADS 64
#endif
// Layout facts the host mirrors (lc0py/backends/gpu/tuning.py FlashParams.shared_bytes and
// DeviceInfo.mma_scratch_elems): passed in and checked below, so Python and kernel cannot drift.
#ifndef LC0_FA_SMEM_BYTES
#error "LC0_FA_SMEM_BYTES (the host's dynamic shared-memory size for this kernel) must be defined"
#endif
#ifndef LC0_FA_SCRATCH_ELEMS
#error "LC0_FA_SCRATCH_ELEMS (the host's per-warp mma scratch, fp16 elements) must be defined"
#endif
#ifndef LC0_FA_GENERAL
#define LC0_FA_GENERAL 0
#endif
#ifndef LC0_FA_CAUSAL
#define LC0_FA_CAUSAL 0
#endif
#ifndef LC0_FA_PERSIST
#define LC0_FA_PERSIST 0
#endif
#ifndef LC0_FA_INTERLEAVE
#define LC0_FA_INTERLEAVE 1
#endif
#ifndef LC0_FA_DESCEND
#define LC0_FA_DESCEND 0
#endif
#ifndef LC0_FA_COPY_ORDER
#define LC0_FA_COPY_ORDER 0
#endif
#if LC0_FA_PERSIST && LC0_FA_GENERAL
#error "LC0_FA_PERSIST is the chess entry's variant; the general entry (LC0_FA_GENERAL) has its own grid"
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
constexpr int HEADS = LC0_FA_HEADS;               // heads one block walks through
constexpr bool PERSIST = LC0_FA_PERSIST;          // block walks a range of (position, head) pairs
// Q rows of the heads that are in flight: with S stages the copies run up to S-1 items (so up
// to S-1 heads) ahead of the one being computed.
constexpr int Q_BUFS = (HEADS > 1 || PERSIST) ? (STAGES > 2 ? STAGES : 2) : 1;
static_assert(DEPTH % 16 == 0, "depth must be a multiple of 16");
static_assert(KV % 16 == 0, "KV tile must be a multiple of 16");
static_assert(STAGES >= 1 && STAGES <= 8, "1 to 8 stages");
static_assert(Q_BYTES % 16 == 0 && K_BYTES % 16 == 0 && G_BYTES % 16 == 0, "16-byte aligned regions");
static_assert(lc0mma::SCRATCH_ELEMS == LC0_FA_SCRATCH_ELEMS,
              "host's mma scratch per warp (DeviceInfo.mma_scratch_elems) differs from mma.h's");
static_assert(Q_BUFS * Q_BYTES + STAGES * STAGE_BYTES + SCRATCH_BYTES == LC0_FA_SMEM_BYTES,
              "host's shared-memory size (FlashParams.shared_bytes) differs from the kernel's layout");

// The chunk loops below give thread threadIdx.x the chunks c = threadIdx.x + it * THREADS of [0, N)
// with a compile-time trip count (every launch of these kernels has THREADS threads a block), so
// they unroll and their index arithmetic folds; N % THREADS == 0 drops the bound test.
template <int N>
constexpr int chunk_iters() { return (N + THREADS - 1) / THREADS; }
template <int N>
LC0_DEVICE bool chunk_live(int c) { return N % THREADS == 0 || c < N; }

// Chunk c of a Q/K/V tile (rows x CH 16-byte chunks, rows a multiple of 8) -> its row and column
// (LC0_FA_COPY_ORDER above): row order, or one chunk of 8 rows for 8 neighbouring c.
constexpr int CH_QKV = DEPTH / 8;
constexpr bool BY_COLUMN = LC0_FA_COPY_ORDER && CH_QKV < 8;
static_assert(!BY_COLUMN || (KV % 8 == 0 && ROWS % 8 == 0), "column order needs tiles of whole 8-row groups");
LC0_DEVICE int chunk_row(int c) { return BY_COLUMN ? (c / (8 * CH_QKV)) * 8 + c % 8 : c / CH_QKV; }
LC0_DEVICE int chunk_col(int c) { return BY_COLUMN ? (c / 8) % CH_QKV : c % CH_QKV; }

// Stage one KV tile (keys kv0 .. kv0+KV-1) of K, V and the bias rows of this block. Rows past
// seq are zero-filled: their logits are masked to -inf and zero V rows keep P.V finite.
LC0_DEVICE void load_kv_tile(f16* ks, f16* vs, GT* gs, const f16* kb, const f16* vb, long long ld,
                             const GT* gb, int q_len, int seq, int kv0, int q0, bool g_vec) {
    constexpr int CH = DEPTH / 8;  // 16-byte chunks per K/V row
#pragma unroll
    for (int it = 0; it < chunk_iters<KV * CH>(); ++it) {
        const int c = (int)threadIdx.x + it * THREADS;
        if (!chunk_live<KV * CH>(c)) break;
        const int r = chunk_row(c), col = chunk_col(c) * 8;
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
#pragma unroll
        for (int it = 0; it < chunk_iters<ROWS * GCH>(); ++it) {
            const int c = (int)threadIdx.x + it * THREADS;
            if (!chunk_live<ROWS * GCH>(c)) break;
            const int r = c / GCH, col = (c % GCH) * GV;
            GT* gd = gs + r * PG + col;
            if (q0 + r < q_len && kv0 + col < seq)
                async_copy16(gd, gb + (long long)(q0 + r) * seq + kv0 + col);
            else
                *reinterpret_cast<uint4*>(gd) = make_uint4(0, 0, 0, 0);
        }
    } else {  // seq not a multiple of the vector width: rows are not 16-byte aligned
        for (int c = threadIdx.x; c < ROWS * KV; c += THREADS) {
            const int r = c / KV, col = c % KV;
            GT val;
            if (q0 + r < q_len && kv0 + col < seq) val = gb[(long long)(q0 + r) * seq + kv0 + col];
            else store_f32(&val, 0.f);
            gs[r * PG + col] = val;
        }
    }
}

// Stage this block's Q rows of one head as raw 16-byte copies (the bias is added in shared
// memory once they have landed, by the thread that copied each chunk).
LC0_DEVICE void load_q_tile(f16* qs, const f16* qb, long long ld, int seq, int q0) {
    constexpr int CH = DEPTH / 8;
#pragma unroll
    for (int it = 0; it < chunk_iters<ROWS * CH>(); ++it) {
        const int c = (int)threadIdx.x + it * THREADS;
        if (!chunk_live<ROWS * CH>(c)) break;
        const int r = chunk_row(c), col = chunk_col(c) * 8;
        f16* d = qs + r * PQ + col;
        if (q0 + r < seq) async_copy16(d, qb + (long long)(q0 + r) * ld + col);
        else *reinterpret_cast<uint4*>(d) = make_uint4(0, 0, 0, 0);
    }
}
// When every Q chunk of a thread is in the same column (row order: THREADS a multiple of the chunks
// per row; column order: THREADS / 8 a multiple), its one bias chunk (BQ_ONE: `pre`, loaded before
// the wait for the copies) serves them all.
constexpr bool BQ_ONE = BY_COLUMN ? (THREADS / 8) % CH_QKV == 0 : THREADS % CH_QKV == 0;
LC0_DEVICE uint4 q_bias_chunk(const f16* bqh) {
    return BQ_ONE ? *reinterpret_cast<const uint4*>(bqh + chunk_col((int)threadIdx.x) * 8) : make_uint4(0, 0, 0, 0);
}
LC0_DEVICE void add_q_bias(f16* qs, const f16* bqh, int seq, int q0, uint4 pre) {
    constexpr int CH = DEPTH / 8;
#pragma unroll
    for (int it = 0; it < chunk_iters<ROWS * CH>(); ++it) {  // same chunks as load_q_tile
        const int c = (int)threadIdx.x + it * THREADS;
        if (!chunk_live<ROWS * CH>(c)) break;
        const int r = chunk_row(c), col = chunk_col(c) * 8;
        if (q0 + r >= seq) continue;
        uint4 u = *reinterpret_cast<const uint4*>(qs + r * PQ + col);
        const uint4 ub = BQ_ONE ? pre : *reinterpret_cast<const uint4*>(bqh + col);
        f16* e = reinterpret_cast<f16*>(&u);
        const f16* eb = reinterpret_cast<const f16*>(&ub);
#pragma unroll
        for (int i = 0; i < 8; ++i) e[i] = f32_to_f16(f16_to_f32(e[i]) + f16_to_f32(eb[i]));
        *reinterpret_cast<uint4*>(qs + r * PQ + col) = u;
    }
}

// Where one block's data lives. Strides are in elements: per batch, per head, per row (K and V
// share theirs); the bias G has rows of kv_len elements and per-batch / per-head strides (0 =
// broadcast). group = query heads per K/V head (1 = plain multi-head attention).
struct Args {
    const f16* q;
    const f16* k;
    const f16* v;
    f16* o;
    long long q_b, q_h, k_b, k_h, o_b, o_h, g_b, g_h;
    int q_s, k_s, o_s;
    const GT* g;
    const f16* bq;
    const f16* bv;
    int q_len, kv_len, heads, group;
    float scale;
    int batch;  // persistent entry: positions (the grid does not say)
};
}  // namespace fa

// The block walks a list of work items (head j of its LC0_FA_HEADS heads, KV tile t). With 2
// stages, item i+1 (its K/V/G tile, and the Q rows when it starts a new head) is copied while
// item i is computed, so one block overlaps a head's memory latency with the previous head's
// math instead of relying only on other blocks of the SM for that.
LC0_DEVICE void attention_body(const fa::Args& a) {
    using namespace fa;
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned char* stage0 = smem + Q_BUFS * Q_BYTES;
    f16* scratch = reinterpret_cast<f16*>(smem + Q_BUFS * Q_BYTES + STAGES * STAGE_BYTES);

    const f16* LC0_RESTRICT q = a.q;
    const f16* LC0_RESTRICT k = a.k;
    const f16* LC0_RESTRICT v = a.v;
    const GT* LC0_RESTRICT g = a.g;
    const f16* LC0_RESTRICT bq = a.bq;
    const f16* LC0_RESTRICT bv = a.bv;
    const int seq = a.kv_len;  // keys
    const int q_len = a.q_len;
    const int q0 = q_len <= ROWS ? 0 : (int)blockIdx.x * ROWS;  // one row block: grid x is 1
#if LC0_FA_PERSIST
    // This block's (position, head) pairs, a balanced share of B*H (LC0_FA_INTERLEAVE above):
    // pair j of the block is bh0 + j*step, head fastest.
    const long long pairs = (long long)a.batch * a.heads;
#if LC0_FA_INTERLEAVE
    const int bh0 = (int)blockIdx.y, step = (int)gridDim.y;
    const int n_heads = bh0 < pairs ? (int)((pairs - 1 - bh0) / step) + 1 : 0;
#else
    const int bh0 = (int)(pairs * blockIdx.y / gridDim.y), step = 1;
    const int n_heads = (int)(pairs * (blockIdx.y + 1) / gridDim.y) - bh0;
#endif
    auto pair = [&](int j) {
        const int p = bh0 + j * step;
        return LC0_FA_DESCEND ? (int)(pairs - 1 - p) : p;
    };
    auto pair_b = [&](int j) { return pair(j) / a.heads; };
    auto pair_h = [&](int j) { return pair(j) % a.heads; };
#else
    const int b0 = blockIdx.z, h0 = blockIdx.y * HEADS;
    const int n_heads = min(HEADS, a.heads - h0);
    auto pair_b = [&](int) { return b0; };
    auto pair_h = [&](int j) { return h0 + j; };
#endif
    const int warp = threadIdx.x / WARP_SIZE;
    const bool g_vec = (seq % (16 / (int)sizeof(GT))) == 0;
#if LC0_FA_CAUSAL
    const int n_tiles = (min(seq, q0 + ROWS) + KV - 1) / KV;  // later tiles are masked for every row
#else
    const int n_tiles = (seq + KV - 1) / KV;
#endif
    const int n_items = n_heads * n_tiles;
#if LC0_FA_PERSIST
    if (n_items <= 0) return;  // a block with no pair (more blocks than pairs): uniform, before any barrier
#endif
    const float scale_log2 = a.scale * LC0_LOG2E;
    // chess: G is uploaded pre-multiplied by log2(e); general: natural-log units, scaled here
    constexpr float G_SCALE = LC0_FA_GENERAL ? LC0_LOG2E : 1.f;

    auto q_buf = [&](int j) { return reinterpret_cast<f16*>(smem + (j % Q_BUFS) * Q_BYTES); };
    auto issue = [&](int i) {  // start the copies of work item i into stage i % STAGES
        const int j = i / n_tiles, t = i % n_tiles, b = pair_b(j), h = pair_h(j), hk = h / a.group;
        unsigned char* base = stage0 + (i % STAGES) * STAGE_BYTES;
        const GT* gb = g ? g + (long long)b * a.g_b + (long long)h * a.g_h : nullptr;
        const long long kvo = (long long)b * a.k_b + (long long)hk * a.k_h;
        load_kv_tile(reinterpret_cast<f16*>(base), reinterpret_cast<f16*>(base + K_BYTES),
                     reinterpret_cast<GT*>(base + 2 * K_BYTES), k + kvo, v + kvo, a.k_s, gb, q_len, seq,
                     t * KV, q0, g_vec);
        if (t == 0) load_q_tile(q_buf(j), q + (long long)b * a.q_b + (long long)h * a.q_h, a.q_s, q_len, q0);
        async_commit();
    };

    lc0mma::frag_a qa[LC0_FA_Q_REGS ? DT : 1];
    lc0mma::frag_c oacc[DT];
    float m_run[lc0mma::C_ROWS], l_run[lc0mma::C_ROWS];
    issue(0);
#pragma unroll
    for (int p = 1; p < STAGES - 1; ++p)  // prologue: items 1 .. S-2 (one commit group each)
        if (p < n_items) issue(p);
        else async_commit();

    for (int i = 0; i < n_items; ++i) {
        const int j = i / n_tiles, t = i % n_tiles, b = pair_b(j), h = pair_h(j);
        // the Q bias chunk is read now, so its latency overlaps the wait for the copies below
        const uint4 bq_pre = (t == 0 && bq != nullptr) ? q_bias_chunk(bq + h * DEPTH) : make_uint4(0, 0, 0, 0);
        if (STAGES == 2 && i + 1 < n_items) {
            issue(i + 1);
            async_wait<1>();  // item i's group has landed (item i+1's may still be in flight)
        } else if (STAGES > 2) {
            // Item i+S-1 goes to the stage item i-1 used (released by the barrier that ended it);
            // past the end an empty group keeps the count uniform, so "at most S-1 groups
            // pending" always means item i has landed.
            if (i + STAGES - 1 < n_items) issue(i + STAGES - 1);
            else async_commit();
            async_wait<(STAGES > 2 ? STAGES - 1 : 0)>();
        } else {
            // 1 stage: nothing to overlap with, the next item is issued after this one is
            // consumed; 2 stages on the last item: nothing left to prefetch
            async_wait<0>();
        }
        f16* qs = q_buf(j);
        if (t == 0 && bq != nullptr) add_q_bias(qs, bq + h * DEPTH, q_len, q0, bq_pre);  // own chunks: no barrier needed
        __syncthreads();
        const f16* qw = qs + warp * 16 * PQ;
        if (t == 0) {
#pragma unroll
            for (int dt = 0; dt < DT; ++dt) lc0mma::zero(oacc[dt]);
#pragma unroll
            for (int jj = 0; jj < lc0mma::C_ROWS; ++jj) {
                m_run[jj] = LC0_NEG_INF;
                l_run[jj] = 0.f;
            }
            if (LC0_FA_Q_REGS) {
#pragma unroll
                for (int kk = 0; kk < DT; ++kk) lc0mma::load_a(qa[kk % (LC0_FA_Q_REGS ? DT : 1)], qw + kk * 16, PQ);
            }
        }
        unsigned char* base = stage0 + (i % STAGES) * STAGE_BYTES;
        const f16* ks = reinterpret_cast<const f16*>(base);
        const f16* vs = reinterpret_cast<const f16*>(base + K_BYTES);
        const GT* gs = reinterpret_cast<const GT*>(base + 2 * K_BYTES);
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
        for (int jj = 0; jj < lc0mma::C_ROWS; ++jj) m_tile[jj] = LC0_NEG_INF;
        // G arrives pre-multiplied by log2(e) (smolgen_w is scaled at upload), so each logit is
        // one FMA. Where the mma layout puts elements e, e+1 in adjacent columns of one row
        // (C_PAIRS), the two fp16 biases are one 32-bit shared load. Masking is only needed on
        // a tile that runs past seq (never at seq = 64).
        const bool has_g = g != nullptr;
        const bool partial = kv0 + KV > seq;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int e = 0; e < lc0mma::C_ELEMS; ++e) {
                const int col = nt * 16 + lc0mma::c_col(e);
                float x;
                if (has_g && lc0mma::C_PAIRS && sizeof(GT) == 2) {
                    if ((e & 1) == 0) {
                        const u32 two = *reinterpret_cast<const u32*>(gs + (warp * 16 + lc0mma::c_row(e)) * PG + col);
                        x = s[nt].x[e] * scale_log2 + G_SCALE * f16_to_f32(f16{(u16)(two & 0xffffu)});
                        s[nt].x[e + 1] = s[nt].x[e + 1] * scale_log2 + G_SCALE * f16_to_f32(f16{(u16)(two >> 16)});
                    } else {
                        x = s[nt].x[e];  // biased together with its even partner
                    }
                } else {
                    x = s[nt].x[e] * scale_log2;
                    if (has_g) x += G_SCALE * to_f32(gs[(warp * 16 + lc0mma::c_row(e)) * PG + col]);
                }
                if (partial && kv0 + col >= seq) x = LC0_NEG_INF;
#if LC0_FA_CAUSAL
                if (kv0 + col > q0 + warp * 16 + lc0mma::c_row(e)) x = LC0_NEG_INF;
#endif
                s[nt].x[e] = x;
                const int sl = lc0mma::c_slot(e);
                m_tile[sl] = fmaxf(m_tile[sl], x);
            }
        }
        float corr[lc0mma::C_ROWS];
#pragma unroll
        for (int jj = 0; jj < lc0mma::C_ROWS; ++jj) {
            const float mt = lc0mma::row_max(m_tile[jj]);
#if LC0_FA_GENERAL
            // a mask may hide every key of a row so far: keep exp2's argument finite (p = 0)
            const float m_new = fmaxf(fmaxf(m_run[jj], mt), -1e30f);
#else
            const float m_new = fmaxf(m_run[jj], mt);  // finite: tile 0 always has key 0
#endif
            corr[jj] = lc0_exp2(m_run[jj] - m_new);     // exp2(-inf) = 0 on the first tile
            m_run[jj] = m_new;
            l_run[jj] *= corr[jj];
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int e = 0; e < lc0mma::C_ELEMS; ++e) {
                const int sl = lc0mma::c_slot(e);
                const float p = lc0_exp2(s[nt].x[e] - m_run[sl]);
                s[nt].x[e] = p;
                l_run[sl] += p;  // this lane's partial row sum; reduced across lanes at the end
            }
        }
#pragma unroll
        for (int dt = 0; dt < DT; ++dt)
#pragma unroll
            for (int e = 0; e < lc0mma::C_ELEMS; ++e) oacc[dt].x[e] *= corr[lc0mma::c_slot(e)];

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

        if (t == n_tiles - 1) {
            // ---- normalise, add the V bias, stage the warp's 16 rows in its own Q rows (no
            //      other warp reads them), store 16 bytes wide ----
            float inv[lc0mma::C_ROWS];
#pragma unroll
            for (int jj = 0; jj < lc0mma::C_ROWS; ++jj) {
                const float l = lc0mma::row_sum(l_run[jj]);
#if LC0_FA_GENERAL
                inv[jj] = l > 0.f ? 1.f / l : 0.f;  // a row with no allowed key: output 0
#else
                inv[jj] = 1.f / l;
#endif
            }
            f16* ow = qs + warp * 16 * PQ;
            warp_sync();  // every lane is done reading its Q rows (Q_REGS = 0 re-reads them)
#pragma unroll
            for (int dt = 0; dt < DT; ++dt) {
#pragma unroll
                for (int e = 0; e < lc0mma::C_ELEMS; ++e) {
                    const int col = dt * 16 + lc0mma::c_col(e);
                    float val = oacc[dt].x[e] * inv[lc0mma::c_slot(e)];
                    if (bv != nullptr) {
                        if (lc0mma::C_PAIRS) {  // elements e, e+1: adjacent columns, one 32-bit load
                            const u32 two = *reinterpret_cast<const u32*>(bv + h * DEPTH + (col & ~1));
                            val += f16_to_f32(f16{(u16)((e & 1) ? (two >> 16) : (two & 0xffffu))});
                        } else {
                            val += f16_to_f32(bv[h * DEPTH + col]);
                        }
                    }
                    ow[lc0mma::c_row(e) * PQ + col] = f32_to_f16(val);
                }
            }
            warp_sync();
            constexpr int CH = DEPTH / 8;
            const int lane = threadIdx.x % WARP_SIZE;
            f16* ob = a.o + (long long)b * a.o_b + (long long)h * a.o_h;
            for (int c = lane; c < 16 * CH; c += WARP_SIZE) {
                const int r = c / CH, col = (c % CH) * 8;
                const int row = q0 + warp * 16 + r;
                if (row < q_len)
                    *reinterpret_cast<uint4*>(ob + (long long)row * a.o_s + col) =
                        *reinterpret_cast<const uint4*>(ow + r * PQ + col);
            }
        }
        __syncthreads();  // this item's stage (and, on a head's last tile, its Q rows) is reused next
        if (STAGES == 1 && i + 1 < n_items) issue(i + 1);
    }
}

// The chess entries' shape as compile-time constants (LC0_FA_SHAPE_SEQ, _HEADS, _LD_QKV, _LD_O: the
// host compiles the kernel for its net, kernels.flash_shape_defines): the arguments it launches with
// are the same numbers, and as constants the pair -> (position, head) divisions, the strides and
// every bound test of the copies fold away (in the persistent kernel on T82, issuing a pair's
// copies took ~420 of the ~1,200 instructions a warp executed per pair, Nsight Compute on an
// H200). Without them the arguments are used as passed.
#if defined(LC0_FA_SHAPE_SEQ) && !LC0_FA_GENERAL
#define LC0_FA_SHAPE_CONSTANTS()       \
    do {                               \
        seq = LC0_FA_SHAPE_SEQ;        \
        heads = LC0_FA_SHAPE_HEADS;    \
        ld_qkv = LC0_FA_SHAPE_LD_QKV;  \
        ld_o = LC0_FA_SHAPE_LD_O;      \
    } while (0)
#else
#define LC0_FA_SHAPE_CONSTANTS() \
    do {                         \
    } while (0)
#endif

#if LC0_FA_GENERAL
// lc0py.attention: O[b, h] = softmax(Q[b, h] K[b, h/group]^T * scale + bias[b, h]) V[b, h/group],
// strides per (batch, head, row) for q / k+v / o; g_b, g_h = bias strides (0 = broadcast).
extern "C" __global__ void __launch_bounds__(fa::THREADS, LC0_FA_MIN_BLOCKS)
attention_f16(const f16* LC0_RESTRICT q, const f16* LC0_RESTRICT k, const f16* LC0_RESTRICT v,
              f16* LC0_RESTRICT o, long long q_b, long long q_h, int q_s, long long k_b, long long k_h,
              int k_s, long long o_b, long long o_h, int o_s, const GT* LC0_RESTRICT g, long long g_b,
              long long g_h, int q_len, int kv_len, int heads, int group, float scale) {
    lc0_grid_dependency_sync();
    const fa::Args a{q, k, v, o, q_b, q_h, k_b, k_h, o_b, o_h, g_b, g_h, q_s, k_s, o_s,
                     g, nullptr, nullptr, q_len, kv_len, heads, group, scale, 0};
    attention_body(a);
}
#elif LC0_FA_PERSIST
// The chess net, persistent blocks (LC0_FA_PERSIST above): the arguments of flash_attention_f16
// plus the batch, which the grid no longer carries. Grid: x = ceil(seq / rows), y = blocks, z = 1.
extern "C" __global__ void __launch_bounds__(fa::THREADS, LC0_FA_MIN_BLOCKS)
flash_attention_persistent_f16(const f16* LC0_RESTRICT q, const f16* LC0_RESTRICT k, const f16* LC0_RESTRICT v,
                               int ld_qkv, const GT* LC0_RESTRICT g, const f16* LC0_RESTRICT bq,
                               const f16* LC0_RESTRICT bv, f16* LC0_RESTRICT o, int ld_o, int seq, int heads,
                               float scale, int batch) {
    lc0_grid_dependency_sync();
    LC0_FA_SHAPE_CONSTANTS();
    const long long ld = ld_qkv, ss = (long long)seq * seq;
    const fa::Args a{q, k, v, o, seq * ld, fa::DEPTH, seq * ld, fa::DEPTH, (long long)seq * ld_o, fa::DEPTH,
                     heads * ss, ss, ld_qkv, ld_qkv, ld_o, g, bq, bv, seq, seq, heads, 1, scale, batch};
    attention_body(a);
}
#else
// The chess net: Q, K, V are column blocks of the fused [B, seq, ld_qkv] QKV output, head h at
// column h*d; G is [B, H, seq, seq]; O is [B, seq, ld_o].
extern "C" __global__ void __launch_bounds__(fa::THREADS, LC0_FA_MIN_BLOCKS)
flash_attention_f16(const f16* LC0_RESTRICT q, const f16* LC0_RESTRICT k, const f16* LC0_RESTRICT v,
                    int ld_qkv, const GT* LC0_RESTRICT g, const f16* LC0_RESTRICT bq,
                    const f16* LC0_RESTRICT bv, f16* LC0_RESTRICT o, int ld_o, int seq, int heads,
                    float scale) {
    lc0_grid_dependency_sync();
    LC0_FA_SHAPE_CONSTANTS();
    const long long ld = ld_qkv, ss = (long long)seq * seq;
    const fa::Args a{q, k, v, o, seq * ld, fa::DEPTH, seq * ld, fa::DEPTH, (long long)seq * ld_o, fa::DEPTH,
                     heads * ss, ss, ld_qkv, ld_qkv, ld_o, g, bq, bv, seq, seq, heads, 1, scale, 0};
    attention_body(a);
}
#endif

#else
// ============================================================================ fp32, SIMT =====
namespace fa32 {
constexpr int THREADS = LC0_FA32_THREADS;
constexpr int DEPTH = LC0_FA_DEPTH;
constexpr int KV = LC0_FA_KV_TILE;
constexpr int PQ = DEPTH + 1;  // odd pitch: thread r reads its own Q row without bank conflicts
constexpr int PG = KV + 1;
static_assert(4 * (THREADS * PQ + 2 * KV * DEPTH + THREADS * PG) == LC0_FA_SMEM_BYTES,
              "host's shared-memory size (FlashParams.shared_bytes) differs from the kernel's layout");
}  // namespace fa32

extern "C" __global__ void __launch_bounds__(fa32::THREADS, LC0_FA_MIN_BLOCKS)
flash_attention_f32(const float* LC0_RESTRICT q, const float* LC0_RESTRICT k, const float* LC0_RESTRICT v,
                    int ld_qkv, const GT* LC0_RESTRICT g, const float* LC0_RESTRICT bq,
                    const float* LC0_RESTRICT bv, float* LC0_RESTRICT o, int ld_o, int seq, int heads,
                    float scale) {
    lc0_grid_dependency_sync();
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
        qs[rr * PQ + j] = x * (scale * LC0_LOG2E);  // exp2 domain, like the pre-scaled bias G
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
                const float corr = exp2f(m_run - s);
                l_run *= corr;
#pragma unroll
                for (int j = 0; j < DEPTH; ++j) acc[j] *= corr;
                m_run = s;
            }
            const float p = exp2f(s - m_run);
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
