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

import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any


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
            q_bufs = (self.stages if self.stages > 2 else 2) if self.heads_per_block > 1 else 1
            q = self.rows * pq * 2 * q_bufs
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


# ---- tuned winners (written by ``lc0py tune``, read by the GPU backend) ---------------------------
ENV_TUNED = "LC0PY_TUNED_DIR"
_OFF = ("", "0", "off", "none")
TUNED_VERSION = 1


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
    """Where tuned winners live: ``$LC0PY_TUNED_DIR`` (``off`` disables), else
    ``$XDG_CACHE_HOME/lc0py/tuned`` (``~/.cache/lc0py/tuned``), beside the kernel cache."""
    env = os.environ.get(ENV_TUNED)
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lc0py" / "tuned"


def save_tuned(key: TuneKey, params: FlashParams, info: dict[str, Any] | None = None) -> Path:
    """Write the winner for ``key`` (atomically: readers see the old file or the new one)."""
    folder = tuned_folder()
    if folder is None:
        raise OSError(f"{ENV_TUNED} disables the tuned-parameter folder")
    path = folder / key.filename()
    doc = {"version": TUNED_VERSION, "key": asdict(key), "params": asdict(params), "info": info or {}}
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def load_tuned(key: TuneKey) -> tuple[dict[str, int], Path] | None:
    """``(overrides, path)`` of the saved winner for ``key``, or ``None`` if there is none (or it
    is unreadable / from another version: a stale file is ignored, never an error at start-up)."""
    folder = tuned_folder()
    if folder is None:
        return None
    path = folder / key.filename()
    try:
        doc = json.loads(path.read_text())
        if doc.get("version") != TUNED_VERSION or doc.get("key") != asdict(key):
            return None
        params = {k: int(v) for k, v in doc["params"].items() if k in OVERRIDABLE}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return (params, path) if params else None
