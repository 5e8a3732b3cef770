// mma.h -- matrix-core tiles behind one API, so flash_attention.hip stays single-source.
//
// ============================== CONTRACT (NVIDIA + AMD implement exactly this) ==============
// A per-warp 16x16x16 tile product with fp16 operands and fp32 accumulators. All 32 (or 64)
// lanes of a warp call every function together (they are warp-collective); nothing here uses
// block-level barriers. Names (namespace lc0mma):
//
//   struct frag_a;   // A tile 16x16 (rows m, cols k), fp16
//   struct frag_b;   // B tile 16x16 (rows k, cols n), fp16
//   struct frag_c;   // C tile 16x16 (rows m, cols n), fp32; frag_c::x[C_ELEMS] per lane
//
//   void zero(frag_c& c);
//   void load_a  (frag_a& a, const f16* smem, int ld);  // A[m][k] = smem[m*ld + k]
//   void load_b_t(frag_b& b, const f16* smem, int ld);  // B[k][n] = smem[n*ld + k]  (K rows: Q.K^T)
//   void load_b  (frag_b& b, const f16* smem, int ld);  // B[k][n] = smem[k*ld + n]  (V rows: P.V)
//   void mma(frag_c& c, const frag_a& a, const frag_b& b);   // c += a*b  (fp32 accumulate)
//   void a_from_c(frag_a& a, const frag_c& c, f16* scratch); // fp16(c) as an A operand (P of P.V);
//        scratch: 16*16 f16 of this warp's own shared memory (16-byte aligned), used only where
//        the accumulator and A layouts differ (AMD, scalar); NVIDIA converts in registers.
//   C_PAIRS            (optional, default false) true when elements 2i and 2i+1 of a lane are
//        adjacent columns (2i even) of the same row, so a kernel may read their two fp16
//        operands with one 32-bit load; a branch sets it with #define LC0_MMA_C_PAIRS 1.
//   SCRATCH_ELEMS      f16 elements of scratch a_from_c needs per warp (0 on NVIDIA, 256 else);
//        kernels reserve SCRATCH_ELEMS per warp and pass scratch + warp*SCRATCH_ELEMS.
//
//   Per-lane accumulator access, so online softmax works on every arch:
//   C_ELEMS            accumulator elements per lane (NVIDIA 8, gfx11 8, CDNA 4, scalar 8)
//   C_ROWS             distinct rows one lane holds (NVIDIA 2, gfx11 8, CDNA 4, scalar 1)
//   int c_row(int i)   row (0..15) of this lane's element i
//   int c_col(int i)   column (0..15) of this lane's element i
//   int c_slot(int i)  which of the lane's C_ROWS rows element i is in (0..C_ROWS-1)
//   int slot_row(int j) the row of slot j
//   float row_max(float v), row_sum(float v):
//        reduce v over the lanes that hold the SAME rows (slot j of every lane in that group
//        is the same row), so a lane's per-slot partial max/sum becomes the full row's.
//
//   smem pointers must be 16-byte aligned and ld a multiple of 8 elements (ldmatrix / vector
//   loads). Rows/cols >= the valid extent are the caller's job (pad with zeros).
//   WARP_SIZE comes from the prelude (32 NVIDIA / RDNA wave32, 64 CDNA).
//
// Branches: NVIDIA: mma.sync.aligned.m16n8k16 + ldmatrix (sm_80+), below.
//           AMD: kernels/mma_amd.h (gfx11 WMMA __builtin_amdgcn_wmma_f32_16x16x16_f16_w32,
//                gfx9/CDNA MFMA), written and owned by the AMD side, included under LC0_AMD.
//           LC0_MMA_SCALAR: plain fp32 FMAs with the same API (any vendor, warp size 32) -- the
//                reference each branch is tested against; slow.
// Kernels only use the names above; no CUDA-only intrinsic appears outside prelude_nvrtc.h and
// this file.
// =========================================================================================
#pragma once

