// mma_amd.h -- the AMD branch of mma.h (included inside namespace lc0mma under LC0_AMD).
//
// The contract (names, semantics, alignment rules) is the one at the top of mma.h. This file maps
// it onto AMD matrix cores; one #if branch per instruction family:
//
//   LC0_AMD_WMMA  RDNA3 / RDNA3.5 (gfx1100-1103, gfx1150-1153; __GFX11__), wave32:
//                 v_wmma_f32_16x16x16_f16 via __builtin_amdgcn_wmma_f32_16x16x16_f16_w32
//   LC0_AMD_WMMA12 RDNA4 (gfx1200, gfx1201; __GFX12__), wave32: the same instruction with a new
//                 operand layout, via __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12
//   LC0_AMD_MFMA  CDNA (gfx908, gfx90a, gfx940-942, gfx950), wave64:
//                 v_mfma_f32_16x16x16_f16 via __builtin_amdgcn_mfma_f32_16x16x16f16
//   anything else (gfx10 RDNA1/2, gfx900/906): no branch; LC0_AMD_MMA_SUPPORTED is 0
//                 and the kernels.py "which kernel?" choice must not pick an mma kernel there
//                 (hip_platform.mma_kind(arch) says the same on the host).
//
// ---------------------------------------------------------------- operand layouts ----------
// Notation: l = hardware lane, A is 16x16 [m][k], B is 16x16 [k][n], C/D is 16x16 [m][n].
//
// RDNA3 WMMA, wave32 (v16f16 a, v16f16 b, v8f32 c):
//   A: lane l holds row m = l%16, element e = k (0..15).      -> a[e] = A[l%16][e]
//   B: lane l holds column n = l%16, element e = k (0..15).   -> b[e] = B[e][l%16]
//   Lanes 16..31 must hold the SAME A/B data as lanes 0..15 (RDNA3 reads the inputs replicated;
//   RDNA4 dropped this, which is why gfx12 needs its own branch).
//   C/D: lane l, element v (0..7) is row m = 2*v + l/16, column n = l%16 (rows interleaved
//   between the two half-waves).
//   Sources: AMD GPUOpen, "How to accelerate AI applications on RDNA 3 using WMMA"
//   (gpuopen.com/learn/wmma_on_rdna3: a_frag[ele] = a[16*lane + ele], b_frag[ele] =
//   b[16*ele + lane], r = ele*2 + (lIdx/16)); AMD "RDNA3 ISA Reference Guide", section 7.9
//   "Wave Matrix Multiply Accumulate"; cross-checked with llama.cpp ggml/src/ggml-cuda/mma.cuh
//   (RDNA3 tile<16,16>: get_i(l) = 2*l + threadIdx.x/16, get_j = threadIdx.x%16), tinygrad's
//   RDNA3 WMMA GEMM (extra/gemm) and Modular's get_rdna_fragment_layout ("lane l, elem v ->
//   D[row=v*2+l//16, col=l%16]").
//
// RDNA4 WMMA, wave32 (v8f16 a, v8f16 b, v8f32 c): no replication any more, the half-waves split k
//   A: lane l holds row m = l%16, k = 8*(l/16) + e (e = 0..7). -> a[e] = A[l%16][8*(l/16)+e]
//   B: lane l holds column n = l%16, k = 8*(l/16) + e.         -> b[e] = B[8*(l/16)+e][l%16]
//   C/D: lane l, element v (0..7) is row m = 8*(l/16) + v, column n = l%16.
//   Sources: AMD GPUOpen, "Using the Matrix Cores of AMD RDNA 4 architecture GPUs"
//   (gpuopen.com/learn/using_matrix_core_amd_rdna4); llama.cpp mma.cuh (RDNA4: A tile<16,8,half2>
//   get_i = threadIdx.x%16, get_j = 4*(threadIdx.x/16) + l; C tile<16,16> get_i(l) =
//   8*(threadIdx.x/16) + l, get_j = threadIdx.x%16).
//
// CDNA MFMA 16x16x16 f16, wave64 (v4f16 a, v4f16 b, v4f32 c; cbsz = abid = blgp = 0):
//   A: lane l holds row m = l%16, k = 4*(l/16) + e (e = 0..3). -> a[e] = A[l%16][4*(l/16)+e]
//   B: lane l holds column n = l%16, k = 4*(l/16) + e.         -> b[e] = B[4*(l/16)+e][l%16]
//   C/D: lane l, element v (0..3) is row m = 4*(l/16) + v, column n = l%16.
//   Sources: AMD Matrix Instruction Calculator (github.com/ROCm/amd_matrix_instruction_calculator,
//   --instruction v_mfma_f32_16x16x16f16 --detail-instruction); composable_kernel
//   include/ck_tile/ops/gemm/warp/warp_gemm_attribute_mfma_impl.hpp (16x16x16 f16: kAMLane 16,
//   kABKLane 4, kABKPerLane 4, kCMLane 4, kCNLane 16, kCM1PerLane 4); llama.cpp mma.cuh
//   (AMD_MFMA tile<16,16>: get_i(l) = 4*(threadIdx.x/16) + l, get_j = threadIdx.x%16).
//
// In all three, C row m is held by the 16 lanes of one 16-lane group (l/16 fixed), one column each,
// in the same element slot: c_slot(i) = i, C_ROWS = C_ELEMS, and row_max/row_sum reduce over
// the 16 lanes of that group -- which is exactly one DPP "row" (16 lanes) on every AMD GPU.
//
// Row reductions use DPP (free with the VALU op; ds_bpermute costs an LDS round trip):
//   quad_perm:[1,0,3,2] (0xB1)  lane ^ 1          quad_perm:[2,3,0,1] (0x4E)  lane ^ 2
//   row_half_mirror     (0x141) lane i of 8 <- 7-i  row_mirror         (0x140) lane i of 16 <- 15-i
// After the two quad steps all 4 lanes of a quad hold the quad's value; the half-mirror pairs
// every lane with a lane of the other quad, the mirror with a lane of the other half-row. All
// four exist on gfx9 (DPP) and gfx10+ (DPP16). Source: LLVM AMDGPUModifierSyntax "dpp_ctrl";
// tests/kernels/test_compile_amd.py checks that the compiler prints these numbers as these names.
// -DLC0_AMD_NO_DPP uses ds_bpermute (warp_shfl_xor 1, 2, 4, 8) instead.
//
// Validation (no AMD GPU in the project): tests/kernels/test_mma_amd_emulated.py compiles this file
// for the host with the builtins replaced by a lockstep wave emulator written from the layouts
// above (not from this code), checks A.B, the load variants, a_from_c and the reductions
// bit-exactly, then runs the real flash_attention.hip on it against float64 attention.
#pragma once

