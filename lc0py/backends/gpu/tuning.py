"""Default run-time parameters of the flash-attention kernels per (head depth, arch), with reasons.

The kernels read these as compile defines (``kernels/flash_attention.hip`` lists them), so a
different choice is a different cached binary, never a rebuild of lc0py. ``--backend-opts``
overrides any field (``attn_warps=2,attn_kv_tile=32,...``). ``lc0py tune`` writes measured
winners per (device, arch, heads x depth, dtype) with ``save_tuned``; the backend reads them with
``load_tuned`` (backend option ``tuned=off`` ignores them); explicit ``attn_*`` options win over both.

Shape facts behind the table (docs/attention-body.md): lc0 nets have seq = 64 tokens, depth
``d = D/H`` in {32, 64, 96, 128} at D = 768, batch 1..1024. Per (position, head) the work is tiny
(2·2·64·64·d FLOPs) and the bytes (Q, K, V 3·64·d halves + the 64×64 bias) dominate: the kernel is
memory/latency bound, so the goals are one pass over Q/K/V/G with 16-byte loads, enough blocks
in flight, and no spills.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from lc0py.storage import cache as storage_cache

log = logging.getLogger("lc0py.backends")


@dataclass(frozen=True)
class FlashParams:
    """Parameters of ``flash_attention_f16`` (tensor cores) / ``flash_attention_f32`` (SIMT)."""

    warps: int = 4  # f16: warps per block; the block covers 16*warps query rows
    kv_tile: int = 64  # keys per shared-memory tile
    stages: int = 1  # 1..8 shared-memory stages (S >= 2: prefetch S-1 work items ahead)
    q_regs: int = 1  # keep Q fragments in registers across KV tiles
    min_blocks: int = 1  # __launch_bounds__ occupancy target (blocks per SM)
    f32_threads: int = 64  # f32: query rows (= threads) per block
    heads_per_block: int = 1  # f16: heads one block walks through (needs stages=2 to overlap)
    #: f16: 1 = the persistent kernel (``flash=v2``, ``flash_attention_persistent_f16``): about
    #: SMs x min_blocks blocks, each walking a range of (position, head) pairs with the stage ring
    #: running across them; 0 = one block per (row block, head group, position) (``flash=v1``)
    persistent: int = 0
    #: persistent kernel: 1 = block y takes pairs y, y+Y, ... (the blocks in step read neighbouring
    #: heads of the same positions: whole token rows, as the one-shot grid); 0 = a contiguous range
    interleave: int = 1
    #: persistent kernel: 1 = walk the pairs from the last position down (the smolgen bias the
    #: previous GEMM wrote last, likely still in L2, is read first); 0 = from position 0 up
    descend: int = 0
    #: f16: how a Q/K/V tile's 16-byte chunks map to threads: 0 = row by row; 1 = one chunk of 8
    #: rows for 8 neighbouring lanes (no shared-memory bank conflicts in the copies at depth 16/32;
    #: depth >= 64 keeps row order, already conflict-free). Opt-in until measured on a device.
    copy_order: int = 0

    @property
    def rows(self) -> int:
        return 16 * self.warps

    def defines(self, depth: int, fp16: bool, bias_f32: bool, scratch_per_warp: int = 0) -> dict[str, int]:
        """Compile defines of the kernel for these parameters. ``LC0_FA_SCRATCH_ELEMS`` (the
        device's ``mma_scratch_elems``) and ``LC0_FA_SMEM_BYTES`` (``shared_bytes``, what the host
        launches with) are what Python believes of the kernel's layout: the kernel
        ``static_assert``s both against its own, so any drift fails the compile (CI compiles)."""
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
            "LC0_FA_PERSIST": self.persistent if fp16 else 0,
            "LC0_FA_INTERLEAVE": self.interleave,
            "LC0_FA_DESCEND": self.descend,
            "LC0_FA_COPY_ORDER": self.copy_order,
            "LC0_FA_SCRATCH_ELEMS": scratch_per_warp,
            "LC0_FA_SMEM_BYTES": self.shared_bytes(depth, fp16, bias_f32, scratch_per_warp),
        }
        return d

    def shared_bytes(self, depth: int, fp16: bool, bias_f32: bool, scratch_per_warp: int = 0) -> int:
        """Dynamic shared memory of one block (mirrors the layout in flash_attention.hip)."""
        if fp16:
            gsize = 4 if bias_f32 else 2
            pq = depth + 8
            pg = self.kv_tile + 16 // gsize
            # Q buffers: one per head in flight (kernel's Q_BUFS)
            walks = self.heads_per_block > 1 or self.persistent
            q_bufs = (self.stages if self.stages > 2 else 2) if walks else 1
            q = self.rows * pq * 2 * q_bufs
            stage = 2 * self.kv_tile * pq * 2 + self.rows * pg * gsize
            return q + self.stages * stage + self.warps * scratch_per_warp * 2
        t = self.f32_threads
        return 4 * (t * (depth + 1) + 2 * self.kv_tile * depth + t * (self.kv_tile + 1))


#: name -> field for ``--backend-opts attn_<name>=...``
OVERRIDABLE = tuple(f.name for f in fields(FlashParams))


#: Head depths whose Q fits in registers: ``(largest depth, min_blocks, f32_threads, reason)``,
#: the first row whose depth is not exceeded wins.
Q_IN_REGISTERS: tuple[tuple[int, int, int, str], ...] = (
    # 96 registers, 24 KB smem: ~5 blocks/SM co-resident, latency hidden by other blocks.
    (32, 4, 64, "d<=32: whole head per block, Q in registers (96 regs), 4 blocks/SM"),
    (64, 2, 64, "d<=64: whole head per block, Q in registers (~143 regs), 2 blocks/SM"),
    (96, 2, 32, "d<=96: Q in registers still fits (~160 regs); f32 path: 32 rows/block to fit registers"),
    (128, 1, 32, "d<=128: 186 regs with Q in registers and no spills; f32 path: 32 rows/block"),
)


#: Archs where the persistent kernel (``flash=v2``) is the default: where it was written for and
#: is measured (H100/H200); elsewhere ``flash=v2`` or ``attn_persistent=1`` opt in.
PERSISTENT_ARCHS = ("sm_90", "sm_90a")

#: The persistent kernel's shape per head depth: ``(largest depth, kv_tile, stages, blocks/SM,
#: reason)``; the first row whose depth is not exceeded wins. Shared memory per block is
#: 2 Q buffers + 2 stages of (K, V, bias) tiles (``shared_bytes``): at d = 32 48 KiB, so 4 blocks
#: (16 warps) share an H100 SM's 228 KiB, each with the next pair's ~20 KB of loads in flight
#: while it computes one (~80 KB per SM: Little's law asks ~35-45 KB for 3 TB/s at 1.5-2 us).
PERSISTENT_SHAPES: tuple[tuple[int, int, int, int, str], ...] = (
    (32, 64, 2, 4, "d<=32: 48 KiB/block, 4 blocks/SM, next pair prefetched"),
    (64, 64, 2, 3, "d<=64: 72 KiB/block, 3 blocks/SM, next pair prefetched"),
    (96, 64, 2, 2, "d<=96: 96 KiB/block, 2 blocks/SM, next pair prefetched"),
    (128, 32, 2, 2, "d<=128: 32-key tiles (two per pair) so 2 blocks/SM fit, next tile prefetched"),
)


def default_params(
    depth: int, arch: str, seq: int = 64, persistent: int | None = None
) -> tuple[FlashParams, str]:
    """``(params, reason)`` for head depth ``depth`` on ``arch`` ("sm_90", "gfx1100", ...).

    ``persistent``: 1 / 0 asks for the persistent (``flash=v2``) or the one-shot (``flash=v1``)
    kernel's defaults; ``None`` takes the persistent one on ``PERSISTENT_ARCHS`` (f16 only: the
    fp32 SIMT kernel ignores the field)."""
    if persistent is None:
        persistent = int(arch in PERSISTENT_ARCHS)
    if persistent:
        shape = next((r for r in PERSISTENT_SHAPES if depth <= r[0]), None)
        if shape is not None:
            v1, _ = default_params(depth, arch, seq, persistent=0)  # the f32 fields stay v1's
            _, kv, stages, blocks, why = shape
            kv = min(kv, max(16, ((seq + 15) // 16) * 16))
            p = replace(v1, kv_tile=kv, stages=stages, min_blocks=blocks, heads_per_block=1, persistent=1)
            return p, f"persistent (flash=v2) on {arch}: {why}"
        if depth <= 256:  # past 128: v1's shape (Q re-read, 32-key tiles, 2 stages), walked persistently
            v1, why = default_params(depth, arch, seq, persistent=0)
            return replace(v1, persistent=1), f"persistent (flash=v2) on {arch}: {why}"
    # One block per (position, head) at seq 64: 4 warps x 16 rows = the whole query range, one
    # KV tile = all 64 keys, so K/V/G are read exactly once per head and nothing is re-staged.
    warps = max(1, min(4, (seq + 15) // 16))
    kv = 64 if seq >= 64 else max(16, ((seq + 15) // 16) * 16)
    stages = 1 if seq <= kv else 2  # a single tile has nothing to prefetch
    row = next((r for r in Q_IN_REGISTERS if depth <= r[0]), None)
    if row is not None:
        _, blocks, threads, why = row
        p = FlashParams(
            warps=warps, kv_tile=kv, stages=stages, q_regs=1, min_blocks=blocks, f32_threads=threads
        )
    else:
        # Past 128 the O accumulators alone take d/2 registers per lane: free Q's registers and
        # halve the KV tile so the S fragments shrink.
        p = FlashParams(warps=warps, kv_tile=min(kv, 32), stages=2, q_regs=0, min_blocks=1, f32_threads=32)
        why = "d>128: Q re-read from shared memory, KV tile 32, 2 stages"
    if arch.startswith("gfx9"):
        why += "; CDNA: same shape (wave64 handled inside mma_amd.h)"
    return p, why


#: What the kernels accept for each parameter: (lowest, highest, step). flash_attention.hip
#: static_asserts kv_tile % 16 and 1 <= stages <= 8; the SIMT kernel runs f32_threads rows per block
#: (a whole number of warps, at most 256 threads); a kv_tile of 0 would never advance its loop.
PARAM_LIMITS: dict[str, tuple[int, int, int]] = {
    "warps": (1, 16, 1),
    "kv_tile": (16, 256, 16),
    "stages": (1, 8, 1),
    "q_regs": (0, 1, 1),
    "min_blocks": (1, 32, 1),
    "f32_threads": (32, 256, 32),
    "heads_per_block": (1, 64, 1),
    "persistent": (0, 1, 1),
    "interleave": (0, 1, 1),
    "descend": (0, 1, 1),
    "copy_order": (0, 1, 1),
}


def param_problem(name: str, value: object) -> str | None:
    """Why ``value`` is not acceptable for flash parameter ``name`` (``None`` if it is)."""
    if name not in PARAM_LIMITS:
        return f"unknown flash parameter '{name}' (known: {', '.join(OVERRIDABLE)})"
    low, high, step = PARAM_LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{name} must be an integer, not {value!r}"
    if not low <= value <= high or (value - low) % step:
        multiple = f", a multiple of {step}" if step > 1 else ""
        return f"{name}={value} is outside what the kernel accepts ({low}..{high}{multiple})"
    return None


def apply_overrides(params: FlashParams, overrides: dict[str, int]) -> FlashParams:
    """Replace fields named in ``overrides`` (keys are FlashParams field names).

    Raises ``KeyError`` for an unknown name and ``ValueError`` for a value the kernel does not accept.
    """
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise KeyError(", ".join(sorted(unknown)))
    for name, value in overrides.items():
        problem = param_problem(name, value)
        if problem:
            raise ValueError(problem)
    return replace(params, **overrides) if overrides else params


# ---- tuned winners (written by ``lc0py tune``, read by the GPU backend) ---------------------------
ENV_TUNED = "LC0PY_TUNED_DIR"
TUNED_VERSION = 2  # 2: the persistent field (flash=v2); version-1 winners were measured without it


@dataclass(frozen=True)
class TuneKey:
    """What a tuned winner is valid for: the same kernel source on another device, arch, head
    shape or storage type is a different optimisation problem, so each gets its own file."""

    device: str  # DeviceInfo.name, e.g. "NVIDIA H100 80GB HBM3"
    arch: str  # "sm_90", "gfx1100", ...
    heads: int
    depth: int
    dtype: str  # "fp16" | "fp32"

    def filename(self) -> str:
        dev = "".join(ch if ch.isalnum() else "-" for ch in self.device.strip()).strip("-").lower()
        while "--" in dev:
            dev = dev.replace("--", "-")
        return f"{dev or 'device'}_{self.arch}_h{self.heads}xd{self.depth}_{self.dtype}.json"


def tuned_folder() -> Path | None:
    """Where tuned winners live: ``$LC0PY_TUNED_DIR`` (``off`` disables), else ``tuned/`` in the
    lc0py cache root (``lc0py.storage.cache``), beside the kernel cache."""
    return storage_cache.cache_folder("tuned", ENV_TUNED)


def parameter_space_digest() -> str:
    """Digest of what a tuned file's parameters mean: the file version, the parameter names and
    the ranges the kernel accepts. A change to any of them makes every saved winner stale."""
    space = {"version": TUNED_VERSION, "fields": list(OVERRIDABLE), "limits": PARAM_LIMITS}
    return storage_cache.sha256_bytes(json.dumps(space, sort_keys=True).encode())


def _inputs(key: TuneKey) -> str:
    return storage_cache.sha256_bytes(
        json.dumps({"key": asdict(key), "space": parameter_space_digest()}, sort_keys=True).encode()
    )


def save_tuned(key: TuneKey, params: FlashParams, info: dict[str, Any] | None = None) -> Path:
    """Write the winner for ``key`` (atomically, with a verified-entry record: see
    ``storage.cache``). Raises ``OSError`` when the folder is disabled or cannot be written."""
    folder = tuned_folder()
    if folder is None:
        raise OSError(f"{ENV_TUNED} disables the tuned-parameter folder")
    for name, value in asdict(params).items():
        problem = param_problem(name, value)
        if problem:
            raise ValueError(problem)
    doc = {"version": TUNED_VERSION, "key": asdict(key), "params": asdict(params), "info": info or {}}
    path = storage_cache.EntryStore(folder, "tuned").store(
        key.filename(), json.dumps(doc, indent=1, sort_keys=True), _inputs(key)
    )
    if path is None:
        raise OSError(f"cannot write the tuned parameters into {folder}")
    return path


def load_tuned(key: TuneKey) -> tuple[dict[str, int], Path] | None:
    """``(overrides, path)`` of the saved winner for ``key``, or ``None`` if there is none, or it
    fails verification (digest, inputs), is from another version, or holds a parameter the kernel
    does not accept (logged once: a bad file is ignored, never an error at start-up)."""
    folder = tuned_folder()
    if folder is None:
        return None
    entries = storage_cache.EntryStore(folder, "tuned")
    data = entries.load(key.filename(), _inputs(key))
    if data is None:
        return None
    try:
        doc = json.loads(data)
        if doc.get("version") != TUNED_VERSION or doc.get("key") != asdict(key):
            return None
        params = dict(doc["params"].items())
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    for name, value in params.items():
        problem = param_problem(name, value)
        if problem:
            log.warning("tuned parameters %s ignored: %s", entries.path(key.filename()), problem)
            return None
    return (params, entries.path(key.filename())) if params else None
