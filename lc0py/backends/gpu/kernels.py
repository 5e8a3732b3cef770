"""Which attention kernel (and parameters) for a shape -- or "unsupported, use the fallback".

One function, ``choose_attention``, answers both questions (as llama.cpp's
``ggml_cuda_get_best_fattn_kernel`` does): every branch that returns ``FALLBACK`` says why, and
the backend logs that reason once. The fallback (strided-batched GEMMs + ``softmax_bias``)
supports every shape.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from lc0py.backends.gpu.tuning import FlashParams, apply_overrides, default_params
from lc0py.gpu.platform import mma_kind, mma_unavailable

MAX_FLASH_DEPTH = 256  # registers: the O accumulators alone are d/2 floats per lane at d = 256
MAX_F32_DEPTH = 128  # the SIMT kernel keeps a d-float accumulator row per thread


class AttentionKernel(enum.Enum):
    FLASH_MMA = "flash_attention_f16"  # tensor cores (mma.h), fp16 storage (flash=v1)
    FLASH_MMA_PERSISTENT = "flash_attention_persistent_f16"  # the same body, persistent blocks (flash=v2)
    FLASH_SIMT = "flash_attention_f32"  # fp32 FMAs, fp32 storage
    FALLBACK = "fallback"  # batched GEMMs + softmax_bias kernel


@dataclass(frozen=True)
class AttentionChoice:
    kernel: AttentionKernel
    params: FlashParams | None
    reason: str

    @property
    def is_flash(self) -> bool:
        return self.kernel is not AttentionKernel.FALLBACK


def choose_attention(
    *,
    depth: int,
    seq: int,
    fp16: bool,
    vendor: str,
    arch: str,
    shared_optin: int,
    flash: bool = True,
    overrides: dict[str, int] | None = None,
    bias_f32: bool | None = None,
    scratch_per_warp: int = 0,
) -> AttentionChoice:
    """Pick the attention kernel for head ``depth``, sequence ``seq`` and storage precision.

    ``shared_optin`` is the device's largest dynamic shared memory per block; ``overrides`` are
    ``FlashParams`` fields from ``--backend-opts`` (``attn_warps=...``). Which f16 kernel: the
    persistent one (``flash=v2``) where ``overrides`` says ``persistent=1`` or, without a word
    from them, on ``tuning.PERSISTENT_ARCHS`` (sm_90); else the one-shot blocks (``flash=v1``).
    """
    fallback = AttentionKernel.FALLBACK
    if not flash:
        return AttentionChoice(fallback, None, "flash attention disabled (flash=off)")
    if seq < 1:
        return AttentionChoice(fallback, None, f"sequence length {seq} < 1")
    params, why = default_params(depth, arch, seq, persistent=(overrides or {}).get("persistent"))
    try:
        params = apply_overrides(params, overrides or {})
    except KeyError as exc:
        return AttentionChoice(fallback, None, f"unknown flash parameter(s) {exc}")
    except ValueError as exc:  # outside tuning.PARAM_LIMITS: never compiled or launched
        return AttentionChoice(fallback, None, str(exc))
    bias32 = (not fp16) if bias_f32 is None else bias_f32
    if fp16:
        if depth % 16 or depth < 16:
            return AttentionChoice(fallback, None, f"head depth {depth} is not a multiple of 16")
        if depth > MAX_FLASH_DEPTH:
            return AttentionChoice(fallback, None, f"head depth {depth} > {MAX_FLASH_DEPTH}")
        if mma_kind(vendor, arch) is None:
            return AttentionChoice(fallback, None, mma_unavailable(vendor, arch))
        if params.kv_tile % 16 or params.kv_tile < 16:
            return AttentionChoice(fallback, None, f"kv_tile {params.kv_tile} is not a multiple of 16")
        if not 1 <= params.stages <= 8 or params.warps < 1 or params.warps > 16 or params.heads_per_block < 1:
            return AttentionChoice(fallback, None, f"bad flash parameters {params}")
        kernel = AttentionKernel.FLASH_MMA_PERSISTENT if params.persistent else AttentionKernel.FLASH_MMA
    else:
        if depth > MAX_F32_DEPTH or depth < 1:
            return AttentionChoice(
                fallback, None, f"fp32 flash kernel supports depth <= {MAX_F32_DEPTH}, not {depth}"
            )
        if params.f32_threads % 32 or not 32 <= params.f32_threads <= 256:
            return AttentionChoice(
                fallback, None, f"f32_threads {params.f32_threads} not a multiple of 32 in [32, 256]"
            )
        kernel = AttentionKernel.FLASH_SIMT
    smem = params.shared_bytes(depth, fp16, bias32, scratch_per_warp)
    if smem > shared_optin:
        return AttentionChoice(
            fallback, None, f"needs {smem} B shared memory per block > device limit {shared_optin}"
        )
    return AttentionChoice(kernel, params, why)


def flash_shape_defines(
    kernel: AttentionKernel, seq: int, heads: int, ld_qkv: int, ld_o: int
) -> dict[str, int]:
    """Compile defines that make a chess flash kernel's shape (sequence length, heads, the QKV and
    output row strides) compile-time constants: its launches must pass the same numbers. Only the
    fp16 chess entries take them (the SIMT and the general ``lc0py.attention`` kernels do not).
    As constants the pair -> (position, head) divisions, the strides and the copies' bound tests
    fold away: in the persistent kernel (T82, H200, Nsight Compute) issuing a pair's copies took
    ~420 of the ~1,200 instructions a warp executed per (position, head) pair."""
    if kernel not in (AttentionKernel.FLASH_MMA, AttentionKernel.FLASH_MMA_PERSISTENT):
        return {}
    return {"LC0_FA_SHAPE_SEQ": seq, "LC0_FA_SHAPE_HEADS": heads, "LC0_FA_SHAPE_LD_QKV": ld_qkv,
            "LC0_FA_SHAPE_LD_O": ld_o}


def blocks_per_sm(params: FlashParams, shared_bytes: int, shared_optin: int, vendor: str = "nvidia") -> int:
    """How many persistent blocks one multiprocessor holds: the occupancy target
    (``min_blocks``, which ``__launch_bounds__`` makes the register budget honour), capped by
    shared memory. NVIDIA: an SM has the per-block opt-in limit + 1 KiB, and each block also
    reserves 1 KiB (H100: 228 KiB; 4 blocks of 48 KiB); AMD: the LDS the opt-in limit names."""
    reserve = 1024 if vendor == "nvidia" else 0
    fit = (shared_optin + reserve) // max(1, shared_bytes + reserve)
    return max(1, min(params.min_blocks, fit))


def flash_grid(
    seq: int,
    heads: int,
    batch: int,
    params: FlashParams,
    fp16: bool,
    warp_size: int = 32,
    *,
    sm_count: int = 0,
    resident: int = 1,
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of a flash launch: x = query-row blocks, y = head (groups of
    ``heads_per_block`` for f16), z = batch. The persistent f16 kernel: y = min(positions x heads,
    ``sm_count`` x ``resident`` blocks per SM) blocks, each walking its share of the pairs, z = 1
    (one wave: a block per resident slot, none waiting for another to retire)."""
    rows = params.rows if fp16 else params.f32_threads
    threads = params.warps * warp_size if fp16 else params.f32_threads
    x = (seq + rows - 1) // rows
    if fp16 and params.persistent:
        slots = max(1, sm_count * resident // x)
        return (x, max(1, min(batch * heads, slots)), 1), (threads, 1, 1)
    hpb = params.heads_per_block if fp16 else 1
    return (x, (heads + hpb - 1) // hpb, batch), (threads, 1, 1)