#if defined(__GFX11__)
#define LC0_AMD_WMMA 1
#elif defined(__GFX12__)
#define LC0_AMD_WMMA12 1
#elif defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
    defined(__gfx942__) || defined(__gfx950__)
#define LC0_AMD_MFMA 1
#endif

#if defined(LC0_AMD_WMMA) || defined(LC0_AMD_WMMA12) || defined(LC0_AMD_MFMA)
#define LC0_AMD_MMA_SUPPORTED 1

typedef _Float16 lc0_h4 __attribute__((ext_vector_type(4)));
typedef _Float16 lc0_h8 __attribute__((ext_vector_type(8)));
typedef _Float16 lc0_h16 __attribute__((ext_vector_type(16)));
typedef float lc0_f4 __attribute__((ext_vector_type(4)));
typedef float lc0_f8 __attribute__((ext_vector_type(8)));

// a_from_c's transpose goes through a 16x16 f16 tile of the warp's shared memory.
static constexpr int SCRATCH_ELEMS = 256;
// LC0_MMA_C_PAIRS stays undefined (mma.h's default 0): a lane's accumulator elements are one
// column of several rows on every AMD layout, never two adjacent columns of one row.

LC0_DEVICE int lane_id() { return lc0_lane(); }
LC0_DEVICE int lane16() { return lc0_lane() & 15; }  // row of A / column of B and C
LC0_DEVICE int group16() { return lc0_lane() >> 4; }  // which 16-lane group