namespace lc0mma {

#if defined(LC0_MMA_SCALAR)
// ---------------------------------------------------------------- scalar reference ---------
// Lane l (0..31) owns row l/2 and columns (l%2)*8 .. +7 of C. A holds that whole row (16 k);
// B holds the 8 columns of the lane (16 k each). Everything in fp32 registers.
#define LC0_MMA_BRANCH "scalar"
#define LC0_MMA_C_PAIRS 1
static constexpr int C_ELEMS = 8;
static constexpr int C_ROWS = 1;
static constexpr int SCRATCH_ELEMS = 256;
struct frag_a { float x[16]; };
struct frag_b { float x[16][8]; };
struct frag_c { float x[8]; };

LC0_DEVICE int lane_id() { return threadIdx.x % WARP_SIZE; }
LC0_DEVICE int c_row(int) { return lane_id() / 2; }
LC0_DEVICE int c_col(int i) { return (lane_id() % 2) * 8 + i; }
LC0_DEVICE int c_slot(int) { return 0; }
LC0_DEVICE int slot_row(int) { return lane_id() / 2; }
LC0_DEVICE void zero(frag_c& c) {
#pragma unroll
    for (int i = 0; i < 8; ++i) c.x[i] = 0.f;
}
LC0_DEVICE void load_a(frag_a& a, const f16* s, int ld) {
    const int m = lane_id() / 2;
#pragma unroll
    for (int k = 0; k < 16; ++k) a.x[k] = f16_to_f32(s[m * ld + k]);
}
LC0_DEVICE void load_b_t(frag_b& b, const f16* s, int ld) {
    const int n0 = (lane_id() % 2) * 8;
#pragma unroll
    for (int k = 0; k < 16; ++k)
#pragma unroll
        for (int j = 0; j < 8; ++j) b.x[k][j] = f16_to_f32(s[(n0 + j) * ld + k]);
}
LC0_DEVICE void load_b(frag_b& b, const f16* s, int ld) {
    const int n0 = (lane_id() % 2) * 8;
#pragma unroll
    for (int k = 0; k < 16; ++k)
#pragma unroll
        for (int j = 0; j < 8; ++j) b.x[k][j] = f16_to_f32(s[k * ld + n0 + j]);
}
LC0_DEVICE void mma(frag_c& c, const frag_a& a, const frag_b& b) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        float acc = c.x[j];
#pragma unroll
        for (int k = 0; k < 16; ++k) acc += a.x[k] * b.x[k][j];
        c.x[j] = acc;
    }
}
LC0_DEVICE void a_from_c(frag_a& a, const frag_c& c, f16* scratch) {
    // Round through fp16 exactly like the hardware branches, via the warp's scratch tile.
#pragma unroll
    for (int i = 0; i < 8; ++i) scratch[c_row(i) * 16 + c_col(i)] = f32_to_f16(c.x[i]);
    warp_sync();
    load_a(a, scratch, 16);
    warp_sync();
}
LC0_DEVICE float row_max(float v) { return fmaxf(v, warp_shfl_xor(v, 1)); }
LC0_DEVICE float row_sum(float v) { return v + warp_shfl_xor(v, 1); }

#elif defined(LC0_AMD)
// ---------------------------------------------------------------- AMD (owned by AMD side) --
#include "mma_amd.h"

#elif defined(LC0_NVIDIA)
// ---------------------------------------------------------------- NVIDIA sm_80+ ------------
// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32: a 16x16 C tile is two m16n8 halves.
// Lane l: g = l/4 (group), t = l%4. Per PTX ISA fragment layouts:
//   A regs a0..a3 (f16x2): (g, 2t..2t+1), (g+8, 2t..), (g, 8+2t..), (g+8, 8+2t..)
//   B regs per n8 half b0,b1: (k = 2t..2t+1, n = g), (k = 8+2t.., n = g)
//   C per n8 half c0..c3: (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)
// so x[0..3] = cols 0..7, x[4..7] = cols 8..15; the C layout of two halves IS the A layout of
// a k16 tile, which is why a_from_c is a register conversion (no shared memory, no shuffles).
#define LC0_MMA_BRANCH "nvidia-mma.sync.m16n8k16"
#define LC0_MMA_C_PAIRS 1
static constexpr int C_ELEMS = 8;
static constexpr int C_ROWS = 2;
static constexpr int SCRATCH_ELEMS = 0;
struct frag_a { u32 x[4]; };
struct frag_b { u32 x[4]; };  // x[0..1]: n-half 0 (b0,b1); x[2..3]: n-half 1
struct frag_c { float x[8]; };

