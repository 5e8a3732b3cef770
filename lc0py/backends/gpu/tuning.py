"""Default run-time parameters of the flash-attention kernels per (head depth, arch), with reasons.

The kernels read these as compile defines (``kernels/flash_attention.hip`` lists them), so a
different choice is a different cached binary, never a rebuild of lc0py. ``--backend-opts``
overrides any field (``attn_warps=2,attn_kv_tile=32,...``); ``lc0py tune`` may later write
measured winners on top of this table.

Shape facts behind the table (attention-body.md): lc0 nets have seq = 64 tokens, depth
``d = D/H`` in {32, 64, 96, 128} at D = 768, batch 1..1024. Per (position, head) the work is tiny
(2·2·64·64·d FLOPs) and the bytes (Q, K, V 3·64·d halves + the 64×64 bias) dominate: the kernel is
memory/latency bound, so the goals are one pass over Q/K/V/G with 16-byte loads, enough blocks
in flight, and no spills.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class FlashParams:
    """Parameters of ``flash_attention_f16`` (tensor cores) / ``flash_attention_f32`` (SIMT)."""

    warps: int = 4  # f16: warps per block; the block covers 16*warps query rows
    kv_tile: int = 64  # keys per shared-memory tile
    stages: int = 1  # 1 or 2 (prefetch the next KV tile while computing this one)
    q_regs: int = 1  # keep Q fragments in registers across KV tiles
    min_blocks: int = 1  # __launch_bounds__ occupancy target (blocks per SM)
    f32_threads: int = 64  # f32: query rows (= threads) per block
    heads_per_block: int = 1  # f16: heads one block walks through (needs stages=2 to overlap)

    @property
    def rows(self) -> int:
        return 16 * self.warps

    def defines(self, depth: int, fp16: bool, bias_f32: bool) -> dict[str, int]:
        d = {
            "LC0_FP16": int(fp16),
            "LC0_FA_DEPTH": depth,
            "LC0_FA_WARPS": self.warps,
            "LC0_FA_KV_TILE": self.kv_tile,
            "LC0_FA_STAGES": self.stages,
            "LC0_FA_Q_REGS": self.q_regs,
            "LC0_FA_MIN_BLOCKS": self.min_blocks,
            "LC0_FA_BIAS_F32": int(bias_f32),
            "LC0_FA32_THREADS": self.f32_threads,
            "LC0_FA_HEADS": self.heads_per_block,
        }
        return d

    def shared_bytes(self, depth: int, fp16: bool, bias_f32: bool, scratch_per_warp: int = 0) -> int:
        """Dynamic shared memory of one block (mirrors the layout in flash_attention.hip)."""
        if fp16:
            gsize = 4 if bias_f32 else 2
            pq = depth + 8
            pg = self.kv_tile + 16 // gsize
            q = self.rows * pq * 2 * (2 if self.heads_per_block > 1 else 1)
            stage = 2 * self.kv_tile * pq * 2 + self.rows * pg * gsize
            return q + self.stages * stage + self.warps * scratch_per_warp * 2
        t = self.f32_threads
        return 4 * (t * (depth + 1) + 2 * self.kv_tile * depth + t * (self.kv_tile + 1))


#: name -> field for ``--backend-opts attn_<name>=...``
OVERRIDABLE = tuple(f.name for f in fields(FlashParams))


def default_params(depth: int, arch: str, seq: int = 64) -> tuple[FlashParams, str]:
    """``(params, reason)`` for head depth ``depth`` on ``arch`` ("sm_90", "gfx1100", ...)."""
    # One block per (position, head) at seq 64: 4 warps x 16 rows = the whole query range, one
    # KV tile = all 64 keys, so K/V/G are read exactly once per head and nothing is re-staged.
    warps = max(1, min(4, (seq + 15) // 16))
    kv = 64 if seq >= 64 else max(16, ((seq + 15) // 16) * 16)
    stages = 1 if seq <= kv else 2  # a single tile has nothing to prefetch
    if depth <= 32:
        # 96 registers, 24 KB smem: ~5 blocks/SM co-resident, latency hidden by other blocks.
        p = FlashParams(warps=warps, kv_tile=kv, stages=stages, q_regs=1, min_blocks=4, f32_threads=64)
        why = "d<=32: whole head per block, Q in registers (96 regs), 4 blocks/SM"
    elif depth <= 64:
        p = FlashParams(warps=warps, kv_tile=kv, stages=stages, q_regs=1, min_blocks=2, f32_threads=64)
        why = "d<=64: whole head per block, Q in registers (~143 regs), 2 blocks/SM"
    elif depth <= 96:
        p = FlashParams(warps=warps, kv_tile=kv, stages=stages, q_regs=1, min_blocks=2, f32_threads=32)
        why = "d<=96: Q in registers still fits (~160 regs); f32 path: 32 rows/block to fit registers"
    elif depth <= 128:
        p = FlashParams(warps=warps, kv_tile=kv, stages=stages, q_regs=1, min_blocks=1, f32_threads=32)
        why = "d<=128: 186 regs with Q in registers and no spills; f32 path: 32 rows/block"
    else:
        # Past 128 the O accumulators alone take d/2 registers per lane: free Q's registers and
        # halve the KV tile so the S fragments shrink.
        p = FlashParams(warps=warps, kv_tile=min(kv, 32), stages=2, q_regs=0, min_blocks=1, f32_threads=32)
        why = "d>128: Q re-read from shared memory, KV tile 32, 2 stages"
    if arch.startswith("gfx9"):
        why += "; CDNA: same shape (wave64 handled inside mma_amd.h)"
    return p, why


def apply_overrides(params: FlashParams, overrides: dict[str, int]) -> FlashParams:
    """Replace fields named in ``overrides`` (keys are FlashParams field names)."""
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise KeyError(", ".join(sorted(unknown)))
    return replace(params, **overrides) if overrides else params