// Unaligned-type-safe vector loads: memcpy is alias-neutral (smem is written through f16), and
// the alignment promise of the contract (16-byte smem, ld % 8 == 0) lets it become ds_read_b128
// (WMMA rows: 32 bytes at a 16-byte boundary) or ds_read_b64 (MFMA: 8 bytes at 8*(l/16)).
template <typename V, int ALIGN>
LC0_DEVICE V lc0_load_vec(const f16* p) {
    V v;
    __builtin_memcpy(&v, __builtin_assume_aligned(p, ALIGN), sizeof(V));
    return v;
}
LC0_DEVICE _Float16 lc0_h(const f16& v) { return __builtin_bit_cast(_Float16, v.x); }

#if defined(LC0_AMD_WMMA)
// ---------------------------------------------------------------- RDNA3 WMMA (wave32) ------
#define LC0_MMA_BRANCH "amd-wmma-gfx11"
static constexpr int C_ELEMS = 8;
static constexpr int C_ROWS = 8;
struct frag_a { lc0_h16 x; };
struct frag_b { lc0_h16 x; };
struct frag_c { float x[8]; };

LC0_DEVICE int c_row(int i) { return 2 * i + group16(); }
LC0_DEVICE int c_col(int) { return lane16(); }
LC0_DEVICE int c_slot(int i) { return i; }
LC0_DEVICE int slot_row(int j) { return 2 * j + group16(); }

// Both half-waves load the same row/column: that is the replication RDNA3 requires.
LC0_DEVICE void load_a(frag_a& a, const f16* s, int ld) {
    a.x = lc0_load_vec<lc0_h16, 16>(s + lane16() * ld);
}
LC0_DEVICE void load_b_t(frag_b& b, const f16* s, int ld) {
    b.x = lc0_load_vec<lc0_h16, 16>(s + lane16() * ld);  // column n = row n of the stored B^T
}
LC0_DEVICE void load_b(frag_b& b, const f16* s, int ld) {
    const int n = lane16();
#pragma unroll
    for (int k = 0; k < 16; ++k) b.x[k] = lc0_h(s[k * ld + n]);  // a column: 16 strided reads
}
LC0_DEVICE void mma(frag_c& c, const frag_a& a, const frag_b& b) {
    lc0_f8 acc;
    __builtin_memcpy(&acc, c.x, sizeof(acc));
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a.x, b.x, acc);
    __builtin_memcpy(c.x, &acc, sizeof(acc));
}

#elif defined(LC0_AMD_WMMA12)
// ---------------------------------------------------------------- RDNA4 WMMA (wave32) ------
#define LC0_MMA_BRANCH "amd-wmma-gfx12"
static constexpr int C_ELEMS = 8;
static constexpr int C_ROWS = 8;
struct frag_a { lc0_h8 x; };
struct frag_b { lc0_h8 x; };
struct frag_c { float x[8]; };

LC0_DEVICE int c_row(int i) { return 8 * group16() + i; }
LC0_DEVICE int c_col(int) { return lane16(); }
LC0_DEVICE int c_slot(int i) { return i; }
LC0_DEVICE int slot_row(int j) { return 8 * group16() + j; }

// Half-wave g holds k = 8g..8g+7: 16 bytes at a 16-byte boundary (ld % 8 == 0).
LC0_DEVICE void load_a(frag_a& a, const f16* s, int ld) {
    a.x = lc0_load_vec<lc0_h8, 16>(s + lane16() * ld + 8 * group16());
}
LC0_DEVICE void load_b_t(frag_b& b, const f16* s, int ld) {
    b.x = lc0_load_vec<lc0_h8, 16>(s + lane16() * ld + 8 * group16());
}
LC0_DEVICE void load_b(frag_b& b, const f16* s, int ld) {
    const int n = lane16(), k0 = 8 * group16();
#pragma unroll
    for (int e = 0; e < 8; ++e) b.x[e] = lc0_h(s[(k0 + e) * ld + n]);
}
LC0_DEVICE void mma(frag_c& c, const frag_a& a, const frag_b& b) {
    lc0_f8 acc;
    __builtin_memcpy(&acc, c.x, sizeof(acc));
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a.x, b.x, acc);
    __builtin_memcpy(c.x, &acc, sizeof(acc));
}

