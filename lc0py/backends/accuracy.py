"""How close is close enough: the one error metric and tolerance rule of lc0py.

Every comparison against the numpy float64 reference (``lc0py verify``, the GPU backend's
``verify=on``, the backend and kernel tests, ``attnbench``) uses the relative norm error

    ``||out - ref|| / ||ref||``  (float64; NaN/inf anywhere -> inf, so it never passes)

and passes when it is at most :data:`RTOL_FP32` (1e-4) for fp32 paths or :data:`RTOL_FP16`
(1e-2) for fp16 paths (:func:`tolerance`).

The fused flash-attention kernel is held to a stricter, relative rule, the one flash-attention's
own tests use: its error may be at most twice that of the unfused computation in the same dtype
(the GEMM + softmax fallback) plus a small absolute term, the storage dtype's rounding unit
(:func:`flash_tolerance`). A kernel that is "within 1e-2" but five times worse than plain fp16
arithmetic is a bug this rule catches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

RTOL_FP32 = 1e-4
RTOL_FP16 = 1e-2
#: The FP8 path (``cuda-fp8``) is not held to a fixed relative error: e4m3 keeps 3 mantissa bits
#: (~2.6 % RMS per quantized operand, ~3.7 % per GEMM output), and how far that carries to the
#: outputs depends on the net (a random-weight T82 amplifies it to ~10 % on the policy logits after
#: two layers; numpy emulation, lc0py/backends/gpu/fp8_emulation.py). So, as the flash rule does
#: for fp16, FP8 is held to its own arithmetic: each output within :func:`fp8_tolerance` of the
#: numpy emulation of FP8 on the same positions (twice its error, plus fp16's limit), and every
#: other row (per-layer intermediates, not emulated) within ``RTOL_FP8`` = 1: an error larger than
#: the value itself (no better than zeros), NaN or inf; the outputs carry the real check, this
#: only catches garbage deep in the body (FP8's own error there grows with depth). Whether FP8 is
#: good enough to play is decided by issue 28's targets against the fp16 path over >= 1,000
#: positions (the accuracy table of scripts/device/fp8_check): ``FP8_TOP1_AGREEMENT``,
#: ``FP8_MEAN_ABS_DQ``.
RTOL_FP8 = 1.0
FP8_TOP1_AGREEMENT = 0.98  # top-1 move equal to the fp16 path's, fraction of positions
FP8_MEAN_ABS_DQ = 0.02  # mean |Q_fp8 - Q_fp16|
# unit roundoff of the storage dtype: the absolute slack of the flash rule
FLASH_SLACK_FP16 = float(np.finfo(np.float16).eps)  # 9.8e-4
FLASH_SLACK_FP32 = float(np.finfo(np.float32).eps)  # 1.2e-7


def relative_error(out: Any, ref: Any) -> float:
    """``||out - ref|| / ||ref||`` in float64.

    inf when either holds a NaN/inf; a zero ``ref`` gives 0 if ``out`` is zero too, else inf.
    Different shapes are a programming error (``ValueError``), not a large error.
    """
    a, b = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shape {a.shape} != reference {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    norm = float(np.linalg.norm(b))
    if norm == 0.0:
        return 0.0 if not np.any(a) else float("inf")
    return float(np.linalg.norm(a - b) / norm)


def tolerance(fp16: bool, fp8: bool = False) -> float:
    """The relative-error limit of a path computing in fp16 (``True``) or fp32; ``fp8``: the FP8
    GEMM path (fp16 elsewhere)."""
    if fp8:
        return RTOL_FP8
    return RTOL_FP16 if fp16 else RTOL_FP32


def fp8_tolerance(emulated_error: float) -> float:
    """The limit for an output of the FP8 path: ``2 x`` the numpy FP8 emulation's error on the
    same positions + the fp16 limit (the device stores in fp16 and sums in another order)."""
    return 2.0 * emulated_error + RTOL_FP16


def flash_tolerance(fallback_error: float, fp16: bool) -> float:
    """The limit for the flash kernel: ``2 x`` the same-dtype fallback's error + the dtype's eps."""
    return 2.0 * fallback_error + (FLASH_SLACK_FP16 if fp16 else FLASH_SLACK_FP32)


@dataclass(frozen=True)
class ErrorStats:
    """Max and mean absolute error and the relative error of one output (inf when non-finite)."""

    max_abs: float
    mean_abs: float
    rel: float


def error_stats(out: Any, ref: Any) -> ErrorStats:
    """:class:`ErrorStats` of ``out`` against ``ref`` (same rules as :func:`relative_error`)."""
    rel = relative_error(out, ref)
    a, b = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if not np.isfinite(rel) or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return ErrorStats(float("inf"), float("inf"), float("inf"))
    d = np.abs(a - b)
    return ErrorStats(float(d.max(initial=0.0)), float(d.mean()) if d.size else 0.0, rel)


def output_errors(out: Any, ref: Any, has_moves_left: bool) -> dict[str, float]:
    """Relative errors of a ``NetworkOutput`` against a reference output, per head."""
    errors = {"policy": relative_error(out.policy, ref.policy), "wdl": relative_error(out.wdl, ref.wdl)}
    if has_moves_left:
        errors["moves_left"] = relative_error(out.moves_left, ref.moves_left)
    return errors