LC0_DEVICE int lane_id() { return threadIdx.x % WARP_SIZE; }
LC0_DEVICE int c_row(int i) { return (lane_id() >> 2) + ((i >> 1) & 1) * 8; }
LC0_DEVICE int c_col(int i) { return (i >> 2) * 8 + (lane_id() & 3) * 2 + (i & 1); }
LC0_DEVICE int c_slot(int i) { return (i >> 1) & 1; }
LC0_DEVICE int slot_row(int j) { return (lane_id() >> 2) + j * 8; }
LC0_DEVICE void zero(frag_c& c) {
#pragma unroll
    for (int i = 0; i < 8; ++i) c.x[i] = 0.f;
}

LC0_DEVICE void ldmatrix_x4(u32 (&r)[4], const f16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(lc0_smem_addr(p)));
}
LC0_DEVICE void ldmatrix_x4_trans(u32 (&r)[4], const f16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(lc0_smem_addr(p)));
}

// ldmatrix x4: lanes 8j..8j+7 give the 8 row addresses of 8x8 matrix j; lane l receives in r[j]
// the pair (row l/4, cols 2(l%4)..+1) of matrix j (.trans: (rows 2(l%4)..+1, col l/4)).
LC0_DEVICE void load_a(frag_a& a, const f16* s, int ld) {
    const int l = lane_id();
    // matrices: 0 = (m 0-7, k 0-7), 1 = (m 8-15, k 0-7), 2 = (m 0-7, k 8-15), 3 = (m 8-15, k 8-15)
    const int row = (l & 7) + ((l >> 3) & 1) * 8;
    const int col = (l >> 4) * 8;
    ldmatrix_x4(a.x, s + row * ld + col);
}
LC0_DEVICE void load_b_t(frag_b& b, const f16* s, int ld) {
    const int l = lane_id();
    // stored as [n][k]: matrices 0 = (n 0-7, k 0-7), 1 = (n 0-7, k 8-15), 2 = (n 8-15, k 0-7),
    // 3 = (n 8-15, k 8-15) -> r = {b0,b1} of n-half 0, {b0,b1} of n-half 1.
    const int n = (l & 7) + (l >> 4) * 8;
    const int k = ((l >> 3) & 1) * 8;
    ldmatrix_x4(b.x, s + n * ld + k);
}
LC0_DEVICE void load_b(frag_b& b, const f16* s, int ld) {
    const int l = lane_id();
    // stored as [k][n]; .trans hands lane l the (k = 2t..2t+1, n = g) pairs the B operand wants.
    const int k = (l & 7) + ((l >> 3) & 1) * 8;
    const int n = (l >> 4) * 8;
    ldmatrix_x4_trans(b.x, s + k * ld + n);
}
LC0_DEVICE void mma(frag_c& c, const frag_a& a, const frag_b& b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c.x[4]), "+f"(c.x[5]), "+f"(c.x[6]), "+f"(c.x[7])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[2]), "r"(b.x[3]));
}
LC0_DEVICE void a_from_c(frag_a& a, const frag_c& c, f16*) {
    a.x[0] = pack_f16x2(c.x[0], c.x[1]);
    a.x[1] = pack_f16x2(c.x[2], c.x[3]);
    a.x[2] = pack_f16x2(c.x[4], c.x[5]);
    a.x[3] = pack_f16x2(c.x[6], c.x[7]);
}
// The 4 lanes of a group (same l/4) hold the same two rows.
LC0_DEVICE float row_max(float v) {
    v = fmaxf(v, warp_shfl_xor(v, 1));
    return fmaxf(v, warp_shfl_xor(v, 2));
}
LC0_DEVICE float row_sum(float v) {
    v += warp_shfl_xor(v, 1);
    return v + warp_shfl_xor(v, 2);
}
#else
#error "mma.h: no branch (define LC0_NVIDIA via prelude_nvrtc.h, LC0_AMD, or LC0_MMA_SCALAR)"
#endif

#ifndef LC0_MMA_C_PAIRS
#define LC0_MMA_C_PAIRS 0
#endif
static constexpr bool C_PAIRS = LC0_MMA_C_PAIRS;

}  // namespace lc0mma