#else
// ---------------------------------------------------------------- CDNA MFMA (wave64) -------
#define LC0_MMA_BRANCH "amd-mfma-16x16x16f16"
static constexpr int C_ELEMS = 4;
static constexpr int C_ROWS = 4;
struct frag_a { lc0_h4 x; };
struct frag_b { lc0_h4 x; };
struct frag_c { float x[4]; };

LC0_DEVICE int c_row(int i) { return 4 * group16() + i; }
LC0_DEVICE int c_col(int) { return lane16(); }
LC0_DEVICE int c_slot(int i) { return i; }
LC0_DEVICE int slot_row(int j) { return 4 * group16() + j; }

LC0_DEVICE void load_a(frag_a& a, const f16* s, int ld) {
    a.x = lc0_load_vec<lc0_h4, 8>(s + lane16() * ld + 4 * group16());
}
LC0_DEVICE void load_b_t(frag_b& b, const f16* s, int ld) {
    b.x = lc0_load_vec<lc0_h4, 8>(s + lane16() * ld + 4 * group16());
}
LC0_DEVICE void load_b(frag_b& b, const f16* s, int ld) {
    const int n = lane16(), k0 = 4 * group16();
#pragma unroll
    for (int e = 0; e < 4; ++e) b.x[e] = lc0_h(s[(k0 + e) * ld + n]);
}
LC0_DEVICE void mma(frag_c& c, const frag_a& a, const frag_b& b) {
    lc0_f4 acc;
    __builtin_memcpy(&acc, c.x, sizeof(acc));
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(a.x, b.x, acc, 0, 0, 0);
    __builtin_memcpy(c.x, &acc, sizeof(acc));
}
#endif

LC0_DEVICE void zero(frag_c& c) {
#pragma unroll
    for (int i = 0; i < C_ELEMS; ++i) c.x[i] = 0.f;
}

// The accumulator holds a column per lane, A wants a row per lane: a transpose, done through the
// warp's 16x16 scratch tile (fp32 -> fp16 rounding to nearest even, as the contract says).
LC0_DEVICE void a_from_c(frag_a& a, const frag_c& c, f16* scratch) {
#pragma unroll
    for (int i = 0; i < C_ELEMS; ++i) scratch[c_row(i) * 16 + c_col(i)] = f32_to_f16(c.x[i]);
    warp_sync();
    load_a(a, scratch, 16);
    warp_sync();
}

#if defined(LC0_AMD_NO_DPP)
LC0_DEVICE float row_max(float v) {
#pragma unroll
    for (int m = 1; m < 16; m <<= 1) v = __builtin_fmaxf(v, warp_shfl_xor(v, m));
    return v;
}
LC0_DEVICE float row_sum(float v) {
#pragma unroll
    for (int m = 1; m < 16; m <<= 1) v += warp_shfl_xor(v, m);
    return v;
}
#else
template <int CTRL>
LC0_DEVICE float lc0_dpp(float v) {
    // row_mask = bank_mask = 0xF (all lanes write), bound_ctrl off: every source lane exists.
    return __builtin_bit_cast(
        float, __builtin_amdgcn_update_dpp(0, __builtin_bit_cast(int, v), CTRL, 0xF, 0xF, false));
}
LC0_DEVICE float row_max(float v) {
    v = __builtin_fmaxf(v, lc0_dpp<0xB1>(v));   // quad_perm:[1,0,3,2]
    v = __builtin_fmaxf(v, lc0_dpp<0x4E>(v));   // quad_perm:[2,3,0,1]
    v = __builtin_fmaxf(v, lc0_dpp<0x141>(v));  // row_half_mirror
    return __builtin_fmaxf(v, lc0_dpp<0x140>(v));  // row_mirror
}
LC0_DEVICE float row_sum(float v) {
    v += lc0_dpp<0xB1>(v);
    v += lc0_dpp<0x4E>(v);
    v += lc0_dpp<0x141>(v);
    return v + lc0_dpp<0x140>(v);
}
#endif

#else
// ---------------------------------------------------------------- no matrix cores ----------
// gfx10 (RDNA1/2), gfx900/906: kernels must not use the tile API here (the host routes them to
// the GEMM + softmax fallback).
#define LC0_AMD_MMA_SUPPORTED 0
#define LC0_MMA_BRANCH "amd-none"
#endif
